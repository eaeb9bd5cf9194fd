"""The chain-sized bench at a tiny size (3 properties in 2 tenants, 5 days): the bulk loader's
rows are valid (every constraint held on insert) and consistent: the availability search of each
property sells exactly the rooms the loaded reservations leave free; and the alternating rounds
against one hotel run every operation through the real app and report a ratio per operation.
Nothing here passes or fails on a timing."""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from types import SimpleNamespace

import falcon.testing
import msgspec
import pytest

from bench.scenarios import chain
from pms.app import create_app
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
    assert len(loaded) == 3 and len({row.env_id for row in loaded}) == 2
    for env_id, property_id, room_type_id, _ in loaded:
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


@pytest.mark.postgres
def test_the_alternating_rounds_run_every_operation_on_both_instances(pg_db, base_settings):
    from pms.devkeys import mint_token

    loaded = chain.load_chain(_SEEDER, properties=3, tenants=2, rooms=4, days=5, per_night=1)
    one_loaded = chain.load_chain(_SEEDER, properties=1, tenants=1, rooms=4, days=5, per_night=1)
    client = falcon.testing.TestClient(create_app(base_settings, db=pg_db))
    sent: list[tuple[str, int]] = []

    def send(method, path, headers, body):
        status = client.simulate_request(method, path, headers=headers, json=body).status_code
        sent.append((method + " " + path.split("?")[0].rsplit("/", 1)[-1], status))
        return status

    def headers(env_id):
        return {"Authorization": f"Bearer {mint_token(base_settings, env_id=env_id)}",
                "X-Platform-Env-Id": str(env_id)}

    rng = random.Random(1)
    chain_side = chain.Instance("chain", send, chain.sample_hotels(loaded, headers, rng))
    one_side = chain.Instance("one hotel", send, chain.sample_hotels(one_loaded, headers, rng))
    report = chain.alternate(chain_side, one_side, rounds=2, per_op=2, days=5)
    assert list(report) == list(chain.OPERATIONS)
    for row in report.values():
        assert row["chain_ms"] > 0 and row["one_hotel_ms"] > 0 and row["ratio"] > 0
        assert row["passed"] == (row["ratio"] <= chain.GOAL)
    # the warm-up (3 reads of each of 4 hotels), then a round not counted and 2 rounds, on 2
    # instances, of 4 operations, 2 requests each; every one a success
    assert len(sent) == 4 * 3 + 3 * 2 * 4 * 2 and all(status < 300 for _, status in sent)
    assert {name for name, _ in sent} >= {"POST reservations", "POST availability"}
