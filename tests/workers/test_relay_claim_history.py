"""The relay's claim reads a stream's backlog, never its history nor the backlog of other
streams (PostgreSQL).

An ARI stream gets a version with every booking of its room type, so an aggregate's published
history grows without bound while its backlog stays short. The claim's held-back check (a
picked row waits while an earlier version of its aggregate is unpublished, pms.relay.claim)
once joined the picked rows with the table; planned on statistics taken while nothing was
pending (an outbox's usual state), it scanned the whole (env_id, subject, aggregate_version)
index once per picked row: 100,000 published rows ran the claim past the 5 s statement
timeout, and under `make bench` the ARI events of the load waited 11 s at p95.

Measured in buffers, not time: the claim of 500 rows of four long-lived aggregates, under
EXPLAIN (ANALYZE, BUFFERS) in a transaction that is rolled back (nothing of it stays: the rows,
the partitions' lease, the statistics). The control runs the old statement on the same data
and reads the history over and over. The tests run on a database of their own: the suite's
shared database holds what every earlier test left in the outbox, and what a plan costs must
not depend on which tests ran before.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg2
import pytest

from bench import throwaway
from pms.relay.claim import _CLAIM_SQL
from tests import pg

pytestmark = [pytest.mark.postgres]


@pytest.fixture(scope="module")
def own_database() -> Iterator[throwaway.ThrowawayDatabase]:
    with pg.migrated_database("pmsclaim") as database:
        yield database


SHORT, LONG = 2_000, 20_000  # published versions, over SUBJECTS aggregates
SUBJECTS = 4
PENDING = 500  # the next versions of the same aggregates: one claim's worth

# the held-back check as it was (the control): a join of the picked rows with the table on the
# full index, "unpublished" spelled so that no partial index matches
_OLD_HELD = '''"held" AS (
    SELECT p."id", MAX(CASE WHEN b."parked_at" IS NOT NULL THEN %(behind_parked)s
                            WHEN b."lease_owner" = %(owner)s THEN %(now)s
                            ELSE GREATEST(b."next_attempt_at", COALESCE(b."lease_until", %(now)s),
                                          %(in_a_second)s) END) AS "resume"
    FROM "picked" p JOIN "outbox_event" b
      ON b."env_id" = p."env_id" AND b."subject" = p."subject"
     AND b."aggregate_version" < p."aggregate_version"
    WHERE COALESCE(b."published_at", 'infinity') >= 'infinity'
      AND b."id" <> ALL (ARRAY(SELECT "id" FROM "picked"))
    GROUP BY p."id")'''


def _old_statement() -> str:
    start = _CLAIM_SQL.index('"held" AS')
    end = _CLAIM_SQL.index('\nUPDATE "outbox_event"') + 1
    return _CLAIM_SQL[:start] + _OLD_HELD + "\n" + _CLAIM_SQL[end:]


def _rows(cur, env, *, first: int, count: int, published: bool, base: datetime,
          subjects: int = SUBJECTS, prefix: str = "stream") -> None:
    cur.execute("""
        INSERT INTO outbox_event (id, created_at, updated_at, env_id, type, source, subject,
          aggregate_type, aggregate_version, idempotency_key, time, data, published_at,
          attempts, next_attempt_at, partition, dispatch_attempts)
        SELECT gen_random_uuid(), %(base)s + g * interval '1 millisecond', %(base)s, %(env)s,
          'hotel:pms:ari:updated', 'pms', %(prefix)s || '-' || %(env)s || '-' || (g %% %(subjects)s),
          'ari', g / %(subjects)s + 1, %(prefix)s || ':' || %(env)s || ':' || g, %(base)s,
          '{}'::jsonb, CASE WHEN %(published)s THEN %(base)s END, 0, %(base)s, 0, 0
        FROM generate_series(%(first)s, %(last)s) g""",
                {"base": base, "env": str(env), "subjects": subjects, "published": published,
                 "prefix": prefix,
                 "first": first, "last": first + count - 1})


def _probe_buffers(node: dict) -> int:
    """Shared buffers read by the held-back check's scans of the table (alias `b`)."""
    own = 0
    if node.get("Alias") == "b":
        own = node.get("Shared Hit Blocks", 0) + node.get("Shared Read Blocks", 0)
        return own  # a scan's counts include its children's
    return sum(_probe_buffers(child) for child in node.get("Plans", ()))


