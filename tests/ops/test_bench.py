"""The benchmark harness's own parts: scenario discovery, medians, CPU accounting from /proc, and
the wrk driver (unique Idempotency-Key and body per request, the BENCHJSON summary) against a
small recording HTTP server; statement and round-trip counting (on PostgreSQL, through the floor
and through the real app), CPU parsing from /proc, the summary table, and the floor's booking.
Nothing here passes or fails on a timing."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import threading
import uuid
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from falcon import testing

from bench import budgets, cpu, floor_app, lib, run, statements
from bench.scenarios import floor, properties, reservations
from pms.app import create_app
from pms.context import system_ctx
from pms.models.platform import outbox_partition


def test_scenarios_are_discovered_in_order_with_a_run_function():
    found = run.discover()
    assert "properties" in found
    assert list(found)[0] == "properties"
    assert all(callable(module.run) for module in found.values())


def test_median_measurement_takes_medians_and_keeps_every_run():
    runs = [lib.Measurement(rate=r, p50_ms=p, p99_ms=p * 3, errors=e,
                            extra={"server_cpu_ms_per_req": c})
            for r, p, e, c in ((100, 1.0, 0, 0.5), (300, 3.0, 1, 0.7), (200, 2.0, 0, 0.6))]
    m = lib.median_measurement(runs)
    assert (m.rate, m.p50_ms, m.p99_ms, m.errors) == (200, 2.0, 6.0, 1)
    assert m.extra == {"server_cpu_ms_per_req": 0.6}
    assert [r["rate"] for r in m.runs] == [100, 300, 200]


def test_cpu_of_a_process_tree_is_read_from_proc():
    import time

    spent = lib.tree_cpu_seconds(os.getpid())
    # /proc counts in clock ticks (10 ms): burn CPU until at least a few ticks went by (a fixed
    # amount of work took less than one tick on a fast machine, and the test flaked)
    start = time.process_time()
    while time.process_time() - start < 0.05:
        sum(i * i for i in range(10_000))
    assert lib.tree_cpu_seconds(os.getpid()) > spent


class _Recorder(BaseHTTPRequestHandler):
    seen: list[tuple[str | None, bytes]] = []
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with self.lock:
            self.seen.append((self.headers.get("Idempotency-Key"), body))
        self.send_response(201)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_the_wrk_driver_sends_unique_keys_and_bodies_and_reports():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    bench = lib.Bench(duration=1, runs=1, connections=4, wrk_threads=2)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        m = bench.wrk_once(url, method="POST", path="/x", headers={"X-Test": "1"},
                           body_template=json.dumps({"email": "g-{{n}}@bench.example"}),
                           unique=True)
    finally:
        server.shutdown()
        bench.close()
    seen = list(_Recorder.seen)
    assert m.rate > 0 and m.errors == 0 and m.p50_ms is not None
    assert m.extra["requests"] >= len(seen) - 8  # wrk may not count the last in-flight ones
    keys = [k for k, _ in seen]
    bodies = [b for _, b in seen]
    assert len(set(keys)) == len(keys) and None not in keys
    assert len(set(bodies)) == len(bodies)
    assert all(b"{{n}}" not in b and json.loads(b)["email"].startswith("g-") for b in bodies)


def test_paired_runs_alternate_and_take_the_median_of_per_pair_ratios():
    bench = lib.Bench(duration=1, runs=3)
    order: list[str] = []
    base_rates = iter([100.0, 200.0, 50.0])
    subject_rates = iter([30.0, 80.0, 10.0])

    def baseline() -> lib.Measurement:
        order.append("B")
        return lib.Measurement(rate=next(base_rates))

    def subject() -> lib.Measurement:
        order.append("S")
        return lib.Measurement(rate=next(subject_rates))

    try:
        base, measured, ratio = bench.paired(baseline, subject)
    finally:
        bench.close()
    assert order == ["B", "S", "B", "S", "B", "S"]
    assert (base.rate, measured.rate) == (100.0, 30.0)
    assert ratio == 0.3  # pair ratios 0.3, 0.4, 0.2; the ratio of the medians is also 0.3 here
    result = lib.Result("subject", measured, baseline="bare_falcon", goal=0.3, paired_ratio=ratio)
    assert bench.ratio(result) == 0.3


# -- statements and round trips (bench/statements.py) ------------------------------------------

def test_statements_are_counted_between_semicolons_outside_quotes_and_comments():
    count = statements.count_statements
    assert count("SELECT 1") == 1
    assert count("BEGIN; SELECT set_config('a', 'b', true); SELECT 1;") == 3
    assert count("SELECT 'a;b', \"odd;name\" FROM t; ") == 1
    assert count("SELECT 'it''s; fine'; SELECT 2") == 2
    assert count("SELECT 1 -- a; comment\n; /* x; y */ SELECT 2") == 2
    assert count("CREATE FUNCTION f() RETURNS int AS $body$ BEGIN; RETURN 1; END $body$ "
                 "LANGUAGE plpgsql; SELECT $$;;$$") == 2
    assert count(";;  ;") == 0
    assert count(b"COMMIT") == 1


@pytest.mark.postgres
def test_round_trips_are_executes_and_psycopg2s_own_begin_and_commit(pg_database):
    tally = statements.Tally()
    conn = statements.counting_connect(pg_database.app_url, tally)
    try:
        with conn.cursor() as cur:  # not autocommit: psycopg2 sends its own BEGIN first
            cur.execute("SELECT 1; SELECT %s", (2,))
            assert cur.fetchone() == (2,)
            cur.executemany("SELECT %s", [(1,), (2,), (3,)])
        conn.commit()
        assert tally.snapshot() == (1 + 1 + 3 + 1, 1 + 2 + 3 + 1, 1)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("BEGIN; SELECT 1; COMMIT")
        conn.commit()  # nothing open: psycopg2 sends nothing, nothing is counted
        assert tally.snapshot() == (7, 10, 2)
    finally:
        conn.close()


# what the bench's seeding helpers take of a Bench: a machine ctx in the bound database
_SEEDER = SimpleNamespace(seed_ctx=lambda env_id=None: system_ctx(env_id, sub="bench-test"))


def _small_hotel(monkeypatch: pytest.MonkeyPatch) -> dict:
    """One room type with one room and one rate plan priced for 20 days, calendar made ahead,
    seeded through the services into the bound PostgreSQL database."""


    monkeypatch.setattr(reservations, "ROOM_TYPES", 1)
    monkeypatch.setattr(reservations, "ROOMS_PER_TYPE", 1)
    monkeypatch.setattr(reservations, "DAYS", 20)
    seeder = _SEEDER
    env_id = uuid.uuid4()
    hotel_id, plan_id, type_ids, today = reservations.seed_hotel(seeder, env_id)
    reservations.make_calendar(seeder, env_id, hotel_id, type_ids, today)
    return {"env": env_id, "hotel": hotel_id, "plan": plan_id, "type": type_ids[0],
            "today": today}


def _floor_call(h: dict, arrival_in: int, key: str) -> statements.Call:
    body = (reservations.body_template(h["plan"]).replace("{{rt}}", h["type"])
            .replace("{{arr}}", (h["today"] + timedelta(days=arrival_in)).isoformat())
            .replace("{{dep}}", (h["today"] + timedelta(days=arrival_in + 2)).isoformat())
            .replace("{{n}}", key))
    return statements.Call("POST", f"/v1/properties/{h['hotel']}/reservations", body,
                           {"X-Platform-Env-Id": str(h["env"]), "Idempotency-Key": key})


@pytest.mark.postgres
def test_the_floor_books_in_three_round_trips_and_twelve_statements(pg_db, pg_database, monkeypatch):
    h = _small_hotel(monkeypatch)
    tally = statements.Tally()
    app = floor_app.create_app(lambda: statements.counting_connect(pg_database.app_url, tally))
    booked = statements.run_pass(app, tally, [_floor_call(h, 2, uuid.uuid4().hex),
                                              _floor_call(h, 5, uuid.uuid4().hex)])
    assert booked.statuses == {201: 2}
    # BEGIN; 3 SET LOCAL; refs | lock | UPDATE; 4 INSERTs; COMMIT
    assert (booked.round_trips_per_req, booked.statements_per_req) == (
        budgets.BOOKING_WITH_KEY.floor, 12)
    assert booked.transactions_per_req == 1 and (booked.round_trips_min, booked.round_trips_max) == (3, 3)
    # the one room is sold on those nights: refs, lock, ROLLBACK; nothing written
    sold_out = statements.run_pass(app, tally, [_floor_call(h, 3, uuid.uuid4().hex)])
    assert sold_out.statuses == {409: 1} and sold_out.round_trips_per_req == 3
    from pms.db.scope import tenant_scope
    from pms.models import AuditEntry, IdempotencyRecord, InventoryDay, OutboxEvent, Reservation

    with tenant_scope(h["env"]):
        made = list(Reservation.select())
        assert len(made) == 2 and {r.version for r in made} == {1}
        assert sum(d.sold for d in InventoryDay.select()) == 4
        ids = {str(r.id) for r in made}
        assert {e.subject for e in OutboxEvent.select().where(OutboxEvent.subject.in_(ids))} == ids
        events = OutboxEvent.select().where(OutboxEvent.subject.in_(ids))
        assert all(e.partition == outbox_partition(e.subject) for e in events)
        assert AuditEntry.select().where(AuditEntry.target_id.in_(ids)).count() == 2
        assert IdempotencyRecord.select().count() == 2


@pytest.mark.postgres
def test_the_floor_reads_a_property_in_one_round_trip_as_the_service_shows_it(
        pg_db, pg_database, base_settings):
    from pms.devkeys import mint_token

    env = uuid.uuid4()
    prop = properties.seed_property(_SEEDER, env)
    tally = statements.Tally()
    app = floor_app.create_app(lambda: statements.counting_connect(pg_database.app_url, tally))
    read = statements.Call("GET", f"/v1/properties/{prop}", None, {"X-Platform-Env-Id": str(env)})
    counts = statements.run_pass(app, tally, [read] * 2)
    # 3 SET LOCAL + the SELECT, one implicit transaction, as the service sends it
    assert counts.statuses == {200: 2}
    assert (counts.round_trips_per_req, counts.statements_per_req) == (budgets.GET_PROPERTY.floor, 4)
    other_env = statements.Call("GET", f"/v1/properties/{prop}", None,
                                {"X-Platform-Env-Id": str(uuid.uuid4())})
    assert statements.run_pass(app, tally, [other_env]).statuses == {404: 1}  # RLS and the filter
    floor_doc = testing.TestClient(app).simulate_get(f"/v1/properties/{prop}",
                                                     headers={"X-Platform-Env-Id": str(env)}).json
    service = testing.TestClient(create_app(base_settings.with_(database_url=pg_database.app_url)))
    token = mint_token(base_settings, env_id=env)
    ours = service.simulate_get(f"/v1/properties/{prop}", headers={
        "Authorization": f"Bearer {token}", "X-Platform-Env-Id": str(env)}).json
    assert floor_doc == {k: ours[k] for k in floor_doc}  # the same document, field for field


@pytest.mark.postgres
@pytest.mark.parametrize(("prefix", "round_trips", "statement_count"), [
    ("", budgets.PROFILE_CREATE_WITH_KEY.floor, 10),  # BEGIN; 3 SET LOCAL; refs | 4 INSERTs; COMMIT
    (floor_app.ONE_CALL_PREFIX, 1, 4),  # 3 SET LOCAL; the function's call (implicit transaction)
], ids=["two-round-trips", "one-call"])
def test_the_floor_creates_a_profile_with_its_rows(pg_db, pg_database, prefix, round_trips,
                                                   statement_count):
    """The profile floor, by hand in 2 round trips and as one PL/pgSQL call: the same rows,
    the same answers."""
    env = uuid.uuid4()
    prop = properties.seed_property(_SEEDER, env)
    if prefix:
        floor_app.install_one_call(pg_database.owner_url)
    tally = statements.Tally()
    app = floor_app.create_app(lambda: statements.counting_connect(pg_database.app_url, tally))

    def create(email: str, key: str, property_id: str = prop) -> statements.Call:
        return statements.Call(
            "POST", f"{prefix}/v1/properties/{property_id}/profiles",
            json.dumps({"first_name": "Ada", "last_name": "Floor", "email": email}),
            {"X-Platform-Env-Id": str(env), "Idempotency-Key": key})

    made = statements.run_pass(app, tally, [create("a@floor.example", "k1"),
                                            create("b@floor.example", "k2")])
    assert made.statuses == {201: 2}
    assert (made.round_trips_per_req, made.statements_per_req) == (round_trips, statement_count)
    # a reused key is refused and rolled back; a known email is that profile (ensure); no
    # property, no profile
    again = statements.run_pass(app, tally, [create("c@floor.example", "k1"),
                                             create("A@floor.example ", "k3"),
                                             create("d@floor.example", "k4", str(uuid.uuid4()))])
    assert again.statuses == {409: 1, 200: 1, 404: 1}
    from pms.db.scope import tenant_scope
    from pms.models import AuditEntry, IdempotencyRecord, OutboxEvent, Profile

    with tenant_scope(env):
        profiles = list(Profile.select())
        assert sorted(p.email for p in profiles) == ["a@floor.example", "b@floor.example"]
        ids = {str(p.id) for p in profiles}
        events = list(OutboxEvent.select().where(OutboxEvent.subject.in_(ids)))
        assert {e.subject for e in events} == ids
        assert all(e.partition == outbox_partition(e.subject) and e.aggregate_version == 1
                   for e in events)
        assert AuditEntry.select().where(AuditEntry.target_id.in_(ids)).count() == 2
        assert IdempotencyRecord.select().count() == 2


@pytest.mark.postgres
def test_a_counting_pass_goes_through_the_real_app_and_restores_the_binding(
        pg_db, pg_database, base_settings):
    from pms.db.database import db as proxy
    from pms.devkeys import mint_token

    h_env = uuid.uuid4()
    prop = properties.seed_property(_SEEDER, h_env)
    headers = {"Authorization": f"Bearer {mint_token(base_settings, env_id=h_env)}",
               "X-Platform-Env-Id": str(h_env)}
    read = statements.Call("GET", f"/v1/properties/{prop}", None, headers)
    settings = base_settings.with_(database_url=pg_database.app_url)
    counts = statements.count_service(settings, [read] * 3, warmup=[read])
    assert counts.statuses == {200: 3} and counts.requests == 3
    assert counts.round_trips_per_req >= 1
    assert counts.statements_per_req >= counts.round_trips_per_req  # the settings ride along
    assert proxy.obj is pg_db
    extra = counts.extra()
    assert {"statements_per_req", "round_trips_per_req", "commits_per_req"} <= set(extra)


# -- CPU from /proc (bench/cpu.py) ---------------------------------------------------------------

def test_proc_stat_is_parsed_after_the_last_parenthesis():
    # comm may hold spaces and ')' ; fields after it: state ppid ... utime stime cutime cstime
    line = "4242 (gunicorn: (worker) x) S 4200 " + " ".join(["0"] * 9) + " 150 50 30 20 0 0\n"
    found = cpu.parse_stat(line, ticks=100)
    assert (found.ppid, found.own, found.reaped) == (4200, 2.0, 0.5)
    assert cpu.parse_schedstat("1234567890 55 7\n") == pytest.approx(1.23456789)


def test_tree_cpu_counts_the_root_its_reaped_and_its_live_children_only(tmp_path):
    def proc(pid: int, ppid: int, utime: int, cutime: int = 0) -> None:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(
            f"{pid} (p) S {ppid} " + " ".join(["0"] * 9) + f" {utime} 0 {cutime} 0 0 0\n")

    proc(10, 1, utime=100, cutime=300)  # the master, with exited workers' CPU reaped
    proc(11, 10, utime=200)
    proc(12, 10, utime=50)
    proc(13, 11, utime=999)  # a grandchild: not gunicorn's
    proc(14, 1, utime=999)
    (tmp_path / "self").mkdir()
    assert cpu.tree_seconds(10, proc=str(tmp_path)) == pytest.approx((100 + 300 + 200 + 50) / cpu.TICKS)


def test_cpu_deltas_are_per_pid_and_a_vanished_backend_is_reported_not_subtracted():
    before = {1: 1.0, 2: 5.0, 3: 2.0}
    after = {1: 1.5, 3: 2.25, 4: 0.5}  # 2 ended during the run, 4 started
    spent, lost = cpu.delta(before, after)
    assert spent == pytest.approx(0.5 + 0.25 + 0.5)
    assert lost == 1


def test_backend_cpu_of_this_process_is_read_exactly():
    seconds = cpu.single_thread_seconds(os.getpid())
    assert seconds is not None and seconds > 0
    assert cpu.single_thread_seconds(2 ** 22 + 12345) is None


@pytest.mark.postgres
def test_in_process_cpu_counts_this_process_and_a_closed_backends_server_cpu(pg_database):
    """The relay and night audit scenarios run the service's code in the bench's own process;
    their CPU per event or stay is this process's and the whole PostgreSQL server's, and a
    backend that exited before the sample (the relay closes its connections) still counts."""
    import time

    import psycopg2

    bench = lib.Bench(log=lambda _: None)
    before = bench.here_sample()
    assert before[1] is not None, "the PostgreSQL server's CPU is not readable from /proc"
    start = time.process_time()
    while time.process_time() - start < 0.05:
        sum(i * i for i in range(10_000))
    conn = psycopg2.connect(pg_database.owner_url)
    with conn.cursor() as cur:  # some 50+ ms of server CPU, then the backend exits
        cur.execute("SELECT sum(g::bigint * g) FROM generate_series(1, 3000000) g")
    conn.close()
    deadline = time.monotonic() + 10
    extra = bench.here_extra(before, 10)
    while extra["db_cpu_ms_per_req"] < 3 and time.monotonic() < deadline:
        time.sleep(0.1)  # the postmaster reaps the backend (and counts its CPU) on SIGCHLD
        extra = bench.here_extra(before, 10)
    assert extra["server_cpu_ms_per_req"] >= 4  # >= 50 ms over 10 units
    assert extra["db_cpu_ms_per_req"] >= 3


# -- the report ----------------------------------------------------------------------------------

def test_the_table_shows_cpu_statements_round_trips_ratio_and_verdict():
    m = lib.Measurement(rate=120.0, p50_ms=30.0, p99_ms=90.0, extra={
        "server_cpu_ms_per_req": 7.5, "db_cpu_ms_per_req": 4.25, "statements_per_req": 25.0,
        "round_trips_per_req": 19.0})
    line = {**dataclasses.asdict(lib.Result("POST reservation", m, baseline="pgbench_tpcb_like",
                                            goal=0.25)), "ratio": 0.1, "passed": False}
    report = {"results": [line], "commit": "abc1234",
              "settings": {"runs": 3, "duration_s": 5, "connections": 32, "cpus": 2,
                           "gunicorn": {}, "broker_url": "stub://",
                           "load_average_before": [1.0], "load_average_after": [2.0]}}
    text = run.format_table(report)
    header, _, row = text.splitlines()[:3]
    for title in ("srv ms", "db ms", "stmts", "RTs", "ratio"):
        assert title in header
    assert row.split()[:2] == ["POST", "reservation"]
    for cell in ("120.0", "7.500", "4.250", "25.0", "19.0", "0.10", ">=0.25", "MISSED"):
        assert cell in row.split()
    assert "commit abc1234" in text


def test_the_floor_helpers_agree_with_the_service():
    for subject in (str(uuid.uuid4()) for _ in range(20)):
        assert floor_app.partition_of(subject) == outbox_partition(subject)
    assert floor_app.sellable(rooms=10, blocked=1, sold=8, sell_limit=None) == 1
    assert floor_app.sellable(rooms=10, blocked=0, sold=5, sell_limit=5) == 0
    pairs = [(lib.Measurement(rate=1, extra={"server_cpu_ms_per_req": s, "db_cpu_ms_per_req": d}),
              lib.Measurement(rate=1, extra={"server_cpu_ms_per_req": 1.0, "db_cpu_ms_per_req": 1.0}))
             for s, d in ((4.0, 2.0), (8.0, 4.0), (2.0, 2.0))]
    assert floor.cpu_ratio(pairs) == 3.0  # per-pair 3, 6, 2
    assert floor.cpu_ratio([(lib.Measurement(rate=1), lib.Measurement(rate=1))]) is None


# -- the in-process measurement (bench/inprocess.py) ----------------------------------------------

def test_inprocess_times_each_statement_text_and_documents_its_cases(pg_database, capsys):
    import psycopg2

    from bench import inprocess

    timings = inprocess._Timings()
    conn = psycopg2.connect(pg_database.app_url, connection_factory=timings.connection_factory())
    try:
        with conn.cursor() as cur:
            for _ in range(3):
                cur.execute("SELECT   1\n")
            cur.execute("SELECT %s", (2,))
    finally:
        conn.close()
    assert {text: count for text, (count, _) in timings.by_text.items()} == {
        "SELECT 1": 3, "SELECT %s": 1}
    assert all(total > 0 for _, total in timings.by_text.values())
    with pytest.raises(SystemExit) as done:
        inprocess.main(["--help"])
    assert done.value.code == 0
    shown = capsys.readouterr().out
    assert all(case in shown for case in inprocess.CASES) and "--floor" in shown


@pytest.mark.postgres
def test_inprocess_measures_the_floor_of_a_case_and_refuses_a_case_without_one(pg_database):
    """`--floor` sends the case's requests to the hand-written floor: its lines say so and its
    statements are the floor's (the read without peewee's quoting)."""
    from bench import inprocess

    lines: list[str] = []
    inprocess.run("get", 5, 1, False, out=lines.append, floor=True)
    rounds = [line for line in lines if "of CPU per request" in line]
    assert len(rounds) == 3 and all(line.startswith("floor get: app ") for line in rounds)
    assert any("app.env_id = %(env)s; SELECT id," in line for line in lines)
    with pytest.raises(SystemExit, match="no floor for 'availability'"):
        inprocess.run("availability", 5, 1, False, out=lines.append, floor=True)


@pytest.mark.postgres
def test_inprocess_availability_case_searches_the_scenarios_hotel_with_whole_statements(
        pg_database):
    """The `availability` case sends the availability scenario's 30-night search through the
    real app (every answer a 200, or the run stops), and `width` shows statements whole."""
    from bench import inprocess

    lines: list[str] = []
    inprocess.run("availability", 3, 1, False, out=lines.append, width=5000)
    rounds = [line for line in lines if "of CPU per request" in line]
    assert len(rounds) == 3 and all(line.startswith("availability: app ") for line in rounds)
    statements = [line for line in lines if " ms  " in line]
    # (the rates come from the month cache after the warm-up: the restrictions' read is there)
    assert any('FROM "restriction"' in line and line.rstrip().endswith('"date" <= %s))')
               for line in statements), statements


def test_tpcb_interleaved_runs_between_the_subjects_and_every_ratio_takes_all_its_runs():
    """A tpcb-like run before each round of the subjects' runs; the tpcb-like line, and so
    every ratio to it, is the median of ALL its runs (the first, unpaired ones included), not
    the one just before a subject's run."""
    bench = lib.Bench(duration=1, runs=3)
    order: list[str] = []
    tpcb_rates = iter([1000.0, 900.0, 100.0, 200.0, 50.0])
    rates = {"S1": iter([10.0, 120.0, 40.0]), "S2": iter([10.0, 100.0, 45.0])}

    def pgbench_once(mode: str) -> lib.Measurement:
        assert mode == "tpcb-like"
        order.append("T")
        measured = lib.Measurement(rate=next(tpcb_rates), unit="tps")
        bench._tpcb_runs.append(measured)
        return measured

    def subject(name: str):
        def run() -> lib.Measurement:
            order.append(name)
            return lib.Measurement(rate=next(rates[name]))
        return run

    bench._pgbench_ready = True  # no pgbench -i: the runs are the fakes above
    bench._pgbench_once = pgbench_once  # type: ignore[method-assign]
    try:
        for _ in range(2):  # as baseline("pgbench_tpcb_like") measures it first
            pgbench_once("tpcb-like")
        order.clear()
        s1, s2 = bench.tpcb_interleaved(subject("S1"), subject("S2"))
    finally:
        bench.close()
    assert order == ["T", "S1", "S2"] * 3
    assert (s1.rate, s2.rate) == (40.0, 45.0)
    line = bench.baselines["pgbench_tpcb_like"]
    assert line.measurement.rate == 200.0 and "all its 5 runs" in line.note
    # 40 / 200 (the per-pair ratios 0.1, 0.6, 0.8 would give 0.6)
    assert bench.ratio(lib.Result("S1", s1, baseline="pgbench_tpcb_like", goal=0.25)) == 0.2


