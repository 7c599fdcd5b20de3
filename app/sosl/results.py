"""Shapes search rows into Salesforce's JSON: each record as SOQL shapes it (`attributes`, then
the RETURNING fields), plus what WITH SNIPPET, WITH HIGHLIGHT and WITH METADATA add.

Highlights and snippets mark the search's words (and words sharing their stem) with `<mark>`;
words with wildcards are not highlighted, as in Salesforce. They are drawn from the fields the
record returns, text fields only (not picklists, phones or URLs); a snippet, where no returned
field matched, from the record's other text fields (an article's body matched where its title
did not: what snippets are for), rich text read as its plain text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.metadata.model import FieldType
from app.soql.bound import BoundColumn
from app.soql.execute import ResultRows
from app.soql.results import shape_rows
from app.sosl.ast import WithOptions
from app.sosl.compiler import CompiledSearch, CompiledTarget
from app.sosl.terms import leaves

HIGHLIGHTED_TYPES = frozenset({FieldType.STRING, FieldType.TEXTAREA, FieldType.EMAIL})
DEFAULT_SNIPPET_LENGTH = 300
MAX_HIGHLIGHTED_RECORDS = 25  # per object, as Salesforce documents
_WORD_RE = re.compile(r"[^\W_]+")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


def _stem(word: str) -> str:
    """A light stem, enough to mark `boots` for `boot` and `racing` for `race`."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word.rstrip("e") if len(word) > 3 else word


def highlight_stems(search: CompiledSearch) -> frozenset[str]:
    return frozenset(
        _stem(word)
        for term in leaves(search.bound.term.expr)
        if not term.has_wildcard
        for word in term.words
    )


def mark(text: str, stems: frozenset[str]) -> tuple[str, bool]:
    """`text` with matching words wrapped in <mark>, and whether any was."""
    found = False

    def replace(match: re.Match[str]) -> str:
        nonlocal found
        if _stem(match.group(0)) in stems:
            found = True
            return f"<mark>{match.group(0)}</mark>"
        return match.group(0)

    return _WORD_RE.sub(replace, text), found


def _snippet(text: str, stems: frozenset[str], length: int) -> str | None:
    """About `length` characters of `text` around its first match, matches marked."""
    for match in _WORD_RE.finditer(text):
        if _stem(match.group(0)) in stems:
            start = max(0, match.start() - length // 3)
            excerpt = text[start : start + length]
            prefix = "..." if start > 0 else ""
            suffix = "..." if start + length < len(text) else ""
            return prefix + mark(excerpt, stems)[0] + suffix
    return None


def _text_fields(target: CompiledTarget) -> list[str]:
    """The record's own text fields in RETURNING order."""
    assert target.compiled is not None
    return [
        item.path.field.name
        for item in target.compiled.bound.select
        if isinstance(item, BoundColumn)
        and not item.path.hops
        and item.path.field.type in HIGHLIGHTED_TYPES
    ]


@dataclass(frozen=True)
class _Marking:
    """What WITH SNIPPET and WITH HIGHLIGHT add to one object's records."""

    options: WithOptions
    stems: frozenset[str]
    fields: list[str]  # the record's own text fields, in RETURNING order
    name_field: str | None
    length: int  # of a snippet

    def add_to(self, record: dict[str, Any], others: Mapping[str, str] = {}) -> None:
        """Mark the record; `others`: its text fields not returned, for a snippet none of its
        returned fields give."""
        texts = [
            (name, value) for name in self.fields if isinstance(value := record.get(name), str)
        ]
        highlights: dict[str, str] = {}
        for name, value in texts:
            marked, found = mark(value, self.stems)
            if found and (self.options.highlight or name == self.name_field):
                highlights[name] = marked
        if self.options.snippet:
            body = [value for name, value in texts if name != self.name_field]
            record["snippet"] = {"text": self._first_snippet([*body, *others.values()])}
        if highlights:
            record["highlight"] = highlights

    def _first_snippet(self, texts: Sequence[str]) -> str:
        snippets = (_snippet(text, self.stems, self.length) for text in texts)
        return next((snippet for snippet in snippets if snippet is not None), "")


# Reads the given text fields of records by Id: Id -> field -> value.
TextReader = Callable[[Sequence[str], Sequence[str]], Mapping[str, Mapping[str, Any]]]


def _plain(value: str, rich: bool) -> str:
    """Rich text as the words a reader sees: tags dropped, entities decoded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", value)).split()) if rich else value


def _other_texts(
    target: CompiledTarget, records: Sequence[dict[str, Any]], read: TextReader
) -> dict[str, dict[str, str]]:
    """Record Id -> its text fields the search did not return (but the name), as plain text."""
    sobject = target.target.sobject
    returned = set(_text_fields(target))
    fields = [
        field
        for field in sobject.fields
        if field.type in HIGHLIGHTED_TYPES
        and field.name not in returned
        and field.name != sobject.name_field
    ]
    ids = [str(record["attributes"]["url"]).rsplit("/", 1)[-1] for record in records]
    if not fields or not ids:
        return {}
    values = read([field.name for field in fields], ids)
    return {
        record_id: {
            field.name: _plain(text, field.html_formatted)
            for field in fields
            if isinstance(text := values.get(record_id, {}).get(field.name), str)
        }
        for record_id in ids
    }


def shape_target(
    search: CompiledSearch,
    target: CompiledTarget,
    rows: Sequence[Sequence[Any]],
    base_path: str,
    zone: str,
    read_texts: TextReader | None = None,
) -> list[dict[str, Any]]:
    """An object's records, datetimes of FORMAT() written in `zone`, with the snippets and
    highlights the search asks for (`read_texts` reads the fields a snippet may come from
    beside the returned ones)."""
    assert target.compiled is not None
    # A search returns no child subqueries: its rows are the whole result.
    records = shape_rows(target.compiled, ResultRows(rows), base_path, zone)
    options = search.bound.options
    if not (options.snippet or options.highlight):
        return records
    marking = _Marking(
        options=options,
        stems=highlight_stems(search),
        fields=_text_fields(target),
        name_field=target.target.sobject.name_field,
        length=options.snippet_length or DEFAULT_SNIPPET_LENGTH,
    )
    marked = records[:MAX_HIGHLIGHTED_RECORDS]
    others = (
        _other_texts(target, marked, read_texts)
        if options.snippet and read_texts is not None
        else {}
    )
    for record in marked:
        record_id = str(record["attributes"]["url"]).rsplit("/", 1)[-1]
        marking.add_to(record, others.get(record_id, {}))
    return records


def labels_metadata(search: CompiledSearch) -> dict[str, Any]:
    """WITH METADATA='LABELS': each object's returned fields with their labels."""
    entities = []
    for target in search.targets:
        query = target.target.query
        labels = [
            {
                "name": ".".join([*(hop.name for hop in item.path.hops), item.path.field.name]),
                "value": item.path.field.label,
            }
            for item in query.select
            if isinstance(item, BoundColumn)
        ]
        entities.append({"entityName": query.sobject.name, "entityFieldLabels": labels})
    return {"entityLabelMetadata": entities}
