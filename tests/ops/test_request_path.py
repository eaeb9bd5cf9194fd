"""The shortcuts on the per-request path keep their rules: the access line, the request id, the
identity derived from a cached token, the connection scope of a request (one connection, kept
by its thread between requests), and commits that do not wait for the WAL flush.

NOTE: the tests of the per-connection PREPAREd statements are gone with them (no
SQL-level PREPARE behind PgBouncer)."""

from __future__ import annotations

import io
import json
import logging
import re
import uuid

import pytest

from pms.db.database import make_database
from pms.db.scope import tenant_free, tenant_scope
from pms.devkeys import mint_token
from pms.logging import FastLine, JsonFormatter
from tests import pg

# -- the access line and the request id -----------------------------------------------------------


@pytest.fixture
def json_stream():
    """The root logger as configure_logging() leaves it, writing into a buffer."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        root.handlers[:], root.level = saved


def _lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line]


def test_the_direct_line_is_the_line_the_json_handler_writes(json_stream):
    FastLine("pms.test.direct", "request").write({"status": 200, "request_id": "r1"})
    logging.getLogger("pms.test.direct").info("request", extra={"status": 200, "request_id": "r1"})
    fast, slow = _lines(json_stream)
    assert set(fast) == set(slow) == {"ts", "level", "logger", "msg", "pid", "status", "request_id"}
    for key in ("level", "logger", "msg", "pid", "status", "request_id"):
        assert fast[key] == slow[key]


def test_the_direct_line_defers_to_logging_when_a_capture_handler_is_present(json_stream, caplog):
    with caplog.at_level(logging.INFO, logger="pms.test.capture"):
        FastLine("pms.test.capture", "request").write({"status": 404})
    assert [r.status for r in caplog.records if r.name == "pms.test.capture"] == [404]


def test_the_direct_line_respects_the_level(json_stream):
    logging.getLogger().setLevel(logging.WARNING)
    FastLine("pms.test.level", "request").write({"status": 200})
    assert json_stream.getvalue() == ""


def test_unserialisable_fields_are_written_as_text(json_stream):
    FastLine("pms.test.text", "request").write({"who": uuid.UUID(int=7), "what": object()})
    (line,) = _lines(json_stream)
    assert line["who"] == str(uuid.UUID(int=7)) and line["what"].startswith("<object")


def test_every_request_writes_one_access_line_with_its_request_id(api, json_stream):
    first = api.get(f"/v1/properties/{uuid.uuid4()}")
    second = api.get("/v1/properties", headers={"X-Platform-Request-Id": "given-id.1"})
    assert second.headers["X-Request-Id"] == "given-id.1"
    access = [line for line in _lines(json_stream) if line["logger"] == "pms.access"]
    assert [(a["request_id"], a["status"], a["method"]) for a in access] == [
        (first.headers["X-Request-Id"], 404, "GET"), ("given-id.1", 200, "GET")]
    assert access[0]["env_id"] == str(api.env_id) and access[0]["sub"]
    assert access[0]["path"].startswith("/v1/properties/") and access[0]["duration_ms"] >= 0


def test_generated_request_ids_are_32_hex_digits_and_distinct(api):
    ids = {api.get("/v1/properties").headers["X-Request-Id"] for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)


# -- the identity of a cached token -------------------------------------------------------------


def test_a_cached_token_is_still_bound_to_its_env(api):
    assert api.get("/v1/properties").status_code == 200  # the token is now cached
    other = api.get("/v1/properties", env=uuid.uuid4())
    assert other.status_code == 403 and other.json["code"] == "tenant_mismatch"
    # another spelling of the same env is the same env
    assert api.get("/v1/properties", env=str(api.env_id).upper()).status_code == 200
    assert api.get("/v1/properties", env="not-a-uuid").status_code == 400


def test_a_token_for_another_env_never_borrows_a_cached_identity(api, settings):
    assert api.get("/v1/properties").status_code == 200
    stranger_env = uuid.uuid4()
    stranger = mint_token(settings, env_id=stranger_env, scopes=["hotel:pms:properties:read"])
    resp = api.get("/v1/properties", token=stranger, env=api.env_id)
    assert resp.status_code == 403
    listing = api.get("/v1/properties", token=stranger, env=stranger_env)
    assert listing.status_code == 200 and listing.json["data"] == []
    denied = api.post("/v1/properties", {"propertyCode": "X1", "timezone": "UTC",
                                         "currencyCode": "EUR"}, token=stranger, env=stranger_env)
    assert denied.status_code == 403  # its own scopes, not the cached token's


# -- the connection a request thread keeps ------------------------------------------------------


@pytest.fixture
def pgdb(pg_database):
    database = make_database(pg_database.app_url, pool_size=2)
    try:
        yield database
    finally:
        database.close_all()


def _request(database):
    """What DatabaseMiddleware does around one request."""
    return database.connection_scope(keep_idle=True)


@pytest.mark.postgres
def test_an_idle_connection_stays_with_its_thread_between_requests(pgdb):
    with _request(pgdb):
        pid = pg.backend_pid(pgdb)
    assert not pgdb.is_closed() and len(pgdb._in_use) == 1  # not checked in
    with _request(pgdb):
        assert pg.backend_pid(pgdb) == pid


@pytest.mark.postgres
def test_a_connection_left_in_a_transaction_goes_back_to_the_pool_rolled_back(pgdb):
    with _request(pgdb):
        pgdb.connection().cursor().execute("BEGIN; CREATE TEMP TABLE left_behind (x int)")
    assert pgdb.is_closed() and len(pgdb._in_use) == 0
    with _request(pgdb), tenant_free():
        exists = pgdb.execute_sql("SELECT to_regclass('pg_temp.left_behind')").fetchone()[0]
    assert exists is None  # the open transaction was rolled back, not carried on


@pytest.mark.postgres
def test_a_kept_connection_idle_past_the_threshold_is_pinged_and_replaced(pgdb):
    pgdb.PING_AFTER_IDLE_S = 0.0
    with _request(pgdb):
        pid = pg.backend_pid(pgdb)
    pg.terminate_backend(pid)
    with _request(pgdb):
        assert pg.backend_pid(pgdb) != pid


@pytest.mark.postgres
def test_a_scope_releases_only_the_connection_it_opened(pgdb):
    pgdb.connect()  # opened outside any scope: not the scope's to release
    with pgdb.connection_scope():
        pg.backend_pid(pgdb)
    assert not pgdb.is_closed()
    pgdb.close()
    with pgdb.connection_scope():
        with pgdb.connection_scope():  # an inner scope never releases the outer one's
            pg.backend_pid(pgdb)
        assert not pgdb.is_closed()
    assert pgdb.is_closed() and len(pgdb._in_use) == 0


@pytest.mark.postgres
def test_a_kept_connection_carries_no_tenant_into_the_next_request(pg_db, ctx):
    from pms.db.database import db
    from pms.db.uow import read_scope
    from pms.models import Property
    from tests.factories import make_property

    prop = make_property(ctx)
    with _request(db.obj):
        with read_scope(ctx):
            assert Property.fetch(prop.id) is not None
            seen = db.execute_sql("SELECT current_setting('app.env_id', true)").fetchone()[0]
        assert seen == str(ctx.env_id)
    with _request(db.obj), tenant_free():
        leftover = db.connection().cursor()
        leftover.execute("SELECT current_setting('app.env_id', true)")  # raw: no settings sent
        assert leftover.fetchone()[0] in (None, "")


# -- one connection per request, the Idempotency-Key record included ---------------------------


def test_a_request_with_an_idempotency_key_uses_one_connection(api, database):
    """The rule: the idempotency record is written inside the request's connection scope (the
    database middleware's process_response runs after the idempotency middleware's)."""
    opened: list[int] = []
    real_connect = database.connect

    def counting_connect(reuse_if_open=False):  # noqa: ANN001, ANN202
        did = real_connect(reuse_if_open=reuse_if_open)
        opened.extend([1] if did else [])
        return did

    if not database.is_closed():
        database.close()
    database.connect = counting_connect  # this instance only, removed below
    try:
        resp = api.post("/v1/properties", {"propertyCode": "ONECONN", "timezone": "UTC",
                                           "currencyCode": "EUR"},
                        headers={"Idempotency-Key": uuid.uuid4().hex})
    finally:
        del database.connect
    assert resp.status_code == 201
    assert len(opened) == 1  # the claim, the change and the stored response: one connection


@pytest.mark.postgres
def test_a_request_with_an_idempotency_key_holds_one_backend(api, backend, monkeypatch):
    """The claim, the change and the stored response run on one backend of this thread: the
    request opens at most one new server connection and all its statements go to one backend
    pid. Counted for this thread only (another test's worker thread in the same process may
    hold the pool's other connections meanwhile)."""
    import threading

    import psycopg2

    from pms.db.database import db

    if backend != "postgres":
        pytest.skip("backends are PostgreSQL's")
    me = threading.get_ident()
    opened: list[object] = []
    pids: set[int] = set()
    real_connect = psycopg2.connect
    real_cursor = type(db.obj).cursor

    def counting_connect(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        conn = real_connect(*args, **kwargs)
        if threading.get_ident() == me:
            opened.append(conn)
        return conn

    def cursor_seen(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        cur = real_cursor(self, *args, **kwargs)
        if threading.get_ident() == me:
            pids.add(cur.connection.get_backend_pid())
        return cur

    monkeypatch.setattr(psycopg2, "connect", counting_connect)
    monkeypatch.setattr(type(db.obj), "cursor", cursor_seen)
    key = uuid.uuid4().hex
    resp = api.post("/v1/properties", {"propertyCode": "ONEBE", "timezone": "UTC",
                                       "currencyCode": "EUR"}, headers={"Idempotency-Key": key})
    monkeypatch.undo()
    assert resp.status_code == 201
    assert len(opened) <= 1  # a pooled connection, or one new one: never a second
    assert len(pids) == 1  # every statement of the request on one backend
    with _request(db.obj):
        from pms.db.scope import tenant_scope
        from pms.models.platform import IdempotencyRecord

        with tenant_scope(api.env_id):
            # stored per caller: the api token's digest before the client's key
            row = IdempotencyRecord.get(IdempotencyRecord.key.endswith(f":{key}"))
    assert row.state == "done" and row.response_status == 201


@pytest.mark.postgres
def test_jsonb_columns_read_back_exactly_as_written(pg_db, ctx):
    from pms.db.uow import read_scope
    from pms.models import Property
    from tests.factories import make_property

    address = {"line1": "Straße 1 – Hof", "city": "Zürich", "postalCode": "8001",
               "countryCode": "CH"}
    prop = make_property(ctx, displayAddress=address, languages=["de", "fr", "it"])
    with read_scope(ctx):
        row = Property.fetch(prop.id)
    assert row.display_address == {**address, "line2": None, "region": None}
    assert row.languages == ["de", "fr", "it"]


# -- commits that do not wait for the WAL flush -------------------------------------------------


@pytest.mark.postgres
def test_only_transactions_begun_in_the_block_skip_the_flush_and_only_for_themselves(pg_db, ctx):
    from pms.db.database import commit_without_waiting, db
    from pms.db.scope import tenant_scope

    def setting() -> str:
        with db.atomic():
            return db.execute_sql("SHOW synchronous_commit").fetchone()[0]

    with tenant_scope(ctx.env_id):
        with commit_without_waiting():
            assert setting() == "off"
        assert setting() == "on"  # transaction-local: the kept connection is back to normal
        assert db.execute_sql("SHOW synchronous_commit").fetchone()[0] == "on"


@pytest.mark.postgres
def test_the_idempotency_claim_and_response_skip_the_flush_but_the_change_does_not(
        api, monkeypatch, backend):
    from pms.db.database import PmsPostgresDatabase

    if backend != "postgres":
        pytest.skip("synchronous_commit is PostgreSQL's")
    begun: list[bool] = []
    real_begin = PmsPostgresDatabase.begin

    def spy_begin(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        real_begin(self, *args, **kwargs)
        begun.append("synchronous_commit" in self._scope.pending_begin)

    monkeypatch.setattr(PmsPostgresDatabase, "begin", spy_begin)
    resp = api.post("/v1/properties", {"propertyCode": "NOWAIT", "timezone": "UTC",
                                       "currencyCode": "EUR"},
                    headers={"Idempotency-Key": uuid.uuid4().hex})
    assert resp.status_code == 201
    # the claim, the change (waits for the flush), the stored response
    assert begun == [True, False, True]


def test_a_kept_connection_whose_server_went_away_costs_one_503_then_recovers(api, backend):
    from pms.db.database import db

    if backend != "postgres":
        pytest.skip("a PostgreSQL backend to terminate")
    prop = api.post("/v1/properties", {"propertyCode": "GONE1", "timezone": "UTC",
                                       "currencyCode": "EUR"}).json["id"]
    assert api.get(f"/v1/properties/{prop}").status_code == 200
    assert not db.is_closed()  # kept by this (request) thread
    pg.terminate_backend(pg.backend_pid(db))
    failed = api.get(f"/v1/properties/{prop}")
    assert failed.status_code == 503 and failed.json["code"] == "database_unavailable"
    assert failed.headers["Retry-After"] == "1"
    assert api.get(f"/v1/properties/{prop}").status_code == 200


def test_a_scope_left_inside_an_open_transaction_rolls_it_back_and_starts_clean(database, ctx):
    """The rule: an entry point whose body began a transaction and never ended it (a crash
    between begin and commit) must not hand that transaction, or its locks, to the thread's next
    scope: the owning scope rolls it back and releases the connection."""
    from pms.db.database import db
    from pms.db.uow import read_scope
    from pms.models import Property
    from tests.factories import make_property

    prop = make_property(ctx)
    if not db.is_closed():
        db.close()  # the entry point's scope opens (and so owns) the connection, as in production
    with db.obj.connection_scope(), tenant_scope(ctx.env_id):
        db.begin()
        Property.update(name="half-done").where(Property.id == prop.id).execute()
        # no commit, no rollback: the body "crashed" here
    assert not db.in_transaction()
    assert db.is_closed()
    with db.obj.connection_scope(), read_scope(ctx):
        assert Property.fetch(prop.id).name != "half-done"