def _claim_buffers(database: Any, statement: str, history: int,
                   backlog: int = 0) -> tuple[int, int]:
    """(rows leased, shared buffers the held-back check read) with a long published history and a
    claim's worth of pending versions of the same aggregates, statistics taken before any was
    pending, and `backlog` rows of other streams pending behind them (created later, each its
    stream's first version); all rolled back."""
    conn = psycopg2.connect(database.owner_url)
    try:
        cur = conn.cursor()
        env, owner = uuid.uuid4(), f"history-{uuid.uuid4().hex[:8]}"
        now = datetime.now(UTC)
        cur.execute("SELECT set_config('app.cross_env', 'on', true)")
        cur.execute("UPDATE relay_partition SET owner = %s, expires_at = %s",
                    (owner, now + timedelta(minutes=5)))
        cur.execute("INSERT INTO relay_partition (partition, owner, expires_at) "
                    "SELECT p, %s, %s FROM generate_series(0, 63) p "
                    "ON CONFLICT (partition) DO NOTHING", (owner, now + timedelta(minutes=5)))
        _rows(cur, env, first=0, count=history, published=True, base=now - timedelta(hours=1))
        cur.execute("ANALYZE outbox_event")  # as autovacuum finds it: nothing pending
        _rows(cur, env, first=history, count=PENDING, published=False,
              base=now - timedelta(minutes=1))
        if backlog:
            _rows(cur, env, first=0, count=backlog, published=False, subjects=backlog,
                  prefix="other", base=now - timedelta(seconds=30))
        sql = statement.format(env=' AND "env_id" = %(env_id)s')
        cur.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, {
            "owner": owner, "now": now, "limit": PENDING, "env_id": str(env),
            "until": now + timedelta(seconds=30), "in_a_second": now + timedelta(seconds=1),
            "behind_parked": now + timedelta(seconds=60)})
        (plan,) = cur.fetchone()
        plan = plan[0] if isinstance(plan, list) else json.loads(plan)[0]
        return plan["Plan"]["Actual Rows"], _probe_buffers(plan["Plan"])
    finally:
        conn.rollback()
        conn.close()


def _follows(small: int, large: int) -> bool:
    """Ten times the rows read more than half as much again: the reads follow the rows."""
    return large >= 1.5 * small + 100


def test_the_claim_reads_the_backlog_of_an_aggregate_not_its_history(own_database):
    leased, short = _claim_buffers(own_database, _CLAIM_SQL, SHORT)
    assert leased == PENDING  # every pending version: nothing earlier is unpublished
    leased, long = _claim_buffers(own_database, _CLAIM_SQL, LONG)
    assert leased == PENDING
    assert not _follows(short, long), (short, long)


def test_control_the_old_join_reads_the_history_once_per_picked_row(own_database):
    leased, short = _claim_buffers(own_database, _old_statement(), SHORT)
    assert leased == PENDING
    leased, long = _claim_buffers(own_database, _old_statement(), LONG)
    assert leased == PENDING
    assert _follows(short, long), (short, long)
    # and on the long history it reads many times what the claim reads on the same data
    _, claim_long = _claim_buffers(own_database, _CLAIM_SQL, LONG)
    assert long > 10 * claim_long, (long, claim_long)


# The probe correlated on the env alone (the subject compared through an expression no index
# has): the plan a planner on stale statistics chose in CI, the partial index of unpublished rows
# walked once per picked row. The control: the measure sees the env's backlog in it.
def _env_walk_statement() -> str:
    return _CLAIM_SQL.replace('b."subject" = p."subject"', 'b."subject" || \'\' = p."subject"')


SMALL_BACKLOG, LARGE_BACKLOG = 1_000, 10_000


def test_the_claim_reads_the_same_buffers_whatever_the_backlog_of_other_streams(own_database):
    leased, small = _claim_buffers(own_database, _CLAIM_SQL, SHORT, SMALL_BACKLOG)
    assert leased == PENDING
    leased, large = _claim_buffers(own_database, _CLAIM_SQL, SHORT, LARGE_BACKLOG)
    assert leased == PENDING
    assert not _follows(small, large), (small, large)  # ten times the backlog: the same reads


def test_control_a_probe_keyed_by_the_env_alone_reads_the_backlog_per_picked_row(own_database):
    statement = _env_walk_statement()
    assert statement != _CLAIM_SQL
    leased, small = _claim_buffers(own_database, statement, SHORT, SMALL_BACKLOG)
    assert leased == PENDING
    leased, large = _claim_buffers(own_database, statement, SHORT, LARGE_BACKLOG)
    assert leased == PENDING
    assert _follows(small, large), (small, large)  # (history + backlog) per picked row
