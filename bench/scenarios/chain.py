"""Chain-sized data: a stated fraction of a chain loaded in bulk, measured against one
hotel.

`load_chain` builds TENANTS envs with PROPERTIES properties of ROOMS rooms in all, one room type
and one rate plan each (through the services: the catalog rows carry defaults the services own),
then the rooms, DAYS nights of inventory_day and PER_NIGHT one-night CONFIRMED reservations per
property and night straight into the tables with INSERT ... SELECT generate_series (inventory_day
.sold equals the reservations of that night, physical equals the rooms), and a nightly rate
through `rates.set_rates`.

`run` loads the chain, then `one_hotel_rounds`: a second database with ONE hotel loaded the same
way, served by a second gunicorn with the same code and settings; after a warm-up, alternating
rounds (chain, one hotel, chain, ...) of a booking, an availability search, a GET of a
reservation and the list of a night's arrivals, each round's median per operation; reported:
the medians and the median of the per-round ratios chain / one hotel, with PASS/FAIL against
1.20 (printed, never asserted). Then the night audit of every property, as `--all` runs them,
timed after 10 %, 30 % and 100 % of them (`PMS_BENCH_CHAIN_AUDIT=0` leaves it out).
Sizes: `PMS_BENCH_CHAIN_PROPERTIES`, `PMS_BENCH_CHAIN_PER_NIGHT`, `PMS_BENCH_CHAIN_ROUNDS`,
`PMS_BENCH_CHAIN_PER_OP`."""

from __future__ import annotations

import http.client
import json
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any, NamedTuple

DESCRIPTION = ("chain-sized data: 1,000 properties x 60 rooms in 10 tenants, 90 days; booking, "
               "search, GET and list vs one hotel (alternating rounds); night audit --all")
DEFAULT = False
ORDER = 90
PROPERTIES, TENANTS, ROOMS, DAYS, PER_NIGHT = 1000, 10, 60, 90, 20
START = date(2031, 6, 1)


class Loaded(NamedTuple):
    env_id: uuid.UUID
    property_id: uuid.UUID
    room_type_id: uuid.UUID
    rate_plan_id: uuid.UUID


def load_chain(bench: Any, *, properties: int = PROPERTIES, tenants: int = TENANTS,
               rooms: int = ROOMS, days: int = DAYS, per_night: int = PER_NIGHT,
               start: date = START) -> list[Loaded]:
    """Load the chain; returns each property's ids."""
    import msgspec

    from pms.db.database import db
    from pms.db.scope import tenant_scope
    from pms.schemas import catalog as s
    from pms.schemas.rates import RatesIn
    from pms.services.catalog import catalog
    from pms.services.rates import rates

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
            rates.set_rates(ctx, prop.id, plan.id, msgspec.convert({"rates": [
                {"room_type_id": str(rt.id), "from_date": start.isoformat(),
                 "to_date": (start + timedelta(days=days)).isoformat(), "amount": "120.00"}]},
                RatesIn))
            out.append(Loaded(env_id, prop.id, rt.id, plan.id))
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


def audit_all(bench: Any, loaded: list[Loaded],
              marks: tuple[int, ...]) -> dict[int, float]:
    """The night audit of every loaded property, one after another as `pms-cli eod --all` runs
    them (env by env); the cumulative seconds after the first n properties for n in `marks`."""
    from pms.context import system_ctx
    from pms.platform.ledger import EmbeddedLedger
    from pms.services.night_audit.end_of_day import Hooks, run_night_audit

    cumulative, spent = {}, 0.0
    for n, (env_id, property_id, _, _) in enumerate(loaded, 1):
        ctx = system_ctx(env_id, sub="bench-seed")
        started = time.perf_counter()
        out = run_night_audit(ctx, property_id, hooks=Hooks(ledger=EmbeddedLedger()), override_reason="bench: back-to-back audits")
        spent += time.perf_counter() - started
        if out.status != "DONE":
            raise RuntimeError(f"night audit failed: {out.error}")
        if n in marks:
            cumulative[n] = spent
            bench.log(f"chain: night audit of {n} properties: {spent:.1f} s")
    return cumulative


# -- alternating rounds: the chain against one hotel ------------------------------------------

OPERATIONS = ("booking", "search", "get", "list")
ROUNDS, PER_OP, SAMPLE, GOAL = 10, 20, 200, 1.20
# method, path, headers, JSON body -> HTTP status
Send = Callable[[str, str, dict[str, str], Any], int]


class Hotel(NamedTuple):
    loaded: Loaded
    headers: dict[str, str]
    reservation_ids: list[uuid.UUID]


class Instance(NamedTuple):
    name: str
    send: Send
    hotels: list[Hotel]


