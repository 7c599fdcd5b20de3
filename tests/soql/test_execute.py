"""The execute step's result rows: a window keeps its rows' children only, down every level, and
consecutive windows join back into the whole (what a cursor stores and reads per batch)."""

from __future__ import annotations

from app.soql.execute import Children, ResultRows, joined

# Parents p1..p3; children c1..c4 link to their parent at index 1; grandchildren g1..g2 link
# to their child at index 1.
GRANDCHILDREN = ResultRows([("g1", "c1"), ("g2", "c4")])
CHILDREN = ResultRows(
    [("c1", "p1"), ("c2", "p1"), ("c3", "p2"), ("c4", "p3")],
    (Children(slot=2, link_index=1, rows=GRANDCHILDREN),),
)
RESULT = ResultRows([("p1",), ("p2",), ("p3",)], (Children(slot=1, link_index=1, rows=CHILDREN),))


def test_a_window_keeps_the_children_of_its_rows_only() -> None:
    window = RESULT.window(1, 3)
    assert window.rows == [("p2",), ("p3",)]
    (children,) = window.children
    assert (children.slot, children.link_index) == (1, 1)
    assert children.rows.rows == [("c3", "p2"), ("c4", "p3")]
    assert children.rows.children[0].rows.rows == [("g2", "c4")]


def test_windows_join_back_into_the_whole() -> None:
    assert joined([RESULT.window(0, 1), RESULT.window(1, 2), RESULT.window(2, 3)]) == RESULT


def test_a_window_past_the_end_is_empty_with_empty_children() -> None:
    window = RESULT.window(5, 7)
    assert window.rows == []
    assert window.children[0].rows.rows == []
    assert len(window) == 0


def test_rows_without_children_window_as_plain_slices() -> None:
    plain = ResultRows([("a",), ("b",), ("c",)])
    assert plain.window(1, 2) == ResultRows([("b",)])
    assert joined([plain.window(0, 2), plain.window(2, 3)]) == plain
