"""Reads from a real hot standby with read-your-writes.

The fixture starts a primary and a streaming standby of it (`pg_basebackup`), the standby
replaying 2 s behind (`recovery_min_apply_delay`), and serves the app with the primary as its
database and the standby in `ReplicaSet`. What must hold:

- 0 stale reads in 1,000 write-then-read pairs (PUT a property's name, GET it back), while
  another caller who writes nothing reads the list beside it and is served by the standby at
  least half of the time; the control run (the same pairs with the callers' marks deleted
  after each write, i.e. without the guard) reads stale data from the standby;
- the standby killed in the middle of a run of reads costs no request;
- a "replica" that is not a standby (the primary itself) never serves.

CI runs these (`make test`; postgres-marked: they fail loudly under CI=true when PostgreSQL's
binaries are missing).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import falcon.testing
import psycopg2
import pytest

from bench import throwaway
from pms.api.readroute import PRIMARY_READS, replica_read
from pms.app import create_app
from pms.db.database import db as db_proxy
from pms.db.database import make_database
from pms.db.migrator import migrate
from pms.db.replicas import ReplicaSet
from pms.devkeys import mint_token
from tests.conftest import need_server
from tests.ops.hotstandby import HotStandbyPair, available

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

PAIRS = 1000


class Stack:
    def __init__(self, pair: HotStandbyPair, database: throwaway.ThrowawayDatabase) -> None:
        self.pair = pair
        self.database = database
        self.replica_url = database.app_url.replace(f"127.0.0.1:{pair.primary_port}/",
                                                    f"127.0.0.1:{pair.standby_port}/")
        assert self.replica_url != database.app_url

    def owner(self) -> Any:
        """A superuser connection to the app's database (row-level security does not apply)."""
        conn = psycopg2.connect(throwaway.with_parts(self.pair.admin_url,
                                                     dbname=self.database.name))
        conn.autocommit = True
        return conn


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    ok, why = available()
    need_server(ok, "a PostgreSQL hot standby", why)
    try:
        pair = HotStandbyPair(apply_delay="2s").start()
    except RuntimeError as exc:
        need_server(False, "a PostgreSQL hot standby", str(exc))
    try:
        database = throwaway.create(pair.admin_url, "rr")
        migrate(database.owner_url, service_url=database.app_url)
        pair.wait_replayed()
        yield Stack(pair, database)
    finally:
        db_proxy.initialize(None)
        pair.stop()


@pytest.fixture
def served(stack: Stack, base_settings: Any) -> Iterator[tuple[Any, ReplicaSet, Any]]:
    """(app client factory, the replica set, the primary database) for one test."""
    primary = make_database(stack.database.app_url, pool_size=8)
    replicas = ReplicaSet([stack.replica_url], pool_size=8, down_for_s=1.0)
    app = create_app(base_settings, db=primary, replicas=replicas)
    try:
        yield falcon.testing.TestClient(app), replicas, primary
    finally:
        replicas.close_all()
        primary.close_all()
        db_proxy.initialize(None)


def _headers(settings: Any, env_id: uuid.UUID, sub: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {mint_token(settings, env_id=env_id, sub=sub)}",
            "X-Platform-Env-Id": str(env_id)}


def _property(client: Any, headers: dict[str, str], code: str) -> str:
    resp = client.simulate_post("/v1/properties", headers=headers, json={
        "propertyCode": code, "timezone": "UTC", "currencyCode": "USD"})
    assert resp.status_code == 201, resp.text
    return resp.json["id"]


def _pairs(client: Any, writer: dict[str, str], reader: dict[str, str], pid: str, count: int,
           *, forget: Any = None) -> tuple[int, int]:
    """`count` PUT-then-GET pairs by `writer`, a list read by `reader` after each: (stale
    reads, failed requests). `forget()` runs after each write (the control: no mark)."""
    stale = failed = 0
    for i in range(count):
        name = f"name-{i}-{uuid.uuid4().hex[:6]}"
        put = client.simulate_put(f"/v1/properties/{pid}", headers=writer, json={"name": name})
        failed += put.status_code != 200
        if forget is not None:
            forget()
        got = client.simulate_get(f"/v1/properties/{pid}", headers=writer)
        failed += got.status_code != 200
        stale += got.status_code == 200 and got.json["name"] != name
        listed = client.simulate_get("/v1/properties", headers=reader)
        failed += listed.status_code != 200
    return stale, failed


