"""English stop words: common words the search index does not keep, so a search ignores them.

The list is PostgreSQL's (and Snowball's) `english.stop`, so that a search ignores the same
words on SQLite, whose index keeps every word, as on PostgreSQL, whose index drops them.
"""

from __future__ import annotations

_WORDS = """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will
    just don should now
"""
STOP_WORDS = frozenset(_WORDS.split())
