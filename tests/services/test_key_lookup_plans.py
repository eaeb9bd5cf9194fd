"""The plan-keeping functions of the profile create look up by key on a table that grew after
their plans were made (migration 020).

A PL/pgSQL function keeps its statements' generic plans for the life of the server connection
(migration 015). Made while the statistics described a table of a page or two, a plan was a
sequential scan, and it stayed one while the table grew: every profile create then read every
profile and every Idempotency-Key record (`python -m bench.inprocess profile`: 0.9, 1.5, then
2.1 ms of database CPU per create as the rounds went on). These tests make the plans on such a
table, let it grow on another connection, and count the rows the next call visits in
`pg_stat_xact_user_tables` (fetched by sequential and index scans): the one row of its key,
whatever the table's size, however the planner reaches it. The control: the same count sees a
read that walks the grown table.

Their own throwaway database (PostgreSQL only), so the statistics are those of a near-empty
table whatever else the suite wrote, and a direct connection as the service role (not through
PgBouncer), so the second call runs on the backend that kept the plans.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest

from bench import throwaway
from tests import pg

pytestmark = pytest.mark.postgres

GROWN = 3000
KEY_ROWS = 2  # the rows one lookup by a unique key may visit (the row, as the plan counts it)
# kept-plan readers left to the statistics (migration 020): the booking's, reading tables sized
# by the hotel's configuration (the pms_write_* journal INSERTs read nothing and are not checked)
CONFIGURATION_READS = {"pms_take_nights", "pms_booking_refs"}
# functions that read no table at all (migration 022's notice of the transaction id)
NO_TABLE_READS = {"pms_announce_xact"}


@pytest.fixture(scope="module")
def fresh() -> Iterator[throwaway.ThrowawayDatabase]:
    with pg.migrated_database("pmskey") as database:
        yield database


@pytest.fixture
def tenant(fresh: throwaway.ThrowawayDatabase) -> Iterator[tuple[uuid.UUID, Any, Any]]:
    """A new tenant and two connections: the owner's (seeding, ANALYZE) and the service
    role's (the functions, under row-level security). The tenant is set per transaction
    (`set_config(..., true)`), as the service sets it."""
    env = uuid.uuid4()
    owner = psycopg2.connect(fresh.owner_url)
    service = psycopg2.connect(fresh.app_url)
    service.autocommit = True  # _reads opens and ends its own transactions
    try:
        yield env, owner, service
    finally:
        owner.close()
        service.close()


def _seed_profiles(owner: Any, env: uuid.UUID, first: int, last: int,
                   *statements: str) -> None:
    """Profiles and Idempotency-Key records numbered first..last in `env`, then `statements`,
    in one committed transaction of the owner's."""
    values = {"env": str(env), "first": first, "last": last}
    with owner.cursor() as cur:
        cur.execute("SELECT set_config('app.env_id', %(env)s, true)", values)
        cur.execute(
            "INSERT INTO profile (id, created_at, updated_at, env_id, version, kind, first_name,"
            " last_name, email, email_normalized, external_ref, preferences)"
            " SELECT gen_random_uuid(), now(), now(), %(env)s, 1, 'GUEST', 'Ada', 'L' || g,"
            " 'g' || g || '@x.org', 'g' || g || '@x.org', 'ref-' || g, '{}'::jsonb"
            " FROM generate_series(%(first)s, %(last)s) g", values)
        cur.execute(
            "INSERT INTO idempotency_record (id, created_at, updated_at, env_id, key,"
            " fingerprint, state, expires_at) SELECT gen_random_uuid(), now(), now(), %(env)s,"
            " 'key-' || g, 'f', 'done', now() + interval '1 day'"
            " FROM generate_series(%(first)s, %(last)s) g", values)
        for statement in statements:
            cur.execute(statement, values)
    owner.commit()


def _visited(cur: Any) -> dict[str, int]:
    """The rows of each table this transaction has visited so far (its heap rows fetched)."""
    cur.execute("SELECT relname, coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)"
                " FROM pg_stat_xact_user_tables WHERE relname IN ('profile', 'idempotency_record')")
    return {"profile": 0, "idempotency_record": 0, **dict(cur.fetchall())}


