"""Reservation create: `POST /v1/properties/{id}/reservations` for 2 nights in a random room type
(of 10) on a random arrival date in the next year, with a fresh Idempotency-Key per request,
32 concurrent clients, against pgbench tpcb-like measured in the same run (goal, 25% or
more of its transactions per second; 35% the aim). The calendar is the one room type creation
makes (PMS_CALENDAR_HORIZON_DAYS, 550 days: the whole year booked here); before the write path's
calendar horizon it started empty and a night's first booking made its row (4.24 round trips
per booking instead of 4). Each request prices the stay, locks and updates the nights'
inventory rows and writes the reservation, its outbox row and its audit row in one transaction.
"""

from __future__ import annotations

import json
import random
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path

import msgspec

from bench import lib
from bench.lib import Bench, Result
from bench.statements import Call, unique_calls

DESCRIPTION = "POST reservation (2 nights, random room type, fresh Idempotency-Key) vs pgbench tpcb-like"
ORDER = 30
ROOM_TYPES = 10
# 60 rooms a type: 36,000 room nights of 2-night stays at random. With 10, a run of 3 x 5 s at
# about 1,000 bookings a second (this box on a good day) sold whole nights out and answered
# the cheaper 409 for a part of them (2,438 of about 16,000 in one run), which flattered the rate.
ROOMS_PER_TYPE = 60
DAYS = 360


def seed_hotel(bench: Bench, env_id: uuid.UUID, rooms_per_type: int | None = None
               ) -> tuple[str, str, list[str], object]:
    """A property with 10 room types x 10 rooms (or `rooms_per_type`) and one rate plan priced
    for a year."""
    from pms.schemas import catalog as cs
    from pms.schemas.rates import RatesIn
    from pms.services.catalog import catalog
    from pms.services.rates import rates
    from pms.services.reservations.reservations import business_date

    ctx = bench.seed_ctx(env_id)
    prop = catalog.create_property(ctx, msgspec.convert({
        "propertyCode": "BENCHRES", "name": "Reservation Bench Hotel",
        "timezone": "Europe/Berlin", "currencyCode": "EUR"}, cs.PropertyIn))
    plan = catalog.create_child(ctx, catalog.RATE_PLAN, prop.id, msgspec.convert(
        {"code": "BAR", "name": "Best available"}, cs.RatePlanIn))
    today = business_date(prop, ctx.now)
    type_ids = [str(rt.id) for rt in
                lib.seed_room_types(ctx, prop.id, ROOM_TYPES, rooms_per_type or ROOMS_PER_TYPE)]
    rates.set_rates(ctx, prop.id, plan.id, msgspec.convert({"rates": [
        {"room_type_id": rt, "from_date": today.isoformat(),
         "to_date": (today + timedelta(days=DAYS + 5)).isoformat(), "amount": "120.00"}
        for rt in type_ids]}, RatesIn))
    return str(prop.id), str(plan.id), type_ids, today


def _driver(type_ids: list[str], today: object) -> Path:
    """A wrk script that reuses the harness driver and picks a room type and dates per request."""
    stays = [((today + timedelta(days=d)).isoformat(), (today + timedelta(days=d + 2)).isoformat())
             for d in range(1, DAYS)]
    lua = "\n".join([
        f"dofile({json.dumps(str(lib.WRK_DRIVER))})",
        "local room_types = {" + ",".join(json.dumps(t) for t in type_ids) + "}",
        "local arrivals = {" + ",".join(json.dumps(a) for a, _ in stays) + "}",
        "local departures = {" + ",".join(json.dumps(d) for _, d in stays) + "}",
        "local base_request = request",
        "local template = nil",
        "function request()",
        "  if template == nil then template = body_template; math.randomseed(os.time() + tid) end",
        "  local i = math.random(#arrivals)",
        "  local b = string.gsub(template, '{{rt}}', room_types[math.random(#room_types)])",
        "  b = string.gsub(b, '{{arr}}', arrivals[i])",
        "  body_template = string.gsub(b, '{{dep}}', departures[i])",
        "  return base_request()",
        "end",
    ])
    path = Path(tempfile.mkdtemp(prefix="pms-bench-")) / "reservations.lua"
    path.write_text(lua + "\n")
    return path


BODY = {"room_type_id": "{{rt}}", "rate_plan_id": "{{rp}}", "arrival_date": "{{arr}}",
        "departure_date": "{{dep}}", "adults": 2,
        "guest": {"first_name": "Ada", "last_name": "Bench{{n}}"}}


def body_template(plan_id: str) -> str:
    """The wrk body: `{{rt}}`, `{{arr}}`, `{{dep}}` filled by the driver, `{{n}}` unique."""
    return json.dumps(BODY).replace("{{rp}}", plan_id)


def booking_calls(hotel_id: str, plan_id: str, type_ids: list[str], today: object,
                  headers: dict[str, str], n: int, *, seed: int = 10) -> list[Call]:
    """`n` bookings shaped as the wrk driver shapes them (a random room type, a random 2-night
    stay in the next year, a unique guest and Idempotency-Key), for the counting pass."""
    pick = random.Random(seed)
    template = body_template(plan_id)

    def make(token: str) -> Call:
        arrival = today + timedelta(days=pick.randrange(1, DAYS))  # type: ignore[operator]
        body = (template.replace("{{rt}}", pick.choice(type_ids))
                .replace("{{arr}}", arrival.isoformat())
                .replace("{{dep}}", (arrival + timedelta(days=2)).isoformat())
                .replace("{{n}}", token))
        return Call("POST", f"/v1/properties/{hotel_id}/reservations", body, headers)

    return unique_calls(make, n, idempotency=True)


def make_calendar(bench: Bench, env_id: uuid.UUID, hotel_id: str, type_ids: list[str],
                  today: object) -> None:
    """The hotel's inventory rows for the whole bookable year, made ahead (steady state)."""
    from pms.services.inventory import inventory

    ctx = bench.seed_ctx(env_id)
    for rt in type_ids:
        inventory.ensure_inventory(ctx, uuid.UUID(hotel_id), uuid.UUID(rt), today,
                                   today + timedelta(days=DAYS + 3))  # type: ignore[operator]


def run(bench: Bench) -> list[Result]:
    bench.baseline("pgbench_tpcb_like")
    env_id = uuid.uuid4()
    property_id, plan_id, type_ids, today = seed_hotel(bench, env_id)
    app = bench.app()
    headers = bench.headers(env_id)
    body = body_template(plan_id)
    driver = _driver(type_ids, today)
    original = lib.WRK_DRIVER
    lib.WRK_DRIVER = driver  # this scenario's script wraps the harness driver
    try:
        bench.log("POST /v1/properties/{id}/reservations ...")
        create = bench.wrk_vs_tpcb(app.base_url, method="POST",
                                   path=f"/v1/properties/{property_id}/reservations",
                                   headers=headers, body_template=body, unique=True)
    finally:
        lib.WRK_DRIVER = original
    random.seed()
    bench.log("statements and round trips of a booking (in-process pass) ...")
    calls = booking_calls(property_id, plan_id, type_ids, today, headers, 20)
    create.extra.update(bench.count(calls[3:], warmup=calls[:3]).extra())
    return [Result("POST /v1/properties/{id}/reservations (2 nights)", create,
                   baseline="pgbench_tpcb_like", goal=0.25, note=lib.TPCB_NOTE)]
