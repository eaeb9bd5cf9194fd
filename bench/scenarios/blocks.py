"""Room blocks: a rooming list of 500 picked up from a DEFINITE block, then the same
500 reservations moved by a day (bulk date change) and cancelled (bulk cancel), each job's time
per reservation next to a single booking's (all in-process through the services, same database),
and the availability search (one client, p50, goal <= 10 ms) with 50 active blocks on the
property next to the same search without them. Run it with `python -m bench.run blocks`."""

from __future__ import annotations

import statistics
import time
import uuid
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import msgspec

DESCRIPTION = ("room blocks: rooming list of 500, bulk date change and bulk cancel of them "
               "(s/reservation vs a single booking); search p50 with 50 active blocks")
ORDER = 85
ROOMS = 600
LIST_ROWS = 500
SINGLE_BOOKINGS = 40
ACTIVE_BLOCKS = 50
GOAL_P50_MS = 10.0


def _hotel(ctx: Any) -> tuple[Any, Any, Any, Any]:
    """A property with ROOMS rooms of one type (bulk-inserted) and one rate plan priced for 60
    days from a month ahead."""
    from pms.clock import local_today
    from pms.db.database import db
    from pms.db.fields import utcnow
    from pms.db.scope import tenant_scope
    from pms.models import Room
    from pms.schemas import catalog as cs
    from pms.schemas.rates import RatesIn
    from pms.services.catalog import catalog
    from pms.services.inventory import inventory
    from pms.services.rates import rates

    prop = catalog.create_property(ctx, msgspec.convert({
        "propertyCode": f"BK{uuid.uuid4().hex[:6].upper()}", "timezone": "UTC",
        "currencyCode": "EUR"}, cs.PropertyIn))
    room_type = catalog.create_child(ctx, catalog.ROOM_TYPE, prop.id, msgspec.convert(
        {"code": "STD", "name": "Standard", "max_occupancy": 3}, cs.RoomTypeIn))
    plan = catalog.create_child(ctx, catalog.RATE_PLAN, prop.id, msgspec.convert(
        {"code": "GRP", "name": "Group"}, cs.RatePlanIn))
    now = utcnow()
    with tenant_scope(ctx.env_id):
        db.connect(reuse_if_open=True)
        with db.atomic():
            Room.insert_many([{"id": uuid.uuid4(), "env_id": ctx.env_id, "created_at": now,
                               "updated_at": now, "version": 0, "property": prop.id,
                               "room_type": room_type.id, "room_number": f"{i:04d}",
                               "status": "VACANT", "hk_status": "CLEAN"}
                              for i in range(ROOMS)]).execute()
    start = local_today(ctx.now, prop.timezone) + timedelta(days=30)
    inventory.ensure_inventory(ctx, prop.id, room_type.id, start, start + timedelta(days=60))
    rates.set_rates(ctx, prop.id, plan.id, msgspec.convert({"rates": [
        {"room_type_id": str(room_type.id), "from_date": start.isoformat(),
         "to_date": (start + timedelta(days=59)).isoformat(), "amount": "120.00"}]}, RatesIn))
    return prop, room_type, plan, start


def _single_bookings(ctx: Any, prop: Any, room_type: Any, plan: Any, arrival: Any) -> list[float]:
    from pms.schemas.reservations import ReservationIn
    from pms.services.reservations import reservations

    times = []
    for i in range(SINGLE_BOOKINGS):
        body = msgspec.convert({"room_type_id": str(room_type.id), "rate_plan_id": str(plan.id),
                                "arrival_date": arrival.isoformat(),
                                "departure_date": (arrival + timedelta(days=2)).isoformat(),
                                "guest": {"last_name": f"Single{i}"}}, ReservationIn)
        started = time.perf_counter()
        reservations.create_reservation(ctx, prop.id, body)
        times.append(time.perf_counter() - started)
    return times


