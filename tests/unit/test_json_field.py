"""JsonField's encoder (pms/db/fields.py): msgspec for documents it writes as the same JSON
values as json.dumps(sort_keys, default=_json_default), json.dumps for anything else; the values
read back the same on both databases."""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from enum import StrEnum

import pytest

from pms.db import fields
from pms.db.fields import JsonField, _json_default
from pms.db.scope import tenant_scope
from pms.models.platform import Job

FIELD = JsonField()


def old(value):
    return json.dumps(value, sort_keys=True, default=_json_default)


class Color(StrEnum):
    RED = "red"


SCALARS = ["x", "Straße – ✓", "\u2028", "", 0, -5, 10**30, True, False, None, 1.5, 1e20, -0.0,
           1e-7, Decimal("1.10"), Decimal("1E+2"), Decimal("-0"), uuid.UUID(int=42),
           date(2026, 1, 2)]


def random_doc(rng, depth=0):
    if depth < 4 and rng.random() < 0.4:
        if rng.random() < 0.6:
            return {rng.choice(["b", "a", "Z", "é", "10", "2", "_"]) + str(rng.randint(0, 3)):
                    random_doc(rng, depth + 1) for _ in range(rng.randint(0, 5))}
        return [random_doc(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return rng.choice(SCALARS)


def test_plain_documents_encode_to_the_same_json_values():
    rng = random.Random(10)
    for _ in range(3000):
        doc = random_doc(rng)
        if doc is None:
            continue
        text = FIELD.db_value(doc)
        assert isinstance(text, str)
        assert json.loads(text) == json.loads(old(doc))
        # sorted keys, as before
        if isinstance(doc, dict):
            assert list(json.loads(text)) == sorted(json.loads(text))


@pytest.mark.parametrize("doc", [
    {"at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)},  # msgspec would write "Z"
    {"at": datetime(2026, 1, 2, 3, 4, 5)},
    {"at": [time(1, 2, tzinfo=timezone(timedelta(hours=2)))]},
    {"n": float("nan")}, {"n": [float("inf")]},
    {"e": Color.RED}, {1: "int key"}, {"t": (1, {"d": datetime(2026, 1, 1, tzinfo=UTC)})},
])
def test_anything_else_is_written_exactly_as_json_dumps_writes_it(doc):
    assert FIELD.db_value(doc) == old(doc)


def test_what_json_dumps_refuses_is_still_refused():
    for doc in ({"s": {1, 2}}, {"b": b"x"}, {"o": object()}):
        with pytest.raises(TypeError):
            FIELD.db_value(doc)


def test_a_deep_document_falls_back(monkeypatch):
    doc: list = []
    for _ in range(5000):
        doc = [doc]
    assert fields._encodes_alike(doc) is False


def test_none_is_null():
    assert FIELD.db_value(None) is None


def test_values_read_back_alike_on_both_databases(database, ctx):
    doc = {"amount": Decimal("12.50"), "id": uuid.UUID(int=7), "day": date(2026, 5, 6),
           "at": datetime(2026, 5, 6, 7, 8, tzinfo=UTC), "nested": [{"b": 1, "a": 2.5}],
           "text": "Zürich ✓", "none": None, "flag": True}
    with tenant_scope(ctx.env_id):
        job = Job.create(kind="test", input=doc)
        got = Job.select().where(Job.id == job.id).get().input
    assert got == {"amount": "12.50", "id": str(uuid.UUID(int=7)), "day": "2026-05-06",
                   "at": "2026-05-06T07:08:00+00:00", "nested": [{"b": 1, "a": 2.5}],
                   "text": "Zürich ✓", "none": None, "flag": True}