def test_no_stale_read_in_a_thousand_write_then_read_pairs(stack, served, base_settings):
    client, replicas, _ = served
    env_id = uuid.uuid4()
    writer = _headers(base_settings, env_id, "writer")
    reader = _headers(base_settings, env_id, "reader")
    pid = _property(client, writer, "RR1")
    stack.pair.wait_replayed()  # the reader's first list sees the property
    before = replicas.stats.snapshot()
    stale, failed = _pairs(client, writer, reader, pid, PAIRS)
    after = replicas.stats.snapshot()
    served_by_replica = after["replica"] - before["replica"]
    by_primary = after["primary"] - before["primary"]
    print(f"\n{PAIRS} write-then-read pairs: {stale} stale reads, {failed} failed requests; "
          f"replica-eligible reads on the standby {served_by_replica}, on the primary "
          f"{by_primary}")
    assert failed == 0
    assert stale == 0
    # the writer's own GETs (1,000) stay on the primary while the standby is 2 s behind; the
    # reader's lists (1,000, no write of their own) go to the standby: at least half of them
    assert served_by_replica >= PAIRS // 2
    assert by_primary >= PAIRS  # the writer's reads: its mark is never replayed within 2 s


def test_control_without_the_mark_reads_stale_data(stack, served, base_settings):
    """The same pairs with the caller's mark deleted after each write: the GET goes to the
    standby, 2 s behind, and reads the old name."""
    client, replicas, _ = served
    env_id = uuid.uuid4()
    writer = _headers(base_settings, env_id, "writer")
    pid = _property(client, writer, "RR2")
    stack.pair.wait_replayed()
    conn = stack.owner()
    try:
        def forget() -> None:
            with conn.cursor() as cur:
                cur.execute("DELETE FROM read_mark")

        stale, failed = _pairs(client, writer, writer, pid, 20, forget=forget)
    finally:
        conn.close()
    print(f"\ncontrol, marks deleted: {stale} stale reads of 20, routing "
          f"{replicas.stats.snapshot()}")
    assert failed == 0
    assert stale > 0


def test_a_server_that_is_not_a_standby_never_serves(stack, base_settings):
    primary = make_database(stack.database.app_url, pool_size=2)
    replicas = ReplicaSet([stack.database.app_url], pool_size=2)  # the primary, by mistake
    client = falcon.testing.TestClient(create_app(base_settings, db=primary, replicas=replicas))
    try:
        headers = _headers(base_settings, uuid.uuid4(), "reader")
        for _ in range(5):
            assert client.simulate_get("/v1/properties", headers=headers).status_code == 200
        assert replicas.stats.snapshot()["replica"] == 0
        assert replicas.stats.snapshot()["primary"] == 5
    finally:
        replicas.close_all()
        primary.close_all()
        db_proxy.initialize(None)