def _rooming_list(ctx: Any, prop: Any, room_type: Any, plan: Any, arrival: Any
                  ) -> tuple[float, dict[str, Any]]:
    from pms.schemas import room_blocks as s
    from pms.services.groups import block_changes, room_blocks, rooming_lists
    from pms.services.job_records import ROOMING_LIST

    departure = arrival + timedelta(days=2)
    block = room_blocks.create_block(ctx, prop.id, msgspec.convert({
        "code": f"RL{uuid.uuid4().hex[:6]}", "name": "Congress",
        "arrival_date": arrival.isoformat(),
        "departure_date": (departure + timedelta(days=1)).isoformat(),  # room for a move
        "rate_plan_id": str(plan.id),
        "allocation": [{"room_type_id": str(room_type.id), "date": arrival.isoformat(),
                        "to_date": departure.isoformat(),
                        "allotted": LIST_ROWS}]}, s.BlockIn))
    block_changes.transition(ctx, prop.id, block.id, "definite")
    rows = [{"room_type_id": str(room_type.id), "arrival_date": arrival.isoformat(),
             "departure_date": departure.isoformat(), "guest": {"last_name": f"Delegate{i}"}}
            for i in range(LIST_ROWS)]
    job = SimpleNamespace(id=uuid.uuid4(), kind=ROOMING_LIST, property_id=prop.id,
                          input={"block_id": str(block.id), "mode": "all_or_nothing",
                                 "rows": rows})
    started = time.perf_counter()
    result = rooming_lists.run_rooming_list(ctx, job)
    seconds = time.perf_counter() - started
    if result["created"] != LIST_ROWS:
        raise RuntimeError(f"rooming list created {result['created']} of {LIST_ROWS}")
    return seconds, result


def _bulk(ctx: Any, prop: Any, block_id: Any, kind: str, body: dict[str, Any]) -> float:
    """A bulk job over every CONFIRMED reservation of the block (queued, then its work run
    here as the worker runs it): its seconds."""
    from pms.db.uow import read_scope
    from pms.models.platform import Job
    from pms.schemas import room_blocks as s
    from pms.services.groups import block_bulk

    schema = s.BulkCancelIn if kind == block_bulk.BULK_CANCEL else s.BulkDateChangeIn
    job, _ = block_bulk.start_bulk(ctx, prop.id, block_id, kind, msgspec.convert(body, schema))
    with read_scope(ctx):
        job = Job.get_by_id(job.id)
    started = time.perf_counter()
    result = block_bulk.run_bulk(ctx, job)
    seconds = time.perf_counter() - started
    if result["changed"] != LIST_ROWS:
        raise RuntimeError(f"{kind} changed {result['changed']} of {LIST_ROWS}")
    return seconds