# -- the floors of the rest of a stay (bench/floor_stay.py) ---------------------------------------

_STAY_TABLES = ("reservation", "room", "room_stay", "folio", "folio_charge", "folio_payment",
                "ledger_posting", "audit_entry", "outbox_event", "digital_key")
_OWN_KEYS = {"id", "reservation_id", "parent_id", "created_at", "updated_at", "closed_at",
             "checked_in_at", "checked_out_at", "room_id", "room_number", "confirmation_number",
             "guest_last_name"}


def _rows(url: str, env: uuid.UUID) -> dict[str, dict[str, dict]]:
    """Every row of the env in the tables a stay's use cases write, by table and id."""
    import psycopg2
    import psycopg2.extras

    conn = psycopg2.connect(url)
    try:
        with conn, conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
            cur.execute("SELECT set_config('app.env_id', %s, false)", (str(env),))
            found = {}
            for table in _STAY_TABLES:
                cur.execute(f"SELECT * FROM {table} WHERE env_id = %s", (str(env),))
                found[table] = {str(r["id"]): dict(r) for r in cur.fetchall()}
            return found
    finally:
        conn.close()


def _written(before: dict, after: dict) -> dict[str, list]:
    """What a request wrote, in a form two stays can share: per table, the new rows, the
    changed columns of the rows it updated and the number it deleted, without ids, times and
    the stay's own numbers."""
    def plain(row: dict) -> dict:
        out = {}
        for k, v in row.items():
            if k in _OWN_KEYS or k.endswith("_id") or k in {"time", "next_attempt_at",
                                                          "posted_at", "request_id",
                                                          "actor_sub", "actor_kind",
                                                          "external_id", "lease_until",
                                                          "subject", "partition"}:
                continue
            if k in {"data", "after", "before"}:
                v = None if v is None else sorted(v)  # the document's fields
            elif k in {"idempotency_key", "memo", "description"}:
                v = str(v).split(":")[0].split(" ")[0]
            out[k] = v
        return out

    shape: dict[str, list] = {}
    for table in _STAY_TABLES:
        old, new = before[table], after[table]
        made = sorted((plain(r) for i, r in new.items() if i not in old), key=repr)
        changed = sorted((sorted(k for k in r if r[k] != old[i][k] and k != "updated_at"),
                          {k: r[k] for k in ("status", "hk_status", "version") if k in r
                           and r[k] != old[i][k]})
                         for i, r in new.items() if i in old and r != old[i])
        shape[table] = [made, sorted(changed, key=repr), len(set(old) - set(new))]
    return shape


