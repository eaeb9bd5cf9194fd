"""The chain-sized bench's bulk loader at a tiny size (3 properties in 2 tenants, 5 days): the
rows it writes are valid (every constraint held on insert) and consistent: the availability
search of each property sells exactly the rooms the loaded reservations leave free. Nothing here
passes or fails on a timing."""

from __future__ import annotations

import uuid
from datetime import timedelta
from types import SimpleNamespace

import msgspec
import pytest

from bench.scenarios import chain
from pms.context import system_ctx
from pms.db.database import db
from pms.db.scope import tenant_scope
from pms.schemas import availability as s
from pms.services.inventory.availability import search_property

_SEEDER = SimpleNamespace(seed_ctx=lambda env_id=None: system_ctx(env_id or uuid.uuid4(),
                                                                  sub="bench-test"))


@pytest.mark.postgres
def test_the_chain_loader_writes_consistent_data(pg_db):
    loaded = chain.load_chain(_SEEDER, properties=3, tenants=2, rooms=4, days=5, per_night=3)
    assert len(loaded) == 3 and len({env for env, _, _ in loaded}) == 2
    for env_id, property_id, room_type_id in loaded:
        with tenant_scope(env_id):
            booked = db.execute_sql(
                "SELECT count(*) FROM reservation WHERE property_id = %s AND status = 'CONFIRMED'",
                (property_id,)).fetchone()[0]
            sold = db.execute_sql(
                "SELECT sum(sold) FROM inventory_day WHERE room_type_id = %s",
                (room_type_id,)).fetchone()[0]
        assert booked == sold == 5 * 3
        ctx = system_ctx(env_id, sub="bench-test")
        for d in range(5):
            arrival = chain.START + timedelta(days=d)
            out = search_property(ctx, property_id, msgspec.convert(
                {"arrival_date": arrival.isoformat(),
                 "departure_date": (arrival + timedelta(days=1)).isoformat()}, s.AvailabilityIn))
            assert [(rt.room_type_id, rt.available) for rt in out.room_types] == [(room_type_id, 1)]
