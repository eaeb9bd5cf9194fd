"""Chain-sized data (issue 36): a stated fraction of a chain loaded in bulk. WORK IN PROGRESS.

`load_chain` builds TENANTS envs with PROPERTIES properties of ROOMS rooms in all, one room type
and one rate plan each (through the services: the catalog rows carry defaults the services own),
then the rooms, DAYS nights of inventory_day and PER_NIGHT one-night CONFIRMED reservations per
property and night straight into the tables with INSERT ... SELECT generate_series (inventory_day
.sold equals the reservations of that night, physical equals the rooms). The measuring part
(alternating rounds against a one-hotel instance, night audit `--all` at 100/300/1,000
properties) is NOT built yet: `run` only loads and reports the load time."""

from __future__ import annotations

import time
import uuid
from datetime import date
from typing import Any

DESCRIPTION = "chain-sized data: 1,000 properties x 60 rooms in 10 tenants, 90 days (load only, WIP)"
DEFAULT = False
ORDER = 90
PROPERTIES, TENANTS, ROOMS, DAYS, PER_NIGHT = 1000, 10, 60, 90, 20
START = date(2031, 6, 1)


def load_chain(bench: Any, *, properties: int = PROPERTIES, tenants: int = TENANTS,
               rooms: int = ROOMS, days: int = DAYS, per_night: int = PER_NIGHT,
               start: date = START) -> list[tuple[uuid.UUID, uuid.UUID, uuid.UUID]]:
    """Load the chain; returns (env_id, property_id, room_type_id) per property."""
    import msgspec

    from pms.db.database import db
    from pms.db.scope import tenant_scope
    from pms.schemas import catalog as s
    from pms.services.catalog import catalog

    assert per_night <= rooms
    out = []
    for t in range(tenants):
        env_id = uuid.uuid4()
        ctx = bench.seed_ctx(env_id)
        mine = [p for p in range(properties) if p % tenants == t]
        for p in mine:
            prop = catalog.create_property(ctx, msgspec.convert({
                "propertyCode": f"CH{p:05d}", "timezone": "UTC", "currencyCode": "EUR"},
                s.PropertyIn))
            rt = catalog.create_child(ctx, catalog.ROOM_TYPE, prop.id, msgspec.convert(
                {"code": "STD", "name": "Standard"}, s.RoomTypeIn))
            plan = catalog.create_child(ctx, catalog.RATE_PLAN, prop.id, msgspec.convert(
                {"code": "BAR", "name": "Best available"}, s.RatePlanIn))
            out.append((env_id, prop.id, rt.id))
            with tenant_scope(env_id):
                db.connect(reuse_if_open=True)
                with db.atomic():
                    args = {"env": env_id, "p": prop.id, "rt": rt.id, "plan": plan.id, "code": f"{p:05d}",
                            "rooms": rooms, "days": days, "per": per_night, "start": start}
                    db.execute_sql(
                        "INSERT INTO room (env_id, id, property_id, room_type_id, room_number,"
                        " status, hk_status, created_at, updated_at, version)"
                        " SELECT %(env)s, gen_random_uuid(), %(p)s, %(rt)s, lpad(i::text, 5, '0'),"
                        " 'VACANT', 'CLEAN', now(), now(), 0 FROM generate_series(1, %(rooms)s) i",
                        args)
                    db.execute_sql(
                        "INSERT INTO inventory_day (env_id, id, property_id, room_type_id, date,"
                        " physical, ooo, oos, sold, created_at, updated_at)"
                        " SELECT %(env)s, gen_random_uuid(), %(p)s, %(rt)s, %(start)s::date + d,"
                        " %(rooms)s, 0, 0, %(per)s, now(), now()"
                        " FROM generate_series(0, %(days)s - 1) d", args)
                    db.execute_sql(
                        "INSERT INTO reservation (env_id, id, property_id, room_type_id,"
                        " rate_plan_id, confirmation_number, status, arrival_date, departure_date,"
                        " adults, children, source, channel, currency, room_total, packages_total,"
                        " discount_total, total_amount, nightly_prices, guest_last_name,"
                        " guest_last_name_normalized,"
                        " created_at, updated_at, version)"
                        " SELECT %(env)s, gen_random_uuid(), %(p)s, %(rt)s, %(plan)s,"
                        " format('C%%s-%%s-%%s', %(code)s, d, i), 'CONFIRMED',"
                        " %(start)s::date + d, %(start)s::date + d + 1, 2, 0, 'DIRECT', 'WEB',"
                        " 'EUR', 120, 0, 0, 120,"
                        " jsonb_build_array(jsonb_build_object('date', (%(start)s::date + d)::text,"
                        " 'amount', '120.00')), 'Guest' || i, 'guest' || i, now(), now(), 0"
                        " FROM generate_series(0, %(days)s - 1) d, generate_series(1, %(per)s) i",
                        args)
                    db.execute_sql("UPDATE property SET business_date = %(start)s WHERE id = %(p)s",
                                   args)
    return out


def audit_all(bench: Any, loaded: list[tuple[uuid.UUID, uuid.UUID, uuid.UUID]],
              marks: tuple[int, ...]) -> dict[int, float]:
    """The night audit of every loaded property, one after another as `pms-cli eod --all` runs
    them (env by env); the cumulative seconds after the first n properties for n in `marks`."""
    from pms.context import system_ctx
    from pms.platform.ledger import EmbeddedLedger
    from pms.services.night_audit.end_of_day import Hooks, run_night_audit

    cumulative, spent = {}, 0.0
    for n, (env_id, property_id, _) in enumerate(loaded, 1):
        ctx = system_ctx(env_id, sub="bench-seed")
        started = time.perf_counter()
        out = run_night_audit(ctx, property_id, hooks=Hooks(ledger=EmbeddedLedger()))
        spent += time.perf_counter() - started
        if out.status != "DONE":
            raise RuntimeError(f"night audit failed: {out.error}")
        if n in marks:
            cumulative[n] = spent
            bench.log(f"chain: night audit of {n} properties: {spent:.1f} s")
    return cumulative


def run(bench: Any) -> list[Any]:
    import os

    from bench.lib import Measurement, Result

    properties = int(os.environ.get("PMS_BENCH_CHAIN_PROPERTIES", PROPERTIES))
    per_night = int(os.environ.get("PMS_BENCH_CHAIN_PER_NIGHT", PER_NIGHT))
    bench.seed_ctx()
    bench.log(f"chain: loading {properties} properties x {ROOMS} rooms in {TENANTS} tenants, "
              f"{DAYS} days, {per_night} arrivals per property and night ...")
    started = time.perf_counter()
    loaded = load_chain(bench, properties=properties, per_night=per_night)
    load_s = time.perf_counter() - started
    bench.analyze()
    marks = tuple(n for n in (properties // 10, properties * 3 // 10, properties) if n)
    # env by env, as --all runs them
    loaded.sort(key=lambda row: str(row[0]))
    cumulative = audit_all(bench, loaded, marks)
    results = [Result("chain load", Measurement(rate=properties / load_s, unit="properties/s",
                                                extra={"load_s": round(load_s, 1)}))]
    for n, seconds in cumulative.items():
        results.append(Result(f"night audit of {n} properties (chain loaded)",
                              Measurement(rate=n / seconds, unit="properties/s",
                                          extra={"seconds": round(seconds, 2),
                                                 "ms_per_property": round(1000 * seconds / n, 1)}),
                              note=f"{1000 * seconds / n:.1f} ms per property"))
    return results