def _same_document(ours: object, theirs: object, path: str = "") -> None:
    """The floor's answer and the service's, field for field (a stay's own ids, times and
    numbers only present alike)."""
    if isinstance(ours, dict):
        assert isinstance(theirs, dict) and set(ours) == set(theirs), (path, ours, theirs)
        for key in ours:
            if key in _OWN_KEYS or key.endswith("_id") or key == "description":
                assert (ours[key] is None) == (theirs[key] is None), (path + key)
            else:
                _same_document(ours[key], theirs[key], f"{path}{key}.")
    elif isinstance(ours, list):
        assert isinstance(theirs, list) and len(ours) == len(theirs), (path, ours, theirs)
        for a, b in zip(ours, theirs, strict=True):
            _same_document(a, b, path)
    else:
        assert ours == theirs, (path, ours, theirs)


@pytest.fixture
def stay_pair(pg_db, pg_database, base_settings, monkeypatch):
    """A hotel of the front desk's bench (ROOM and FB codes, 7% VAT inclusive) with stays
    arriving today, the service's HTTP app and the floor's, each over a counting connection."""
    from bench.scenarios import frontdesk
    from pms.devkeys import mint_token

    monkeypatch.setattr(frontdesk, "ROOM_TYPES", 1)
    env = uuid.uuid4()
    hotel = frontdesk.seed(_SEEDER, env, 8)
    tally = statements.Tally()
    floor_wsgi = floor_app.create_app(
        lambda: statements.counting_connect(pg_database.app_url, tally))
    service = testing.TestClient(create_app(base_settings.with_(database_url=pg_database.app_url)))
    headers = {"X-Platform-Env-Id": str(env)}
    return SimpleNamespace(
        env=env, hotel=hotel, base=f"/v1/properties/{hotel['hotel_id']}", tally=tally,
        floor_wsgi=floor_wsgi, floor=testing.TestClient(floor_wsgi), service=service,
        headers=headers, service_headers={
            **headers, "Authorization": f"Bearer {mint_token(base_settings, env_id=env)}"},
        url=pg_database.owner_url, frontdesk=frontdesk)