def _reads(cur: Any, env: uuid.UUID, prop: uuid.UUID, email: str | None, ref: str | None,
           key: str, *also: str) -> tuple[Any, dict[str, int]]:
    """One profile create's reads, in one transaction: the claim and the references (then
    `also`, statements of the control), and the rows they visited."""
    cur.execute("BEGIN")
    try:
        cur.execute("SELECT set_config('app.env_id', %s, true)", (str(env),))
        cur.execute("SELECT pms_claim_idempotency_key(%s, %s, now())", (str(env), key))
        cur.execute("SELECT property_found, (pr_row).id, (pr_row).email, (pr_row).external_ref"
                    " FROM pms_profile_refs(%s, %s, %s, %s)", (str(env), str(prop), email, ref))
        found = cur.fetchone()
        for statement in also:
            cur.execute(statement)
        return found, _visited(cur)
    finally:
        cur.execute("ROLLBACK")


def test_profile_store_probe_their_keys_after_the_tables_grew(tenant):
    env, owner, service = tenant
    prop = uuid.uuid4()
    _seed_profiles(owner, env, 1, 3, "ANALYZE profile", "ANALYZE idempotency_record")
    with service.cursor() as cur:
        # the plans are made now, on tables of a page each
        found, _ = _reads(cur, env, prop, "g2@x.org", None, "key-new-1")
        assert found[1] is not None and found[2] == "g2@x.org"
        _seed_profiles(owner, env, 4, GROWN)
        found, visited = _reads(cur, env, prop, f"g{GROWN - 1}@x.org", None, "key-new-2")
        assert found[2] == f"g{GROWN - 1}@x.org"
        # the email's profile, and no Idempotency-Key record (the key is new): the rows of the
        # keys, counted once or twice as the plan reaches them, never the grown table's
        assert visited["profile"] <= KEY_ROWS and visited["idempotency_record"] <= KEY_ROWS, \
            visited
        # the external reference is looked up by its own key when the email finds nothing
        found, visited = _reads(cur, env, prop, "nobody@x.org", "ref-1234", "key-new-3")
        assert found[3] == "ref-1234" and visited["profile"] <= 2 * KEY_ROWS, visited
        # the control: a read that walks the table is counted (a key spelled as no index has it)
        _, visited = _reads(cur, env, prop, "nobody@x.org", None, "key-new-4",
                            "SELECT count(*) FROM profile WHERE email_normalized || '' = 'x'",
                            "SELECT count(*) FROM idempotency_record WHERE key || '' = 'x'")
        assert visited["profile"] >= GROWN and visited["idempotency_record"] >= GROWN, visited


def test_the_email_profile_comes_first_and_a_miss_is_empty(tenant):
    env, owner, service = tenant
    prop = uuid.uuid4()
    _seed_profiles(owner, env, 1, 20,
                   "INSERT INTO property (id, created_at, updated_at, env_id, version, code,"
                   " name, timezone, currency_code, languages) VALUES"
                   f" ('{prop}', now(), now(), %(env)s, 1, 'K1', 'Key', 'UTC', 'EUR', '[]')")
    with service.cursor() as cur:
        # email of profile 5, reference of profile 7: the email's profile is the answer
        found, _ = _reads(cur, env, prop, "g5@x.org", "ref-7", "k-a")
        assert found[0] is True and (found[2], found[3]) == ("g5@x.org", "ref-5")
        found, _ = _reads(cur, env, prop, None, "ref-7", "k-b")
        assert (found[2], found[3]) == ("g7@x.org", "ref-7")
        found, _ = _reads(cur, env, uuid.uuid4(), "none@x.org", "none", "k-c")
        assert found == (False, None, None, None)
        # another tenant's profiles are not found (row-level security and the key's env)
        other = uuid.uuid4()
        found, _ = _reads(cur, other, prop, "g5@x.org", "ref-5", "k-d")
        assert found == (False, None, None, None)


def test_every_function_reading_traffic_tables_plans_on_its_keys(fresh):
    """A new `pms_*` function that reads tables fails here until it carries
    `enable_seqscan = off` (or is argued into CONFIGURATION_READS)."""
    conn = psycopg2.connect(fresh.owner_url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT p.proname, coalesce(p.proconfig, '{}') FROM pg_proc p"
                        " JOIN pg_namespace n ON n.oid = p.pronamespace"
                        " WHERE n.nspname = current_schema() AND p.proname LIKE 'pms\\_%%'")
            rows = cur.fetchall()
    finally:
        conn.close()
    names = {name for name, _ in rows}
    assert {"pms_profile_refs", "pms_claim_idempotency_key", "pms_folio_state",
            "pms_lock_guest_folios", "pms_pick_room"} <= names
    lacking = sorted(name for name, config in rows
                     if not name.startswith("pms_write_") and name not in CONFIGURATION_READS
                     and name not in NO_TABLE_READS
                     and "enable_seqscan=off" not in config)
    assert lacking == [], f"functions reading traffic tables without enable_seqscan=off: {lacking}"
