"""`python -m bench.inprocess <case> [--requests N] [--rooms-per-type R] [--profile] [--sample]
[--floor] [--width W]`: the CPU of one request of a use case, in this process, without gunicorn or wrk
(where a request's CPU goes, on a quiet or a loaded machine alike).

Cases: `get` (GET /v1/properties/{id}), `profile` (POST .../profiles), `booking` (POST
.../reservations with an Idempotency-Key), `availability` (POST .../availability: the
availability scenario's hotel and 30-night search; `availability-blocks`: the same with the
blocks scenario's 50 active blocks on the property), `check-in` and `check-out` (one stay each,
on a hotel of `--rooms-per-type` rooms a type, 10 types, half of them in house), `charge` and
`payment` (the front desk scenario's F&B charge and card payment, on the checked-in stays'
folios in turn). Each request goes
through the real app (`pms.app.create_app`, every middleware) by Falcon's test client, on a
throwaway PostgreSQL database (bench/pgdb.py), after a warm-up and an ANALYZE.

Printed, per request, for three rounds: the app's CPU (this process: the app, psycopg2 and the
test client, which adds some 0.05 ms of WSGI checks), the database's CPU (the bench database's
backends, from /proc), then the wall time of each statement of the last round, slowest first,
its text cut at `--width` characters (`--profile`: a cProfile of the last round's CPU time instead; `--sample`: the last round's
stacks sampled on SIGPROF, which adds no cost per call). `--floor` sends the same requests to the
hand-written floor (bench/floor_app.py and bench/floor_stay.py; every case but the
availability searches) instead of the service: the difference is what the service's code adds. A measurement tool, not a test:
nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import json
import os
import pstats
import re
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg2
import psycopg2.extensions as pgext

from bench import cpu
from bench.lib import Bench
from bench.statements import Call, unique_calls

CASES = ("get", "profile", "booking", "availability", "availability-blocks", "check-in",
         "check-out", "charge", "payment")
FLOOR_CASES = ("get", "profile", "booking", "check-in", "check-out", "charge", "payment")


class _Timings:
    """Wall time per statement text (its first 110 characters), summed."""

    def __init__(self, width: int = 110) -> None:
        self.width = width
        self.by_text: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
        # each distinct text's key, made once: normalizing a long statement on every execute
        # (a 1.5 KB availability query) showed as 10% of the app CPU this tool reports
        self._keys: dict[Any, str] = {}

    def key(self, query: Any) -> str:
        """The statement's text, whitespace runs as one space, cut at `width`."""
        known = self._keys.get(query)
        if known is None:
            if len(self._keys) > 10_000:  # texts with inline values: keep the memory bounded
                self._keys.clear()
            text = query if isinstance(query, str) else query.decode()
            known = self._keys[query] = re.sub(r"\s+", " ", text).strip()[:self.width]
        return known

    def connection_factory(self) -> type[pgext.connection]:
        timings = self

        class TimedCursor(pgext.cursor):
            def execute(self, query: Any, vars: Any = None) -> Any:  # noqa: A002 - psycopg2's
                started = time.perf_counter()
                try:
                    return super().execute(query, vars)
                finally:
                    entry = timings.by_text[timings.key(query)]
                    entry[0] += 1
                    entry[1] += time.perf_counter() - started

        class TimedConnection(pgext.connection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.cursor_factory = TimedCursor

        return TimedConnection


def _calls(bench: Bench, case: str, n: int, rooms_per_type: int) -> Iterator[Call]:
    """`n` calls of the case, each on its own stay or with its own body."""
    from bench.scenarios import availability, frontdesk, properties, reservations

    env_id = uuid.uuid4()
    headers = bench.headers(env_id)
    if case in ("get", "profile"):
        prop = properties.seed_property(bench, env_id)
        if case == "get":
            return iter([Call("GET", f"/v1/properties/{prop}", None, headers)] * n)
        return iter(unique_calls(lambda t: Call(
            "POST", f"/v1/properties/{prop}/profiles",
            json.dumps({"first_name": "Ada", "last_name": f"L{t}", "email": f"a{t}@x.org"}),
            headers), n, idempotency=True))
    if case == "booking":
        hotel, plan, types, today = reservations.seed_hotel(bench, env_id, rooms_per_type)
        reservations.make_calendar(bench, env_id, hotel, types, today)
        return iter(reservations.booking_calls(hotel, plan, types, today, headers, n))
    if case.startswith("availability"):
        prop, arrival = availability.seed_hotel(bench, env_id)
        if case == "availability-blocks":
            from bench.scenarios import blocks

            blocks._active_blocks(bench.seed_ctx(env_id), prop, arrival)
        return iter([Call("POST", f"/v1/properties/{prop}/availability",
                          availability.search_body(arrival), headers)] * n)
    stays = rooms_per_type * frontdesk.ROOM_TYPES // 2
    folio_case = case in ("charge", "payment")  # the folios take many requests each
    if stays < n and not folio_case:
        raise SystemExit(f"--rooms-per-type {rooms_per_type} gives {stays} stays: fewer than "
                         f"the {n} requests")
    hotel = frontdesk.seed(bench, env_id, 2 * stays)
    arriving = frontdesk.book(bench, env_id, hotel, stays)
    if folio_case:  # the arriving stays checked in: their folios, in turn
        from pms.schemas.reservations import CheckInIn
        from pms.services.frontdesk import checkin

        ctx = bench.seed_ctx(env_id)
        for rid in arriving:
            checkin.check_in(ctx, uuid.UUID(hotel["hotel_id"]), uuid.UUID(rid), CheckInIn())
        folios = frontdesk.folios_of(bench, env_id, arriving)
        body = frontdesk.CHARGE if case == "charge" else frontdesk.PAYMENT
        suffix = "charges" if case == "charge" else "payments"
        base = f"/v1/properties/{hotel['hotel_id']}/folios"
        json_headers = {**headers, "Content-Type": "application/json"}
        return iter([Call("POST", f"{base}/{folios[i % len(folios)]}/{suffix}", body,
                          json_headers) for i in range(n)])
    leaving = frontdesk.book(bench, env_id, hotel, stays, offset=stays)
    frontdesk.check_in_and_pay(bench, env_id, hotel["hotel_id"], leaving)
    ids = arriving if case == "check-in" else leaving
    base = f"/v1/properties/{hotel['hotel_id']}/reservations"
    body = "{}" if case == "check-in" else None
    return iter([Call("POST", f"{base}/{r}/{case}", body, headers) for r in ids[:n]])


def _sender(app: Any, calls: Iterator[Call]) -> Callable[[], None]:
    from falcon import testing

    client = testing.TestClient(app)

    def send() -> None:
        call = next(calls)
        headers = dict(call.headers)
        if call.body is not None:
            headers.setdefault("Content-Type", "application/json")
        result = client.simulate_request(call.method, call.path, headers=headers, body=call.body)
        if result.status_code >= 300:
            raise SystemExit(f"{call.method} {call.path}: {result.status_code} {result.text}")

    return send


def run(case: str, requests: int, rooms_per_type: int, profile: bool,
        out: Callable[[str], None] = print, *, floor: bool = False, width: int = 110,
        sample: bool = False) -> None:
    from pms.app import create_app
    from pms.config import load_settings
    from pms.db.database import make_database

    if floor and case not in FLOOR_CASES:
        raise SystemExit(f"--floor: no floor for {case!r} (floors: {', '.join(FLOOR_CASES)})")
    warm = 50
    bench = Bench(log=lambda _: None)
    bench.start()
    try:
        calls = _calls(bench, case, warm + 3 * requests, rooms_per_type)
        settings = load_settings({**bench.gunicorn_env()})
        database = make_database(settings.database_url, pool_size=2,
                                 statement_timeout_ms=settings.limits.statement_timeout_ms)
        timings = _Timings(width)
        database.connect_params["connection_factory"] = timings.connection_factory()
        try:
            if floor:
                from bench import floor_app

                url = settings.database_url
                factory = timings.connection_factory()
                app = floor_app.create_app(
                    lambda: psycopg2.connect(url, connection_factory=factory))
            else:
                app = create_app(settings, db=database)
            _measure(bench, timings, _sender(app, calls), f"floor {case}" if floor else case,
                     requests, warm, profile, out, sample)
        finally:
            database.close_all()
    finally:
        bench.close()


class _Sampler:
    """A statistical CPU profiler: SIGPROF every `interval` seconds of this process's CPU, the
    stack of the interrupted frame counted (its function as self time, every function on it as
    inclusive time). Unlike cProfile it adds no cost per call, so small functions are not
    overstated."""

    def __init__(self, interval: float = 0.0005) -> None:
        self.interval = interval
        self.self_counts: collections.Counter[str] = collections.Counter()
        self.inclusive: collections.Counter[str] = collections.Counter()
        self.samples = 0

    @staticmethod
    def _name(frame: Any) -> str:
        code = frame.f_code
        path = code.co_filename
        for marker in ("/site-packages/", "/lib/python3"):
            if marker in path:
                path = path.split(marker, 1)[1]
                break
        else:
            path = path.split("/work/main/", 1)[-1]
        return f"{path}:{code.co_firstlineno}({code.co_name})"

    def _handler(self, _signum: int, frame: Any) -> None:
        self.samples += 1
        seen: set[str] = set()
        top = True
        while frame is not None:
            name = self._name(frame)
            if top:
                self.self_counts[name] += 1
                top = False
            if name not in seen:
                seen.add(name)
                self.inclusive[name] += 1
            frame = frame.f_back

    def __enter__(self) -> _Sampler:
        import signal

        signal.signal(signal.SIGPROF, self._handler)
        signal.setitimer(signal.ITIMER_PROF, self.interval, self.interval)
        return self

    def __exit__(self, *_: Any) -> None:
        import signal

        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)

    def report(self, out: Callable[[str], None], top: int = 40) -> None:
        total = self.samples or 1
        out(f"{self.samples} samples; self time, then inclusive time, as % of the app's CPU:")
        for name, n in self.self_counts.most_common(top):
            out(f"  {100 * n / total:5.1f}%  {name}")
        out("inclusive:")
        for name, n in self.inclusive.most_common(2 * top):
            out(f"  {100 * n / total:5.1f}%  {name}")


