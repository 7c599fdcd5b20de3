"""SOSL: the search term language, statement parser, binder, index query compiler and results."""
