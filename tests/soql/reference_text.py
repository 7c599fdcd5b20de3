"""The reference of text compared ignoring letter case: what a Salesforce org does, for a user
of an English locale, as plain Python (the engine's own key lives in
app.storage.backends.text_key; the tests hold it, and both back ends, to this one).

Salesforce compares text in the querying user's locale (the SOQL reference, "Comparison
Operators": for a Turkish user `Service` matches `SERVİCE` but not `SERVICE`) and sorts English
text by its upper case. The reference: each character upper-cased by Unicode's simple uppercase
mapping, one character for one; values are equal when their keys are, and sort by their keys,
code point by code point.
"""

from __future__ import annotations


def case_key(text: str) -> str:
    """Text as compared and sorted, letter case ignored. Python's upper() is the full mapping,
    which may give several characters (`ß` -> `SS`, `ᾀ` -> `ἈΙ`); the simple mapping is then
    the titlecase character if it is one (`ᾀ` -> `ᾈ`), else the character itself (`ß`)."""
    return "".join(_simple_upper(char) for char in text)


def _simple_upper(char: str) -> str:
    for mapped in (char.upper(), char.title()):
        if len(mapped) == 1:
            return mapped
    return char
