"""The plan-keeping functions of the profile create look up by key on a table that grew after
their plans were made (migration 020).

A PL/pgSQL function keeps its statements' generic plans for the life of the server connection
(migration 015). Made while the statistics described a table of a page or two, a plan was a
sequential scan, and it stayed one while the table grew: every profile create then read every
profile and every Idempotency-Key record (`python -m bench.inprocess profile`: 0.9, 1.5, then
2.1 ms of database CPU per create as the rounds went on). These tests make the plans on such a
table, let it grow on another connection, and count the scans of the next call in
`pg_stat_xact_user_tables`: index scans only.

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

from pms.db import throwaway
from pms.db.migrator import migrate
from tests import pg
from tests.conftest import need_server

pytestmark = pytest.mark.postgres

GROWN = 3000
# kept-plan readers left to the statistics (migration 020): the booking's, reading tables sized
# by the hotel's configuration (the pms_write_* journal INSERTs read nothing and are not checked)
CONFIGURATION_READS = {"pms_take_nights", "pms_booking_refs"}
# functions that read no table at all (migration 022's notice of the transaction id)
NO_TABLE_READS = {"pms_announce_xact"}


@pytest.fixture(scope="module")
def fresh() -> Iterator[throwaway.ThrowawayDatabase]:
    ok, why = pg.available()
    need_server(ok, "PostgreSQL", why)
    database = throwaway.create(pg.admin_url(), "pmskey")
    try:
        migrate(database.owner_url, service_url=database.app_url)
        yield database
    finally:
        database.drop()


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


def _scans(cur: Any) -> dict[str, tuple[int, int]]:
    cur.execute("SELECT relname, seq_scan, coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables"
                " WHERE relname IN ('profile', 'idempotency_record')")
    return {name: (seq, idx) for name, seq, idx in cur.fetchall()}


def _reads(cur: Any, env: uuid.UUID, prop: uuid.UUID, email: str | None, ref: str | None,
           key: str) -> tuple[Any, dict[str, tuple[int, int]]]:
    """One profile create's reads, in one transaction: the claim and the references."""
    cur.execute("BEGIN")
    try:
        cur.execute("SELECT set_config('app.env_id', %s, true)", (str(env),))
        cur.execute("SELECT pms_claim_idempotency_key(%s, %s, now())", (str(env), key))
        cur.execute("SELECT property_found, (pr_row).id, (pr_row).email, (pr_row).external_ref"
                    " FROM pms_profile_refs(%s, %s, %s, %s)", (str(env), str(prop), email, ref))
        found = cur.fetchone()
        return found, _scans(cur)
    finally:
        cur.execute("ROLLBACK")


def test_profile_reads_probe_their_keys_after_the_tables_grew(tenant):
    env, owner, service = tenant
    prop = uuid.uuid4()
    _seed_profiles(owner, env, 1, 3, "ANALYZE profile", "ANALYZE idempotency_record")
    with service.cursor() as cur:
        # the plans are made now, on tables of a page each
        found, _ = _reads(cur, env, prop, "g2@x.org", None, "key-new-1")
        assert found[1] is not None and found[2] == "g2@x.org"
        _seed_profiles(owner, env, 4, GROWN)
        found, scans = _reads(cur, env, prop, f"g{GROWN - 1}@x.org", None, "key-new-2")
        assert found[2] == f"g{GROWN - 1}@x.org"
        assert scans["profile"][0] == 0 and scans["profile"][1] >= 1, scans
        assert scans["idempotency_record"][0] == 0 and scans["idempotency_record"][1] >= 1, scans
        # the external reference is looked up by its own key when the email finds nothing
        found, scans = _reads(cur, env, prop, "nobody@x.org", "ref-1234", "key-new-3")
        assert found[3] == "ref-1234" and scans["profile"][0] == 0, scans


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