def sample_hotels(loaded: list[Loaded], headers: Callable[[uuid.UUID], dict[str, str]],
                  rng: random.Random, *, count: int = SAMPLE, per_hotel: int = 5) -> list[Hotel]:
    """`count` properties of `loaded` at random, each with `per_hotel` of its reservation ids
    (read from the bound database) for the GETs."""
    from pms.db.database import db
    from pms.db.scope import tenant_scope

    out, tokens = [], {}
    for row in rng.sample(loaded, min(count, len(loaded))):
        with tenant_scope(row.env_id):
            ids = [r[0] for r in db.execute_sql(
                "SELECT id FROM reservation WHERE env_id = %s AND property_id = %s"
                " ORDER BY id LIMIT %s", (row.env_id, row.property_id, per_hotel)).fetchall()]
        if row.env_id not in tokens:
            tokens[row.env_id] = headers(row.env_id)
        out.append(Hotel(row, tokens[row.env_id], [uuid.UUID(str(i)) for i in ids]))
    return out


def operation(op: str, hotel: Hotel, rng: random.Random, *, days: int = DAYS,
              start: date = START) -> tuple[str, str, dict[str, str], Any]:
    """One request of `op` on `hotel`: a one-night booking or search on a random night of the
    loaded range, a GET of a loaded reservation, the reservations arriving on a random night."""
    base = f"/v1/properties/{hotel.loaded.property_id}"
    day = start + timedelta(days=rng.randrange(days))
    night = {"arrival_date": day.isoformat(), "departure_date": (day + timedelta(days=1)).isoformat()}
    if op == "booking":
        return "POST", f"{base}/reservations", {"Idempotency-Key": str(uuid.uuid4())}, {
            **night, "room_type_id": str(hotel.loaded.room_type_id),
            "rate_plan_id": str(hotel.loaded.rate_plan_id), "guest": {"last_name": "Round"}}
    if op == "search":
        return "POST", f"{base}/availability", {}, night
    if op == "get":
        return "GET", f"{base}/reservations/{rng.choice(hotel.reservation_ids)}", {}, None
    return "GET", f"{base}/reservations?arrival_date={day.isoformat()}&limit=50", {}, None


def measure_round(instance: Instance, rng: random.Random, per_op: int, **dates: Any
                  ) -> dict[str, float]:
    """The median milliseconds of `per_op` requests of each operation, one after another, each
    on a hotel of the instance's sample at random. A request that fails stops the run."""
    out = {}
    for op in OPERATIONS:
        times = []
        for _ in range(per_op):
            hotel = rng.choice(instance.hotels)
            method, path, extra, body = operation(op, hotel, rng, **dates)
            began = time.perf_counter()
            status = instance.send(method, path, {**hotel.headers, **extra}, body)
            times.append((time.perf_counter() - began) * 1000)
            if status >= 300:
                raise RuntimeError(f"{instance.name}: {method} {path} answered {status}")
        out[op] = statistics.median(times)
    return out


def warm_up(instance: Instance, rng: random.Random, *, days: int = DAYS, start: date = START
            ) -> None:
    """Every sampled hotel read once by each read operation, its search once per 30 days of the
    loaded range, before anything is measured: the steady state of a server whose traffic covers
    these hotels. Without it the chain's side measured first touches: the chain database (1.2 GB
    at 1,000 properties) is ten times this machine's shared_buffers (128 MB), so the first
    request of each of 200 hotels read its index and heap pages from the OS, while the one
    hotel's few pages were hot after its first requests (first run: search 1.21, booking 1.14;
    EXPLAIN of every statement showed index scans led by env_id and the property, the same plans
    as for one hotel). The sender keeps one connection, so one gunicorn worker serves it all."""
    for hotel in instance.hotels:
        for offset in range(0, days, 30):
            method, path, extra, body = operation("search", hotel, rng, days=1,
                                                  start=start + timedelta(days=offset))
            instance.send(method, path, {**hotel.headers, **extra}, body)
        for op in ("get", "list"):
            method, path, extra, body = operation(op, hotel, rng, days=days, start=start)
            instance.send(method, path, {**hotel.headers, **extra}, body)


def alternate(chain: Instance, one: Instance, *, rounds: int = ROUNDS, per_op: int = PER_OP,
              seed: int = 36, **dates: Any) -> dict[str, dict[str, Any]]:
    """Rounds A, B, A, B, ... (after `warm_up` and one round each, not counted); per operation the
    median over rounds of each instance's round median and the median of the per-round ratios
    chain / one hotel, with `passed` when that ratio is at most GOAL."""
    rng = random.Random(seed)
    for instance in (chain, one):
        warm_up(instance, rng, **dates)
        measure_round(instance, rng, per_op, **dates)
    seen: dict[str, list[dict[str, float]]] = {chain.name: [], one.name: []}
    for _ in range(rounds):
        for instance in (chain, one):
            seen[instance.name].append(measure_round(instance, rng, per_op, **dates))
    report = {}
    for op in OPERATIONS:
        a = [r[op] for r in seen[chain.name]]
        b = [r[op] for r in seen[one.name]]
        ratio = statistics.median(x / y for x, y in zip(a, b, strict=True))
        report[op] = {"chain_ms": round(statistics.median(a), 2),
                      "one_hotel_ms": round(statistics.median(b), 2),
                      "ratio": round(ratio, 3), "passed": ratio <= GOAL, "rounds": rounds,
                      "requests_per_round": per_op}
    return report