def _active_blocks(ctx: Any, property_id: str, arrival: Any) -> None:
    """50 DEFINITE blocks on the availability bench hotel (10 types x 3 rooms): 5 per room type,
    one room each for 5 nights, staggered so they never overlap within a type."""
    from pms.db.uow import read_scope
    from pms.models import RatePlan, RoomType
    from pms.schemas import room_blocks as s
    from pms.services.groups import block_changes, room_blocks

    pid = uuid.UUID(property_id)
    with read_scope(ctx):
        types = [rt.id for rt in RoomType.select().where(RoomType.property == pid)
                 .order_by(RoomType.code)]
        plan = RatePlan.select().where(RatePlan.property == pid).first().id
    for i in range(ACTIVE_BLOCKS):
        first = arrival + timedelta(days=6 * (i // len(types)))
        out = room_blocks.create_block(ctx, pid, msgspec.convert({
            "code": f"B{i:02d}", "name": f"Block {i}", "arrival_date": first.isoformat(),
            "departure_date": (first + timedelta(days=5)).isoformat(),
            "rate_plan_id": str(plan),
            "allocation": [{"room_type_id": str(types[i % len(types)]),
                            "date": first.isoformat(),
                            "to_date": (first + timedelta(days=4)).isoformat(),
                            "allotted": 1}]}, s.BlockIn))
        block_changes.transition(ctx, pid, out.id, "definite")


def run(bench: Any) -> list[Any]:
    from bench.lib import Measurement, Result
    from bench.scenarios import availability

    ctx = bench.seed_ctx()
    bench.log(f"blocks: a {ROOMS}-room hotel, {SINGLE_BOOKINGS} single bookings ...")
    prop, room_type, plan, start = _hotel(ctx)
    bench.analyze()
    sample = bench.here_sample()
    single = _single_bookings(ctx, prop, room_type, plan, start + timedelta(days=10))
    single_cpu = bench.here_extra(sample, SINGLE_BOOKINGS)
    single_s = statistics.median(single)
    bench.log(f"... and a rooming list of {LIST_ROWS} from a DEFINITE block")
    sample = bench.here_sample()
    seconds, result = _rooming_list(ctx, prop, room_type, plan, start)
    per = seconds / LIST_ROWS
    cpu = bench.here_extra(sample, LIST_ROWS)
    block_id = uuid.UUID(str(result["block_id"]))
    jobs = {}
    for kind, label, body in (
            ("block_bulk_date_change", "bulk date change (+1 day)", {"shift_days": 1}),
            ("block_bulk_cancel", "bulk cancel", {})):
        bench.log(f"... {label} of the {LIST_ROWS}")
        sample = bench.here_sample()
        took = _bulk(ctx, prop, block_id, kind, body)
        jobs[label] = (took, bench.here_extra(sample, LIST_ROWS))
    results = [
        Result("single booking (in-process, median)", Measurement(
            rate=1 / single_s, unit="bookings/s",
            extra={"ms_per_reservation": round(single_s * 1000, 2), **single_cpu})),
        Result(f"rooming list of {LIST_ROWS} (in-process)", Measurement(
            rate=LIST_ROWS / seconds, unit="reservations/s",
            extra={"ms_per_reservation": round(per * 1000, 2), "total_s": round(seconds, 2),
                   **cpu}),
            baseline="single booking (in-process, median)",
            note=f"{per * 1000:.1f} ms per reservation vs {single_s * 1000:.1f} ms per single "
                 "booking"),
    ]
    for label, (took, extra) in jobs.items():
        results.append(Result(f"{label} of {LIST_ROWS} (in-process)", Measurement(
            rate=LIST_ROWS / took, unit="reservations/s",
            extra={"ms_per_reservation": round(took / LIST_ROWS * 1000, 2),
                   "total_s": round(took, 2), **extra}),
            baseline="single booking (in-process, median)",
            note=f"{took / LIST_ROWS * 1000:.1f} ms per reservation vs "
                 f"{single_s * 1000:.1f} ms per single booking"))
    # the search with and without 50 active blocks (one client)
    env_id = uuid.uuid4()
    property_id, arrival = availability.seed_hotel(bench, env_id)
    app = bench.app()
    headers = bench.headers(env_id)
    body = availability.search_body(arrival)
    path = f"/v1/properties/{property_id}/availability"
    bench.log("search, one client, without blocks ...")
    plain = bench.wrk(app.base_url, method="POST", path=path, headers=headers,
                      body_template=body, connections=1)
    _active_blocks(bench.seed_ctx(env_id), property_id, arrival)
    bench.analyze()
    bench.log(f"... and with {ACTIVE_BLOCKS} active blocks")
    blocked = bench.wrk(app.base_url, method="POST", path=path, headers=headers,
                        body_template=body, connections=1)
    results += [
        Result("POST availability search, 1 client, no blocks", plain),
        Result(f"POST availability search, 1 client, {ACTIVE_BLOCKS} active blocks", blocked,
               goal_text=f"p50<={GOAL_P50_MS:g}ms",
               passed=blocked.p50_ms is not None and blocked.p50_ms <= GOAL_P50_MS),
    ]
    return results
