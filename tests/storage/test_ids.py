from __future__ import annotations

import pytest

from app.storage.ids import make_id, normalize_id, to_18


@pytest.mark.parametrize(
    ("id15", "id18"),
    [("001D000000IRFma", "001D000000IRFmaIAH"), ("01gD0000002HU6K", "01gD0000002HU6KIAW")],
)
def test_checksum_matches_salesforce_examples(id15: str, id18: str) -> None:
    assert to_18(id15) == id18
    assert normalize_id(id15) == id18
    assert normalize_id(id18) == id18


def test_18_character_ids_are_read_in_any_case() -> None:
    assert normalize_id("001d000000irfmaiah") == "001D000000IRFmaIAH"
    assert normalize_id("001D000000IRFMAIAH") == "001D000000IRFmaIAH"


@pytest.mark.parametrize(
    "value", ["", "xyz", "001D000000IRFm", "001D000000IRFma!", "001D000000IRFmaIA", 5, None]
)
def test_malformed_ids_are_rejected(value: object) -> None:
    assert normalize_id(value) is None


def test_an_impossible_checksum_is_rejected() -> None:
    # "5" in the checksum marks letters at positions where the id has digits.
    assert normalize_id("001000000000000555") is None


def test_make_id_builds_valid_ids_with_the_prefix() -> None:
    record_id = make_id("500", 977)
    assert len(record_id) == 18
    assert record_id.startswith("500Lf0")
    assert normalize_id(record_id[:15]) == record_id
    assert make_id("500", 1) != make_id("500", 2)
