"""A live apply's planning asks ``table_spec`` of the same mapping and definition step after
step: it is made once for the same two objects, and again for new ones (after a DDL)."""

from __future__ import annotations

from typing import Any

import pytest

from trailgate.replicat import range_apply


def test_a_table_spec_is_made_once_for_the_same_mapping_and_definition(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[Any, Any]] = []

    def table_spec(spec_id: int, mapping: Any, table: Any) -> tuple[Any, ...]:
        made.append((mapping, table))
        return (spec_id, id(mapping), id(table))

    monkeypatch.setattr(range_apply, "table_spec", table_spec)
    monkeypatch.setattr(range_apply, "_SPECS", {})
    mapping, table, remapped, redefined = object(), object(), object(), object()
    first = range_apply._table_spec(mapping, table)  # type: ignore[arg-type]
    assert range_apply._table_spec(mapping, table) == first  # type: ignore[arg-type]
    assert made == [(mapping, table)]
    range_apply._table_spec(remapped, table)  # type: ignore[arg-type]
    range_apply._table_spec(mapping, redefined)  # type: ignore[arg-type]
    assert made[1:] == [(remapped, table), (mapping, redefined)]
    monkeypatch.setattr(range_apply, "_SPECS_MAX", 3)
    range_apply._table_spec(remapped, redefined)  # type: ignore[arg-type]
    assert len(range_apply._SPECS) == 1  # bounded: cleared when full