def _measure(bench: Bench, timings: _Timings, send: Callable[[], None], case: str,
             requests: int, warm: int, profile: bool, out: Callable[[str], None],
             sample: bool = False) -> None:
    """Warm up, ANALYZE, then three timed rounds (the last profiled, sampled or its statements
    shown)."""
    for _ in range(warm):
        send()
    bench.analyze()
    backends = bench._db_backends()
    sampler = _Sampler() if sample else None
    for round_ in range(3):
        last = round_ == 2
        timings.by_text.clear()
        profiler = cProfile.Profile(time.process_time) if profile and last else None
        before_db, before_app = cpu.pids_seconds(backends), time.process_time()
        if profiler:
            profiler.enable()
        if sampler is not None and last:
            with sampler:
                for _ in range(requests):
                    send()
        else:
            for _ in range(requests):
                send()
        if profiler:
            profiler.disable()
        app_ms = (time.process_time() - before_app) / requests * 1000
        db_s, _ = cpu.delta(before_db, cpu.pids_seconds(backends))
        out(f"{case}: app {app_ms:.3f} ms, database {db_s / requests * 1000:.3f} ms of CPU "
            f"per request ({requests} requests)")
    if profile and profiler is not None:
        stats = pstats.Stats(profiler).sort_stats(os.environ.get("PMS_BENCH_SORT", "tottime"))
        # PMS_BENCH_TOP: how many lines, or a path regex and a count ("pms/,40")
        stats.print_stats(*(int(part) if part.isdigit() else part
                            for part in os.environ.get("PMS_BENCH_TOP", "40").split(",")))
        if os.environ.get("PMS_BENCH_CALLERS"):  # who calls the functions matching this regex
            stats.print_callers(os.environ["PMS_BENCH_CALLERS"])
        return
    if sampler is not None:
        sampler.report(out)
        return
    out("statements of the last round, wall time per request, slowest first:")
    for text, (count, total) in sorted(timings.by_text.items(), key=lambda kv: -kv[1][1]):
        out(f"  {count / requests:4.1f}x {total / requests * 1000:7.3f} ms  {text}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inprocess", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=CASES)
    parser.add_argument("--requests", type=int, default=200, help="requests per round (200)")
    parser.add_argument("--rooms-per-type", type=int, default=60,
                        help="the hotel's rooms per room type (booking, check-in, check-out)")
    parser.add_argument("--profile", action="store_true", help="cProfile the last round")
    parser.add_argument("--sample", action="store_true",
                        help="sample the last round's stacks on SIGPROF (CPU, no per-call cost)")
    parser.add_argument("--floor", action="store_true",
                        help="the hand-written floor instead of the service (not availability)")
    parser.add_argument("--width", type=int, default=110,
                        help="characters of each statement's text shown (110)")
    args = parser.parse_args(argv)
    run(args.case, args.requests, args.rooms_per_type, args.profile, floor=args.floor,
        width=args.width, sample=args.sample)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
