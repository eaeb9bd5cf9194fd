"""Availability search: `POST /v1/properties/{id}/availability` for 30 nights over a property with
10 room types and 5 public rate plans (every offer priced night by night, 50 offers x 30 nights
per response), 32 concurrent clients, beside pgbench tpcb-like measured in the same run.

Goals: one client alone p50 at most 10 ms (the service's own latency; on a 2-core box
32 concurrent clients mostly measure queueing), and 32 clients at least 4x the 76 req/s of
the search's first measured day (304 req/s). Statements and round trips per search come from the in-process
counting pass (bench/statements.py).
"""

from __future__ import annotations

import json
import uuid
from datetime import date, timedelta

import msgspec

from bench.lib import Bench, Result, seed_room_types
from bench.statements import Call

DESCRIPTION = "POST availability search (30 nights x 10 room types x 5 rate plans) vs pgbench tpcb-like"
ORDER = 40
ROOM_TYPES = 10
ROOMS_PER_TYPE = 3
RATE_PLANS = 5
NIGHTS = 30
GOAL_P50_MS = 10.0  # one client
GOAL_CROWD_RATIO = 0.15  # 32 clients: of pgbench tpcb-like in the same run


def seed_hotel(bench: Bench, env_id: uuid.UUID) -> tuple[str, object]:
    """A property with 10 room types x 3 rooms and 5 rate plans priced for 40 days."""
    from pms.clock import local_today
    from pms.schemas import catalog as cs
    from pms.schemas.rates import RatesIn
    from pms.services.catalog import catalog
    from pms.services.inventory import inventory
    from pms.services.rates import rates

    ctx = bench.seed_ctx(env_id)
    prop = catalog.create_property(ctx, msgspec.convert({
        "propertyCode": "BENCHAV", "name": "Availability Bench Hotel",
        "timezone": "Europe/Berlin", "currencyCode": "EUR"}, cs.PropertyIn))
    today = local_today(ctx.now, prop.timezone)
    start, end = today + timedelta(days=1), today + timedelta(days=40)
    type_ids = []
    for rt in seed_room_types(ctx, prop.id, ROOM_TYPES, ROOMS_PER_TYPE):
        type_ids.append(str(rt.id))
        inventory.ensure_inventory(ctx, prop.id, rt.id, start, end)
    for p in range(RATE_PLANS):
        plan = catalog.create_child(ctx, catalog.RATE_PLAN, prop.id, msgspec.convert(
            {"code": f"RP{p}", "name": f"Plan {p}"}, cs.RatePlanIn))
        rates.set_rates(ctx, prop.id, plan.id, msgspec.convert({"rates": [
            {"room_type_id": rt, "from_date": start.isoformat(), "to_date": end.isoformat(),
             "amount": f"{100 + 10 * p}.00"} for rt in type_ids]}, RatesIn))
    return str(prop.id), start


def search_body(arrival: date) -> str:
    """The search of every scenario: NIGHTS nights from `arrival`, 2 adults."""
    return json.dumps({"arrival_date": arrival.isoformat(),
                       "departure_date": (arrival + timedelta(days=NIGHTS)).isoformat(),
                       "adults": 2})


def run(bench: Bench) -> list[Result]:
    bench.baseline("pgbench_tpcb_like")
    env_id = uuid.uuid4()
    property_id, arrival = seed_hotel(bench, env_id)
    app = bench.app()
    headers = bench.headers(env_id)
    body = search_body(arrival)
    path = f"/v1/properties/{property_id}/availability"
    bench.log(f"POST {path} (30 nights x 10 types x 5 plans), {bench.connections} clients ...")
    crowd = bench.wrk(app.base_url, method="POST", path=path, headers=headers, body_template=body)
    bench.log("... and one client alone")
    alone = bench.wrk(app.base_url, method="POST", path=path, headers=headers, body_template=body,
                      connections=1)
    bench.log("statements and round trips of a search (in-process pass) ...")
    search = Call("POST", path, body, headers)
    counts = bench.count([search] * 8, warmup=[search] * 2).extra()
    crowd.extra.update(counts)
    alone.extra.update(counts)
    return [
        Result(f"POST availability search, {bench.connections} clients", crowd,
               baseline="pgbench_tpcb_like", goal=GOAL_CROWD_RATIO,
               note="2-core box: latency with 32 clients is mostly queueing; see the 1-client line"),
        Result("POST availability search, 1 client", alone,
               goal_text=f"p50<={GOAL_P50_MS:g}ms",
               passed=alone.p50_ms is not None and alone.p50_ms <= GOAL_P50_MS),
    ]
