"""The floor's pages are Salesforce's: 2,000 records a page, a locator naming the next record,
children nested under their parents (so the benchmarks divide by a fair floor)."""

from __future__ import annotations

from app.soql.execute import Children, ResultRows
from bench.floor import API, PAGE_SIZE, Shape, page, records


def test_a_full_page_names_the_next_record_and_the_last_is_done() -> None:
    rows = [{"Id": str(n)} for n in range(PAGE_SIZE)]
    first = page(rows, 0, PAGE_SIZE * 2 + 1, "01g1")
    assert first["totalSize"] == PAGE_SIZE * 2 + 1
    assert first["done"] is False
    assert first["nextRecordsUrl"] == f"{API}/query/01g1-{PAGE_SIZE}"
    last = page(rows[:1], PAGE_SIZE * 2, PAGE_SIZE * 2 + 1, "01g1")
    assert last["done"] is True
    assert "nextRecordsUrl" not in last
    assert page([], 0, 0, None) == {"totalSize": 0, "done": True, "records": []}


def test_records_carry_attributes_and_their_children() -> None:
    child = Shape("Case", ("Id", "AccountId", "Subject"), False, ())
    shape = Shape("Account", ("Id", "Name"), False, ((2, 1, "Cases", child),))
    cases = ResultRows([("500A", "001A", "Broken"), ("500B", "001A", "Late")])
    result = ResultRows([("001A", "Acme"), ("001B", "Zenith")], (Children(2, 1, cases),))
    acme, zenith = records(shape, result)
    assert acme["attributes"] == {"type": "Account", "url": f"{API}/sobjects/Account/001A"}
    assert acme["Name"] == "Acme"
    assert [case["Subject"] for case in acme["Cases"]["records"]] == ["Broken", "Late"]
    assert acme["Cases"]["totalSize"] == 2
    assert zenith["Cases"] is None
    aggregate = Shape("Case", ("Status", "n"), True, ())
    (group,) = records(aggregate, ResultRows([("New", 3)]))
    assert group == {"attributes": {"type": "AggregateResult"}, "Status": "New", "n": 3}
