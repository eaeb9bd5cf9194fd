"""The booking's per-request helpers (pms/services/reservations/reservations.py and
booking_refs.py, pms/schemas/reservations.py):
the generated confirmation number, the reference rows built from a tuple, and the response
shape reused for the same data."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from pms.db.base import _read_passing
from pms.models import Property, RatePlan, Reservation, RoomType
from pms.schemas import reservations as s
from pms.services.reservations.reservations import CONFIRMATION_ALPHABET, new_confirmation_number


def test_confirmation_numbers_are_ten_symbols_of_the_alphabet_all_used_evenly():
    numbers = [new_confirmation_number() for _ in range(4000)]
    assert all(len(n) == 10 and set(n) <= set(CONFIRMATION_ALPHABET) for n in numbers)
    assert len(set(numbers)) == len(numbers)
    counts = Counter("".join(numbers))
    assert set(counts) == set(CONFIRMATION_ALPHABET)
    expected = 40000 / 32
    assert all(abs(c - expected) < 0.2 * expected for c in counts.values())  # ~9 sigma


def _row_values(model):
    """A row as the database drivers return it (psycopg2: str for UUIDs; datetimes aware)."""
    kinds = {
        "UUIDField": str(uuid.uuid4()), "ForeignKeyField": str(uuid.uuid4()),
        "UtcDateTimeField": datetime(2026, 1, 2, 3, tzinfo=UTC), "IntegerField": 3,
        "CharField": "EUR", "TextField": "text", "BooleanField": True,
        "JsonField": {"a": [1]}, "DateField": date(2026, 1, 2),
    }
    return tuple(kinds[type(f).__name__] for f in model._meta.sorted_fields)


@pytest.mark.parametrize("model", [Property, RoomType, RatePlan])
def test_reference_rows_hold_what_python_value_reads(model):
    fields = model._meta.sorted_fields
    for values in (_row_values(model), (None,) * len(fields),
                   tuple(uuid.UUID(v) if isinstance(v, str) and len(v) == 36 else v
                         for v in _row_values(model))):
        obj = model.from_columns(values)
        assert obj.__data__ == {f.name: None if v is None else f.python_value(v)
                                for f, v in zip(fields, values, strict=True)}
        assert obj._dirty == set() and obj.__rel__ == {}
        assert type(obj.__data__["id"]) is (uuid.UUID if values[0] is not None else type(None))


def test_a_reader_converts_what_python_value_converts():
    readers = {f.name: _read_passing(f) for f in Property._meta.sorted_fields}
    assert str not in readers["id"] and str not in readers["version"]
    assert datetime not in readers["business_date"]  # DateField reads a datetime's date
    assert readers["created_at"] == frozenset()  # UtcDateTimeField: always converted


def _reservation(**over):
    row = Reservation(id=uuid.uuid4(), env_id=uuid.uuid4(), property=uuid.uuid4(),
                      room_type=uuid.uuid4(), rate_plan=uuid.uuid4(), confirmation_number="ABC",
                      status="CONFIRMED", arrival_date=date(2026, 1, 1),
                      departure_date=date(2026, 1, 3), adults=2, children=0, currency="EUR",
                      room_total=Decimal("200.00"), total_amount=Decimal("200.00"),
                      nightly_prices=[{"date": "2026-01-01", "amount": "100.00"},
                                      {"date": "2026-01-02", "amount": "100.00"}],
                      guest_last_name="Lovelace", version=1,
                      created_at=datetime(2026, 1, 1, tzinfo=UTC),
                      updated_at=datetime(2026, 1, 1, tzinfo=UTC))
    for k, v in over.items():
        setattr(row, k, v)
    return row


def test_the_response_shape_is_reused_for_the_same_data_only():
    row = _reservation()
    first = s.reservation_out(row)
    assert s.reservation_out(row) is first  # the event's object serves the response
    assert s.reservation_out(_reservation()) is not first  # another row: its own
    row.status = "CANCELLED"
    changed = s.reservation_out(row)
    assert changed is not first and changed.status == "CANCELLED"
    row.nightly_prices.append({"date": "2026-01-03", "amount": "1.00"})  # in place
    grown = s.reservation_out(row)
    assert grown is not changed and len(grown.nightly_prices) == 3
    row.__data__["notes"] = "written directly"
    assert s.reservation_out(row).notes == "written directly"


def test_a_reused_shape_equals_a_fresh_one():
    row = _reservation()
    s.reservation_out(row)
    assert s.reservation_out(row) == s._reservation_out(row, None)
