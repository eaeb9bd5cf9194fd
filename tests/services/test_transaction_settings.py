"""The transaction-local settings (pms.db.database `_settings_sql`): every statement runs with the
timeouts and the tenant of its scope, the cross-env switch only under `unscoped()`, and none of
it outlives the transaction, outside a transaction (one implicit transaction with the
statement) and inside one (sent with its first statement). They go as `SET LOCAL` statements:
no `SELECT` whose row the client would read back."""

from __future__ import annotations

import uuid

import pytest

from pms.db.database import commit_without_waiting, db
from pms.db.scope import tenant_scope, unscoped

pytestmark = pytest.mark.postgres

SEEN = ("SELECT (SELECT setting FROM pg_settings WHERE name = 'statement_timeout'), "
        "(SELECT setting FROM pg_settings WHERE name = 'lock_timeout'), "
        "coalesce(current_setting('app.env_id', true), ''), "
        "coalesce(current_setting('app.cross_env', true), ''), "
        "current_setting('synchronous_commit')")
DEFAULTS = ("0", "0", "", "", "on")


def _seen() -> tuple[str, ...]:
    return tuple(db.execute_sql(SEEN).fetchone())


def _raw() -> tuple[str, ...]:
    """What the connection carries without any settings sent (the next transaction's start)."""
    cur = db.connection().cursor()
    cur.execute(SEEN)
    return tuple(cur.fetchone())


def _ms(database) -> tuple[str, str]:  # noqa: ANN001
    return str(database.statement_timeout_ms), str(database.lock_timeout_ms)


def test_a_statement_outside_a_transaction_runs_with_the_settings_of_its_scope(pg_db):
    env = uuid.uuid4()
    with tenant_scope(env):
        assert _seen() == (*_ms(pg_db), str(env), "", "on")
    with unscoped():
        seen = _seen()
    assert seen[2] == "" and seen[3] == "on"
    assert _raw() == DEFAULTS  # all of it went with the statement's implicit transaction


def test_a_transaction_runs_with_the_settings_of_its_scope_and_leaves_none(pg_db):
    env = uuid.uuid4()
    with tenant_scope(env), db.atomic():
        assert _seen() == (*_ms(pg_db), str(env), "", "on")
        assert _seen()[2] == str(env)  # the whole transaction, not its first statement only
    with tenant_scope(env), unscoped(), commit_without_waiting(), db.atomic():
        assert _seen() == (*_ms(pg_db), str(env), "on", "off")
    assert _raw() == DEFAULTS


def test_the_settings_are_set_local_statements(pg_db):
    with tenant_scope(uuid.uuid4()), unscoped():
        sql, _ = pg_db._settings_sql(nowait=True)
    statements = [s.strip() for s in sql.split(";")]
    assert len(statements) == 5
    assert all(s.startswith("SET LOCAL ") for s in statements), statements
