"""The floor: the same booking hand-written in psycopg2 in 3 round trips behind bare
Falcon + msgspec (bench/floor_app.py), under the same gunicorn settings, against the same schema
with RLS, measured in alternating runs with the service's own booking, interleaved with pgbench
tpcb-like (tpcb-like, app, floor, tpcb-like, app, floor, ...), each on a hotel of its own shaped like the
reservations scenario's, both calendars made ahead. Reports the CPU per booking (server + database) of both and their ratio, the median of
the per-pair ratios. Goal: the service's booking at most 2x the floor's CPU.

Statements and round trips of both come from the in-process counting pass (bench/statements.py):
the service's through `create_app`, the floor's through its own WSGI app.
"""

from __future__ import annotations

import statistics
import uuid
from typing import Any

from bench import floor_app, statements
from bench.lib import TPCB_NOTE, Bench, Measurement, Result
from bench.scenarios import reservations

DESCRIPTION = "floor: the booking hand-written (psycopg2, 3 round trips, bare Falcon) beside the service's"
ORDER = 35
TARGET = "bench.floor_app:from_environment()"
GOAL_CPU_RATIO = 2.0
# The same hotel as the reservations scenario's (both hotels): every booking of a run a 201,
# never the cheaper 409 of a sold-out night.
ROOMS_PER_TYPE = reservations.ROOMS_PER_TYPE


def cpu_ms(m: Measurement) -> float | None:
    """Server + database CPU per request of a run, when it was sampled."""
    parts = [m.extra.get("server_cpu_ms_per_req"), m.extra.get("db_cpu_ms_per_req")]
    return sum(parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]


def cpu_ratio(pairs: list[tuple[Measurement, Measurement]]) -> float | None:
    """The median over pairs of (subject CPU / floor CPU) per request."""
    ratios = []
    for subject, floor in pairs:
        a, b = cpu_ms(subject), cpu_ms(floor)
        if a is not None and b:
            ratios.append(a / b)
    return round(statistics.median(ratios), 3) if ratios else None


def _hotel(bench: Bench) -> dict[str, Any]:
    env_id = uuid.uuid4()
    hotel_id, plan_id, type_ids, today = reservations.seed_hotel(bench, env_id, ROOMS_PER_TYPE)
    reservations.make_calendar(bench, env_id, hotel_id, type_ids, today)
    headers = bench.headers(env_id)
    return {"hotel": hotel_id, "plan": plan_id, "types": type_ids, "today": today,
            "headers": headers, "path": f"/v1/properties/{hotel_id}/reservations",
            "body": reservations.body_template(plan_id),
            "script": reservations._driver(type_ids, today)}


def count_floor(bench: Bench, calls: list[statements.Call]) -> statements.Counts:
    """The floor's statements and round trips, counted through its WSGI app in-process."""
    assert bench.db is not None
    tally = statements.Tally()
    url = bench.db.app_url
    app = floor_app.create_app(lambda: statements.counting_connect(url, tally))
    return statements.run_pass(app, tally, calls[3:], warmup=calls[:3])


def run(bench: Bench) -> list[Result]:
    bench.baseline("pgbench_tpcb_like")
    bench.log("floor: seeding two hotels (service, floor), calendars made ahead ...")
    ours, theirs = _hotel(bench), _hotel(bench)
    app = bench.app()

    def book(base_url: str, hotel: dict[str, Any], duration: float | None = None) -> Measurement:
        return bench.wrk_once(base_url, method="POST", path=hotel["path"],
                              headers=hotel["headers"], body_template=hotel["body"],
                              unique=True, script=hotel["script"], duration=duration)

    service_runs: list[Measurement] = []
    floor_runs: list[Measurement] = []
    with bench.server(TARGET) as floor:
        for url, hotel in ((app.base_url, ours), (floor.base_url, theirs)):
            book(url, hotel, duration=bench.warmup or 1)
        bench.analyze()
        bench.log("POST reservation: the service and the floor, alternating, interleaved with "
                  "tpcb-like ...")

        def run_ours() -> Measurement:
            service_runs.append(book(app.base_url, ours))
            return service_runs[-1]

        def run_theirs() -> Measurement:
            floor_runs.append(book(floor.base_url, theirs))
            return floor_runs[-1]

        service, floor_m = bench.tpcb_interleaved(run_ours, run_theirs)
    ratio = cpu_ratio(list(zip(service_runs, floor_runs, strict=True)))

    bench.log("statements and round trips: the service's and the floor's booking ...")
    calls = reservations.booking_calls(ours["hotel"], ours["plan"], ours["types"], ours["today"],
                                       ours["headers"], 20)
    service.extra.update(bench.count(calls[3:], warmup=calls[:3]).extra())
    floor_calls = reservations.booking_calls(theirs["hotel"], theirs["plan"], theirs["types"],
                                             theirs["today"], theirs["headers"], 20, seed=11)
    floor_m.extra.update(count_floor(bench, floor_calls).extra())

    floor_name = "floor: booking by hand (psycopg2, 3 RT, bare Falcon)"
    service_name = "POST reservation, calendar made ahead (paired)"
    return [
        Result(floor_name, floor_m, baseline="pgbench_tpcb_like",
               note="the same transaction as the service's booking, hand-written; "
                    + TPCB_NOTE),
        Result(service_name, service, baseline=floor_name,
               note="req/s ratio to the floor's (medians); runs alternating with the floor"),
        Result("booking CPU / floor CPU (server + db per request)", service,
               baseline=floor_name, paired_ratio=ratio,
               goal_text=f"<= {GOAL_CPU_RATIO:g}",
               passed=None if ratio is None else ratio <= GOAL_CPU_RATIO,
               note="ratio: median of per-pair CPU ratios (not req/s)"),
    ]