def _both(pair, suffix_of, body: str | None, *, service_first: object, floor_first: object):
    """The same request to the service (on one stay or folio) and to the floor (on its twin),
    each with the rows it wrote and its answer; the floor's round trips and COMMITs counted."""
    json_headers = {"Content-Type": "application/json"} if body is not None else {}
    before = _rows(pair.url, pair.env)
    ours = pair.service.simulate_post(f"{pair.base}/{suffix_of(service_first)}", body=body,
                                      headers={**pair.service_headers, **json_headers})
    middle = _rows(pair.url, pair.env)
    start = pair.tally.snapshot()
    theirs = pair.floor.simulate_post(f"{pair.base}/{suffix_of(floor_first)}", body=body,
                                      headers={**pair.headers, **json_headers})
    end = pair.tally.snapshot()
    after = _rows(pair.url, pair.env)
    counted = SimpleNamespace(round_trips=end[0] - start[0], commits=end[2] - start[2])
    return ours, _written(before, middle), theirs, counted, _written(middle, after), after


@pytest.mark.postgres
@pytest.mark.parametrize("use_case", ["charge", "card payment"])
def test_the_folio_floors_write_what_the_service_writes_and_answer_alike(stay_pair, use_case):
    """A charge (F&B, the 7% VAT line inside) and a card payment through the sandbox: the
    floor on one folio, the service on its twin (both just checked in): the same rows (lines,
    payment, ledger posting POSTED after the commit, audit and outbox rows of the same types
    and versions, the folio's version), the same answer field for field, and the floor's
    round trips its budget's floor plus the ledger's POSTED mark."""
    pair = stay_pair
    fd = pair.frontdesk
    stays = fd.book(_SEEDER, pair.env, pair.hotel, 2)
    from pms.schemas.reservations import CheckInIn
    from pms.services.frontdesk import checkin

    for rid in stays:
        checkin.check_in(_SEEDER.seed_ctx(pair.env), uuid.UUID(pair.hotel["hotel_id"]),
                         uuid.UUID(rid), CheckInIn())
    ours_folio, floor_folio = fd.folios_of(_SEEDER, pair.env, stays)
    suffix, body, budget = {"charge": ("charges", fd.CHARGE, budgets.CHARGE),
                            "card payment": ("payments", fd.PAYMENT, budgets.CARD_PAYMENT)}[use_case]
    ours, ours_rows, theirs, counted, floor_rows, after = _both(
        pair, lambda f: f"folios/{f}/{suffix}", body, service_first=ours_folio,
        floor_first=floor_folio)
    assert ours.status_code == theirs.status_code == 201
    assert floor_rows == ours_rows
    _same_document(theirs.json, ours.json)
    assert counted.round_trips == budget.floor + 1  # + the POSTED mark after COMMIT
    assert counted.commits == budget.commits
    assert all(e["partition"] == outbox_partition(e["subject"])
               for e in after["outbox_event"].values())
    postings = list(after["ledger_posting"].values())
    assert postings and {p["status"] for p in postings} == {"POSTED"}
    # sent again on the twin folios (each now one change further)
    theirs = pair.floor.simulate_post(f"{pair.base}/folios/{floor_folio}/{suffix}", body=body,
                                      headers={**pair.headers, "Content-Type": "application/json"})
    ours = pair.service.simulate_post(f"{pair.base}/folios/{ours_folio}/{suffix}", body=body,
                                      headers={**pair.service_headers,
                                               "Content-Type": "application/json"})
    assert theirs.status_code == ours.status_code == 201
    _same_document(theirs.json, ours.json)
    missing = pair.floor.simulate_post(f"{pair.base}/folios/{uuid.uuid4()}/{suffix}", body=body,
                                       headers={**pair.headers,
                                                "Content-Type": "application/json"})
    assert missing.status_code == 404


