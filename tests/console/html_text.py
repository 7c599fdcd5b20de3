"""Reading console pages in tests: the text of a table's cells and the links of a page, by the
standard library's HTML parser."""

from __future__ import annotations

from html.parser import HTMLParser


class _Tables(HTMLParser):
    """The body rows of the element marked data-testid=`testid`, each as its cells' text."""

    def __init__(self, testid: str) -> None:
        super().__init__()
        self.testid = testid
        self.depth = 0  # elements open inside the marked one (0: outside it)
        self.in_head = False
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth == 0:
            if dict(attrs).get("data-testid") == self.testid:
                self.depth = 1
            return
        if tag not in VOID:
            self.depth += 1
        if tag == "thead":
            self.in_head = True
        elif tag == "tr" and not self.in_head:
            self.rows.append([])
        elif tag in {"td", "th"} and not self.in_head and self.rows:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if self.depth == 0:
            return
        self.depth -= 1
        if tag == "thead":
            self.in_head = False
        elif tag in {"td", "th"} and self.cell is not None:
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


VOID = frozenset({"br", "img", "input", "meta", "link", "hr"})


def table_rows(html: str, testid: str) -> list[list[str]]:
    parser = _Tables(testid)
    parser.feed(html)
    return parser.rows


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.links.append(href)


def links(html: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    return parser.links