def test_the_standby_killed_mid_run_costs_no_request(stack, served, base_settings):
    client, replicas, _ = served
    env_id = uuid.uuid4()
    writer = _headers(base_settings, env_id, "writer")
    _property(client, writer, "RR3")
    stack.pair.wait_replayed()
    statuses: list[int] = []
    lock = threading.Lock()
    started = threading.Event()
    stop = threading.Event()

    def read(sub: str) -> None:
        headers = _headers(base_settings, env_id, sub)
        while not stop.is_set():
            resp = client.simulate_get("/v1/properties", headers=headers)
            with lock:
                statuses.append(resp.status_code)
                if len(statuses) >= 40:
                    started.set()

    threads = [threading.Thread(target=read, args=(f"reader-{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    try:
        assert started.wait(60)
        on_replica = replicas.stats.snapshot()["replica"]
        stack.pair.kill_standby()
        with lock:
            at_kill = len(statuses)
        while True:
            with lock:
                if len(statuses) >= at_kill + 80:
                    break
            threading.Event().wait(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        if not stack.pair.standby_running:
            stack.pair.start_standby()
    after = replicas.stats.snapshot()
    print(f"\n{len(statuses)} reads, standby killed after {at_kill}: "
          f"statuses {sorted(set(statuses))}, routing {after}")
    assert on_replica > 0  # the standby served before it died
    assert set(statuses) == {200}
    assert after["primary"] > 0  # and the reads after it went to the primary


def test_every_get_route_is_classified_and_money_stays_on_the_primary():
    from pms.api.route import operations
    from pms.routes import all_routes

    gets = [path for method, path, _, _ in operations(all_routes()) if method == "GET"]
    on_primary = [path for path in gets if not replica_read("GET", path)]
    assert any("/folios" in path for path in on_primary)
    for path in gets:
        if any(word in path for word in ("folio", "invoice", "payment-methods", "/jobs")):
            assert path in on_primary, path
    assert replica_read("GET", "/v1/properties/{property_id}/reservations")
    assert replica_read("GET", "/v1/properties/{property_id}/reports/{name}")
    assert not replica_read("POST", "/v1/properties/{property_id}/reservations")
    searches = [(method, path) for method, path, _, spec in operations(all_routes())
                if replica_read(method, path, spec) and method != "GET"]
    assert ("POST", "/v1/properties/{property_id}/availability") in searches
    assert all(part.startswith("/") for part in PRIMARY_READS)


NOT_UUIDS = {"room_number": "101", "name": "arrivals", "list": "reservation-statuses"}


def test_every_replica_read_runs_on_the_standby_without_writing(stack, served, base_settings):
    """Each GET route `replica_read` sends to a standby, with a real property and other ids
    made up: none writes (a write on a standby would fall back to the primary, counted), none
    answers 5xx."""
    import re

    from pms.api.route import operations
    from pms.routes import all_routes

    client, replicas, _ = served
    env_id = uuid.uuid4()
    headers = _headers(base_settings, env_id, "reader")
    pid = _property(client, _headers(base_settings, env_id, "writer"), "RR4")
    stack.pair.wait_replayed()
    paths = sorted({p for m, p, _, _ in operations(all_routes())
                    if m == "GET" and replica_read(m, p)})
    before = replicas.stats.snapshot()
    for path in paths:
        url = re.sub(r"\{(\w+)\}", lambda m: pid if m.group(1) == "property_id"
                     else NOT_UUIDS.get(m.group(1), str(uuid.uuid4())), path)
        resp = client.simulate_get(url, headers=headers)
        assert resp.status_code < 500, (path, resp.status_code, resp.text)
    after = replicas.stats.snapshot()
    assert after["fell_back"] == before["fell_back"]
    assert after["replica"] - before["replica"] == len(paths)


# -- routed by intent: a POST search is a read, a finished job's writes are its reader's ----------

def _owner_sql(stack: Stack, *statements: tuple[str, tuple[Any, ...]]) -> Any:
    """Run statements as the database's owner (autocommit); the last one's first row."""
    conn = stack.owner()
    try:
        with conn.cursor() as cur:
            for sql, args in statements:
                cur.execute(sql, args)
            return cur.fetchone() if cur.description else None
    finally:
        conn.close()


def _marks(stack: Stack, sub: str) -> int:
    return _owner_sql(stack, ("SELECT count(*) FROM read_mark WHERE sub = %s", (sub,)))[0]


def test_a_post_search_reads_from_the_standby_and_leaves_no_mark(stack, served, base_settings):
    client, replicas, _ = served
    env_id = uuid.uuid4()
    owner = _headers(base_settings, env_id, "owner")
    pid = _property(client, owner, "RR5")
    stack.pair.wait_replayed()
    searcher = _headers(base_settings, env_id, "channel")
    before = replicas.stats.snapshot()
    for _ in range(5):
        resp = client.simulate_post(f"/v1/properties/{pid}/availability", headers=searcher,
                                    json={"arrival_date": "2031-03-01",
                                          "departure_date": "2031-03-03"})
        assert resp.status_code == 200, resp.text
    after = replicas.stats.snapshot()
    assert after["replica"] - before["replica"] == 5  # declared mutates=False: a read
    assert _marks(stack, "channel") == 0  # nothing pins the channel's next reads
    # a write's answer still leaves its caller's mark (the control of the count above)
    assert client.simulate_put(f"/v1/properties/{pid}", headers=searcher,
                               json={"name": "Renamed"}).status_code == 200
    assert _marks(stack, "channel") == 1


def _worker_finishes_a_job(stack: Stack, env_id: uuid.UUID, pid: str, name: str) -> str:
    """What a worker does for the coordinator: its writes (the property renamed) and the job
    marked SUCCEEDED, committed on the primary under no caller's mark."""
    job_id = str(uuid.uuid4())
    _owner_sql(stack, ("UPDATE property SET name = %s, version = version + 1 WHERE id = %s",
                       (name, pid)),
               ("INSERT INTO job (id, created_at, updated_at, env_id, kind, status, property_id, "
                "input, result, started_at, finished_at) VALUES (%s, now(), now(), %s, "
                "'block_rooming_list', 'SUCCEEDED', %s, '{}', '{}', now(), now())",
                (job_id, str(env_id), pid)))
    return job_id


def _after_a_finished_job(stack: Stack, client: Any, base_settings: Any, code: str, *,
                          forget: bool) -> tuple[bool, int]:
    """(the coordinator's GET read the worker's write, the job poll's status)."""
    env_id = uuid.uuid4()
    coordinator = _headers(base_settings, env_id, "coordinator")
    pid = _property(client, coordinator, code)
    stack.pair.wait_replayed()
    _owner_sql(stack, ("DELETE FROM read_mark", ()))  # the property's creation is replayed
    name = f"by-the-job-{uuid.uuid4().hex[:6]}"
    job_id = _worker_finishes_a_job(stack, env_id, pid, name)
    polled = client.simulate_get(f"/v1/jobs/{job_id}", headers=coordinator)
    if forget:
        _owner_sql(stack, ("DELETE FROM read_mark", ()))
    got = client.simulate_get(f"/v1/properties/{pid}", headers=coordinator)
    assert got.status_code == 200, got.text
    return got.json["name"] == name, polled.status_code


def test_a_finished_jobs_writes_count_as_its_readers(stack, served, base_settings):
    client, _, _ = served
    fresh, status = _after_a_finished_job(stack, client, base_settings, "RR6", forget=False)
    assert status == 200 and fresh


def test_control_a_finished_job_without_the_mark_reads_the_standby_behind_it(stack, served,
                                                                            base_settings):
    client, _, _ = served
    fresh, status = _after_a_finished_job(stack, client, base_settings, "RR7", forget=True)
    assert status == 200 and not fresh