@pytest.mark.postgres
@pytest.mark.parametrize("use_case", ["check-in", "check-out"])
def test_the_stay_floors_write_what_the_service_writes_and_answer_alike(stay_pair, use_case):
    """Check-in with the room picked by the rule (a one-night stay arriving today) and
    check-out of a stay checked in and paid (its room night posted with its tax, the folio
    closed at zero, the room VACANT and DIRTY, the holds released): the floor on one stay, the
    service on its twin: the same rows (types, counts, statuses, versions; audit and outbox
    of the same types at the same versions), the same answer field for field, the floor's
    round trips its budget's floor; the stay once done is refused (409), an unknown one 404."""
    pair = stay_pair
    fd = pair.frontdesk
    stays = fd.book(_SEEDER, pair.env, pair.hotel, 2)
    if use_case == "check-out":
        fd.check_in_and_pay(_SEEDER, pair.env, pair.hotel["hotel_id"], stays)
    budget = {"check-in": budgets.CHECK_IN, "check-out": budgets.CHECK_OUT}[use_case]
    body = "{}" if use_case == "check-in" else None
    ours, ours_rows, theirs, counted, floor_rows, after = _both(
        pair, lambda r: f"reservations/{r}/{use_case}", body, service_first=stays[0],
        floor_first=stays[1])
    assert ours.status_code == theirs.status_code == 200
    assert floor_rows == ours_rows
    _same_document(theirs.json, ours.json)
    assert counted.round_trips == budget.floor
    assert counted.commits == budget.commits
    assert all(e["partition"] == outbox_partition(e["subject"])
               for e in after["outbox_event"].values())
    done = {r["status"] for r in after["reservation"].values()}
    assert done == {"CHECKED_IN" if use_case == "check-in" else "CHECKED_OUT"}
    again = pair.floor.simulate_post(f"{pair.base}/reservations/{stays[1]}/{use_case}",
                                     body=body, headers=pair.headers)
    assert again.status_code == 409
    assert after["reservation"][stays[1]]["version"] == theirs.json["version"]
    unknown = pair.floor.simulate_post(f"{pair.base}/reservations/{uuid.uuid4()}/{use_case}",
                                       body=body, headers=pair.headers)
    assert unknown.status_code == 404