def http_send(base_url: str) -> Send:
    """A sender over one keep-alive HTTP connection (re-opened if the server closed it)."""
    host, port = base_url.split("//", 1)[1].split(":")
    conn = [http.client.HTTPConnection(host, int(port), timeout=60)]

    def send(method: str, path: str, headers: dict[str, str], body: Any) -> int:
        data = None if body is None else json.dumps(body).encode()
        hdrs = {**headers, **({"Content-Type": "application/json"} if data else {})}
        for attempt in (1, 2):
            try:
                conn[0].request(method, path, body=data, headers=hdrs)
                resp = conn[0].getresponse()
                resp.read()
                return resp.status
            except (http.client.HTTPException, ConnectionError):
                conn[0].close()
                conn[0] = http.client.HTTPConnection(host, int(port), timeout=60)
                if attempt == 2 or method != "GET":
                    raise
        raise AssertionError("unreachable")

    return send


def _analyze(url: str) -> None:
    import psycopg2

    conn = psycopg2.connect(url)
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("ANALYZE")
    finally:
        conn.close()


def one_hotel_rounds(bench: Any, loaded: list[Loaded], per_night: int) -> list[Any]:
    """A second database with one hotel (the same loader, the same rows per property), served by
    a second gunicorn with the same code and settings; the chain's app and this one measured in
    alternating rounds."""
    from bench import lib, pgdb
    from bench.lib import Measurement, Result
    from pms.db.database import db, init_db
    from pms.db.migrator import migrate

    rounds = int(os.environ.get("PMS_BENCH_CHAIN_ROUNDS", ROUNDS))
    per_op = int(os.environ.get("PMS_BENCH_CHAIN_PER_OP", PER_OP))
    rng = random.Random(36)
    chain_hotels = sample_hotels(loaded, bench.headers, rng)
    one_db = pgdb.create("pmsbench1h")
    try:
        migrate(one_db.owner_url, service_url=one_db.app_url)
        db.obj.close_all()
        init_db(one_db.app_url, pool_size=4)
        try:
            one_loaded = load_chain(bench, properties=1, tenants=1, per_night=per_night)
            one_hotels = sample_hotels(one_loaded, bench.headers, rng, per_hotel=SAMPLE)
        finally:
            db.obj.close_all()
            init_db(bench.settings.database_url, pool_size=8)
        _analyze(one_db.owner_url)
        env = {"PMS_DATABASE_URL": one_db.app_url, "PMS_MIGRATION_DATABASE_URL": one_db.owner_url}
        with bench.server(lib.APP_TARGET, env, ready_path="/v1/health",
                          ready_headers=bench.headers(uuid.uuid4())) as one_srv:
            chain = Instance("chain", http_send(bench.app().base_url), chain_hotels)
            one = Instance("one hotel", http_send(one_srv.base_url), one_hotels)
            bench.log(f"chain: alternating {rounds} rounds of {per_op} requests per operation "
                      f"({len(chain_hotels)} chain properties at random vs one hotel)")
            report = alternate(chain, one, rounds=rounds, per_op=per_op)
    finally:
        one_db.drop()
    results = []
    for op, row in report.items():
        verdict = "PASS" if row["passed"] else "FAIL"
        bench.log(f"chain: {op:8} chain {row['chain_ms']:.2f} ms, one hotel "
                  f"{row['one_hotel_ms']:.2f} ms, ratio {row['ratio']:.3f} -> {verdict} "
                  f"(goal: at most {GOAL:.2f})")
        results.append(Result(
            f"{op} on the chain / on one hotel (alternating rounds, median ms)",
            Measurement(rate=row["ratio"], unit="ratio", p50_ms=row["chain_ms"], extra=row),
            goal_text=f"<= {GOAL:.2f}", passed=row["passed"],
            note=f"chain {row['chain_ms']:.2f} ms vs one hotel {row['one_hotel_ms']:.2f} ms"))
    return results


def run(bench: Any) -> list[Any]:
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
    # before the audit, which moves every business date past the first loaded night
    rounds = one_hotel_rounds(bench, loaded, per_night)
    marks = tuple(n for n in (properties // 10, properties * 3 // 10, properties) if n)
    if os.environ.get("PMS_BENCH_CHAIN_AUDIT", "1") == "0":
        marks = ()
    # env by env, as --all runs them
    loaded.sort(key=lambda row: str(row[0]))
    cumulative = audit_all(bench, loaded, marks) if marks else {}
    results = [Result("chain load", Measurement(rate=properties / load_s, unit="properties/s",
                                                extra={"load_s": round(load_s, 1)}))]
    results += rounds
    for n, seconds in cumulative.items():
        results.append(Result(f"night audit of {n} properties (chain loaded)",
                              Measurement(rate=n / seconds, unit="properties/s",
                                          extra={"seconds": round(seconds, 2),
                                                 "ms_per_property": round(1000 * seconds / n, 1)}),
                              note=f"{1000 * seconds / n:.1f} ms per property"))
    return results
