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
    from pms.services import catalog

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
    return out


def run(bench: Any) -> list[Any]:
    from bench.lib import Measurement, Result

    started = time.perf_counter()
    loaded = load_chain(bench)
    seconds = time.perf_counter() - started
    return [Result("chain load (WIP, not a cost measurement)",
                   Measurement(rate=len(loaded) / seconds, unit="properties/s",
                               extra={"load_s": round(seconds, 1)}))]