def test_the_front_desk_pairs_show_cpu_over_the_floor_and_why_the_service_sends_more():
    """Each front-desk use case: the floor's line, the service's, and the CPU ratio (median
    of the per-pair ratios) whose note shows both round-trip counts, and the budget's reason
    only where they differ."""
    from bench.scenarios import frontdesk

    def m(server: float, rts: float | None = None) -> lib.Measurement:
        extra = {"server_cpu_ms_per_req": server, "db_cpu_ms_per_req": 1.0}
        if rts is not None:
            extra["round_trips_per_req"] = rts
        return lib.Measurement(rate=1, extra=extra)

    logged: list[str] = []
    bench = SimpleNamespace(log=logged.append)
    service_runs, floor_runs = [m(3.0), m(5.0), m(2.0)], [m(1.0), m(1.0), m(1.0)]
    lines = frontdesk._pairs(bench, "POST check-in", budgets.CHECK_IN, m(3.0, 4.0), m(1.0, 2.0),
                             service_runs, floor_runs)
    assert [r.name for r in lines] == ["floor: POST check-in by hand (psycopg2, bare Falcon)",
                                       "POST check-in", "POST check-in: CPU / floor CPU "
                                       "(server + db per request)"]
    assert lines[2].paired_ratio == 2.0  # per pair 4/2, 6/2, 3/2
    assert "service 4.0, floor 2.0" in lines[2].note and budgets.CHECK_IN.why in lines[2].note
    same = frontdesk._pairs(bench, "POST charge", budgets.CHARGE, m(3.0, 3.0), m(1.0, 3.0),
                            service_runs, floor_runs)
    assert budgets.CHARGE.why not in same[2].note and "service 3.0, floor 3.0" in same[2].note
    assert len(logged) == 2
