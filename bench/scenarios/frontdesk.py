"""The front desk's writes ("apply the same pattern to ... check-in, check-out, folio
charge and payment"), each request on its own stay or folio, each beside its hand-written
floor (bench/floor_stay.py, served as bench/floor_app.py under the same gunicorn settings):

- `POST .../reservations/{id}/check-in` (`{}`: the first free room of the booked type, picked
  with SKIP LOCKED; the room OCCUPIED, the folio opened), one CONFIRMED one-night stay arriving
  today per request;
- `POST .../folios/{id}/charges` (an F&B charge with an inclusive VAT line) on the folios of the
  stays just checked in, one folio after the other;
- `POST .../folios/{id}/payments` (a card payment through the embedded payments sandbox: the
  PENDING row, the call between transactions, the outcome), on those folios likewise;
- `POST .../reservations/{id}/check-out`, one stay per request, each checked in and paid ahead
  (its one room night, posted by the check-out, settles the folio to zero).

The service and the floor get stays and folios of their own (the hotel holds both pools) and
their runs alternate (service, floor, service, floor, ...); each use case reports the floor's
line, the service's, and the service's CPU per request (gunicorn + database) over the floor's,
the median of the per-pair ratios, with both sides' round trips and, where they differ, the
budget's reason (bench/budgets.py).

No Idempotency-Key is sent (these routes keep the separate claim and store; see
pms/api/idempotency.py). Check-in and check-out use up a stay per request, so each pool is
cut into one slice per wrk run (`_driver`: each wrk thread walks its share of the slice's paths
and stops when they are used up, never repeating a stay); those runs last at most
SLICE / CEILING seconds (`slice_seconds`), so that the slice outlasts them. Charges and payments
cycle over the folios (a folio takes many). Statements and round trips per request come from
the in-process counting passes (the service's app, the floor's app) over stays kept apart for
them. No goal is set here; the figures are there so that no route drifts from its floor unseen.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

import msgspec

from bench import lib
from bench.lib import Bench, Measurement, Result
from bench.statements import Call

DESCRIPTION = ("check-in, folio charge, card payment, check-out (one stay or folio per "
               "request), each beside its hand-written floor")
ORDER = 35  # after reservations (30)
ROOM_TYPES = 10
COUNTED = 13  # per use case: 3 warm-up + 10 counted requests of the in-process pass
CHARGE = json.dumps({"transaction_code": "FB", "amount": "20.00", "description": "Dinner"})
PAYMENT = json.dumps({"amount": "10.00", "method": "CARD", "payment_method_id": "pm_card_visa"})
NIGHT = "120.00"  # the seeded hotel's rate: what a one-night stay owes at check-out


# stays per wrk run of check-in or check-out, and the req/s a run of those can show before its
# slice is used up: 400 and 160 before, which this box outran once check-in took four round
# trips (its runs were reported as lower bounds); a run lasts SLICE / CEILING = 1.25 s
SLICE = 1000
CEILING = 800


def slice_seconds(bench: Bench) -> float:
    """How long a wrk run of a slice lasts: `bench.duration`, at most SLICE / CEILING.

    wrk runs for its whole duration even when every thread has stopped, so a slice used up
    early would understate the rate; the runs are kept short enough for the slice to last at
    up to CEILING requests per second (a run that uses it up is reported as a lower bound)."""
    return min(bench.duration, SLICE / CEILING)


def seed(bench: Bench, env_id: uuid.UUID, stays: int) -> dict[str, Any]:
    """A hotel with rooms for `stays` one-night stays arriving today (CONFIRMED, spread over the
    room types), transaction codes ROOM and FB (7% VAT inclusive); returns ids and dates."""
    from bench.scenarios import reservations
    from pms.schemas.cashiering import TransactionCodeIn
    from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
    from pms.services.catalog import catalog

    per_type = -(-stays // ROOM_TYPES)
    hotel_id, plan_id, type_ids, today = reservations.seed_hotel(bench, env_id,
                                                                rooms_per_type=per_type)
    ctx = bench.seed_ctx(env_id)
    vat = [{"code": "VAT", "kind": "percentage", "rate": "7", "inclusive": True, "name": "VAT"}]
    for code, name, category, account in (("ROOM", "Room", "room", "room_revenue"),
                                          ("FB", "Food and beverage", "F&B", "fnb_revenue")):
        catalog.create_child(ctx, TRANSACTION_CODE, uuid.UUID(hotel_id), msgspec.convert(
            {"code": code, "name": name, "category": category, "ledger_account": account,
             "tax_rules": vat}, TransactionCodeIn))
    return {"hotel_id": hotel_id, "plan_id": plan_id, "type_ids": type_ids, "today": today}


def book(bench: Bench, env_id: uuid.UUID, hotel: dict[str, Any], n: int, *,
         offset: int = 0) -> list[str]:
    """`n` one-night stays arriving today, round robin over the room types; their ids."""
    from datetime import timedelta

    from pms.schemas.reservations import ReservationIn
    from pms.services.reservations.reservations import create_reservation

    ctx = bench.seed_ctx(env_id)
    today = hotel["today"]
    ids = []
    for i in range(offset, offset + n):
        body = msgspec.convert({
            "room_type_id": hotel["type_ids"][i % len(hotel["type_ids"])],
            "rate_plan_id": hotel["plan_id"], "arrival_date": today.isoformat(),
            "departure_date": (today + timedelta(days=1)).isoformat(), "adults": 1,
            "guest": {"first_name": "Ada", "last_name": f"Desk{i}"}}, ReservationIn)
        row, _ = create_reservation(ctx, uuid.UUID(hotel["hotel_id"]), body)
        ids.append(str(row.id))
    return ids


def check_in_and_pay(bench: Bench, env_id: uuid.UUID, hotel_id: str, ids: list[str]) -> None:
    """Check the stays in and pay their one night in cash (ready to check out today)."""
    from decimal import Decimal

    from pms.schemas.cashiering import PaymentIn
    from pms.schemas.reservations import CheckInIn
    from pms.services.cashiering import payments
    from pms.services.frontdesk import checkin

    ctx = bench.seed_ctx(env_id)
    prop = uuid.UUID(hotel_id)
    for rid in ids:
        checkin.check_in(ctx, prop, uuid.UUID(rid), CheckInIn())
    for folio_id in folios_of(bench, env_id, ids):
        payments.post_payment(ctx, prop, uuid.UUID(folio_id),
                              PaymentIn(amount=Decimal(NIGHT), method="CASH"), payments=None)


def folios_of(bench: Bench, env_id: uuid.UUID, reservation_ids: list[str]) -> list[str]:
    """The guest folio ids of checked-in stays, in the order of `reservation_ids`."""
    from pms.db.uow import read_scope
    from pms.models import Folio

    ctx = bench.seed_ctx(env_id)
    with read_scope(ctx):
        by_stay = {str(f.reservation_id): str(f.id) for f in Folio.select(
            Folio.id, Folio.reservation).where(
            Folio.reservation.in_([uuid.UUID(r) for r in reservation_ids]))}
    return [by_stay[r] for r in reservation_ids if r in by_stay]


def _driver(paths: list[str], method: str, body: str, threads: int) -> Path:
    """A wrk script that sends each path of `paths` at most once (thread t of `threads` takes
    paths t, t + threads, ...) and stops the thread when its share is answered; the harness
    driver's done() prints the summary. (wrk builds a request of the first thread's script to
    check it and never sends it: that path goes unused, never twice.)"""
    lua = "\n".join([
        f"dofile({json.dumps(str(lib.WRK_DRIVER))})",
        "local paths = {" + ",".join(json.dumps(p) for p in paths) + "}",
        f"local step = {threads}",
        f"local the_method = {json.dumps(method)}",
        f"local the_body = {json.dumps(body) if body else 'nil'}",
        "local sent, answered, share = 0, 0, nil",
        "function request()",
        "  if share == nil then share = math.floor((#paths - tid) / step) + 1 end",
        "  sent = sent + 1",
        "  local i = tid + (sent - 1) * step",
        "  if sent > share or i > #paths then",
        "    return wrk.format('GET', '/v1/health')",
        "  end",
        "  return wrk.format(the_method, paths[i], nil, the_body)",
        "end",
        "function response(status, headers, body)",
        "  answered = answered + 1",
        "  if share ~= nil and answered >= share then wrk.thread:stop() end",
        "end",
    ])
    path = Path(tempfile.mkdtemp(prefix="pms-bench-")) / "frontdesk.lua"
    path.write_text(lua + "\n")
    return path


def _pairs(bench: Bench, name: str, budget: Any, service: Measurement, floor_m: Measurement,
           service_runs: list[Measurement], floor_runs: list[Measurement]) -> list[Result]:
    """The floor's line, the service's, and the service's CPU over the floor's (the median of
    the per-pair ratios); the round trips of both side by side, with the budget's reason when
    they differ."""
    from bench.scenarios.floor import cpu_ratio

    ratio = cpu_ratio(list(zip(service_runs, floor_runs, strict=True)))
    ours = service.extra.get("round_trips_per_req")
    theirs = floor_m.extra.get("round_trips_per_req")
    sent = f"round trips: service {ours}, floor {theirs}"
    if ours != theirs:
        sent += f" (the service's {budget.round_trips} in its budget: {budget.why})"
    bench.log(f"  {name}: {sent}")
    floor_name = f"floor: {name} by hand (psycopg2, bare Falcon)"
    return [Result(floor_name, floor_m, note="the same work hand-written (bench/floor_stay.py)"),
            Result(name, service, baseline=floor_name,
                   note="req/s ratio to the floor's (medians); runs alternating with the floor"),
            Result(f"{name}: CPU / floor CPU (server + db per request)", service,
                   baseline=floor_name, paired_ratio=ratio,
                   note="median of per-pair CPU ratios; " + sent)]


def run(bench: Bench) -> list[Result]:
    """Each use case on the service and on its floor (bench/floor_stay.py), runs alternating
    (service, floor, service, ...), each on stays or folios of its own."""
    from bench import budgets
    from bench.scenarios.floor import TARGET as FLOOR_TARGET
    from bench.scenarios.floor import count_floor

    env_id = uuid.uuid4()
    size = SLICE
    runs = bench.runs
    warm = max(20, size // 5)
    pool = warm + runs * size + COUNTED  # per use case and per side (service, floor)
    bench.log(f"front desk: seeding a hotel for {4 * pool} one-night stays ...")
    hotel = seed(bench, env_id, 4 * pool)
    prop = hotel["hotel_id"]
    base = f"/v1/properties/{prop}"
    arriving = {"service": book(bench, env_id, hotel, pool),
                "floor": book(bench, env_id, hotel, pool, offset=pool)}
    leaving = {"service": book(bench, env_id, hotel, pool, offset=2 * pool),
               "floor": book(bench, env_id, hotel, pool, offset=3 * pool)}
    bench.log(f"  checking in and paying {2 * pool} stays for the check-out runs ...")
    check_in_and_pay(bench, env_id, prop, leaving["service"] + leaving["floor"])
    app = bench.app()
    headers = bench.headers(env_id)
    json_headers = {**headers, "Content-Type": "application/json"}
    threads = min(bench.wrk_threads, bench.connections)

    def cut(ids: list[str], suffix: str) -> tuple[list[str], list[list[str]], list[str]]:
        paths = [f"{base}/reservations/{r}/{suffix}" for r in ids]
        return (paths[:warm], [paths[warm + k * size: warm + (k + 1) * size]
                               for k in range(runs)], paths[warm + runs * size:])

    def counted_calls(paths: list[str], body: str | None) -> tuple[list[Call], list[Call]]:
        calls = [Call("POST", p, body, json_headers if body else headers) for p in paths]
        return calls[3:], calls[:3]

    results: list[Result] = []
    with bench.server(FLOOR_TARGET) as floor:
        urls = {"service": app.base_url, "floor": floor.base_url}

        def sliced(name: str, budget: Any, ids: dict[str, list[str]], suffix: str,
                   body: str) -> None:
            bench.log(f"POST .../{suffix}: the service and the floor, alternating ...")
            cuts = {side: cut(ids[side], suffix) for side in urls}
            measured: dict[str, list[Measurement]] = {"service": [], "floor": []}
            for side, url in urls.items():
                bench.wrk_once(url, method="POST", headers=headers, body_template=body,
                               duration=bench.warmup or 1,
                               script=_driver(cuts[side][0], "POST", body, threads))
            bench.analyze()
            for k in range(runs):
                for side, url in urls.items():
                    paths = cuts[side][1][k]
                    m = bench.wrk_once(url, method="POST", headers=headers, body_template=body,
                                       duration=slice_seconds(bench),
                                       script=_driver(paths, "POST", body, threads))
                    if m.extra.get("requests", 0) >= len(paths):
                        bench.log(f"  note: a run used up its slice of {len(paths)}: its rate "
                                  f"({m.rate}/s) is a lower bound")
                    measured[side].append(m)
            service_m = lib.median_measurement(measured["service"])
            floor_m = lib.median_measurement(measured["floor"])
            calls, warmup = counted_calls(cuts["service"][2], body or None)
            service_m.extra.update(bench.count(calls, warmup=warmup).extra())
            calls, warmup = counted_calls(cuts["floor"][2], body or None)
            floor_m.extra.update(count_floor(bench, warmup + calls).extra())
            results.extend(_pairs(bench, name, budget, service_m, floor_m,
                                  measured["service"], measured["floor"]))

        sliced("POST check-in (auto room)", budgets.CHECK_IN, arriving, "check-in", "{}")
        folios = {side: [f"{base}/folios/{f}" for f in folios_of(bench, env_id, arriving[side])]
                  for side in urls}
        for name, budget, suffix, body in (
                ("POST folio charge (F&B, VAT line)", budgets.CHARGE, "charges", CHARGE),
                ("POST folio payment (card, sandbox)", budgets.CARD_PAYMENT, "payments",
                 PAYMENT)):
            bench.log(f"POST .../folios/{{id}}/{suffix}: the service and the floor, "
                      "alternating ...")
            scripts = {side: _driver([f"{p}/{suffix}" for p in folios[side][:-COUNTED]] * 50,
                                     "POST", body, threads) for side in urls}
            measured = {"service": [], "floor": []}
            for side, url in urls.items():
                bench.wrk_once(url, method="POST", headers=headers, body_template=body,
                               duration=bench.warmup or 1, script=scripts[side])
            bench.analyze()
            for _ in range(runs):
                for side, url in urls.items():
                    measured[side].append(bench.wrk_once(
                        url, method="POST", headers=headers, body_template=body,
                        script=scripts[side]))
            service_m = lib.median_measurement(measured["service"])
            floor_m = lib.median_measurement(measured["floor"])
            tails = {side: [Call("POST", f"{p}/{suffix}", body, json_headers)
                            for p in folios[side][-COUNTED:]] for side in urls}
            service_m.extra.update(bench.count(tails["service"][3:],
                                               warmup=tails["service"][:3]).extra())
            floor_m.extra.update(count_floor(bench, tails["floor"]).extra())
            results.extend(_pairs(bench, name, budget, service_m, floor_m,
                                  measured["service"], measured["floor"]))
        sliced("POST check-out (paid, one night)", budgets.CHECK_OUT, leaving, "check-out", "")
    return results
