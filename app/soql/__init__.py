"""SOQL: tokens -> parser -> ast -> binder -> compiler -> results. Knows nothing of HTTP."""
