"""Versioned migrations (peewee-migrate) plus the PostgreSQL tenancy guard rails.

`migrate()` runs as the owner (`PMS_MIGRATION_DATABASE_URL`). After the versioned files it makes
sure, on PostgreSQL, that every table with an `env_id` column has row-level security ENABLEd and
FORCEd with the tenant policy, and grants the service role (`PMS_DATABASE_URL`'s user) plain DML
rights. Doing that from the catalog, not by hand per migration, means no tenant table can be
forgotten.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import peewee
from peewee_migrate import Router

from pms.db.database import db, is_postgres, make_database

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
TENANT_POLICY = "tenant_isolation"
# Tables the cross-env relay machinery reads and marks (outbox relay, audit push).
CROSS_ENV_TABLES = ("outbox_event", "audit_entry")
ENV_EXPR = "nullif(current_setting('app.env_id', true), '')::uuid"
CROSS_ENV_EXPR = "current_setting('app.cross_env', true) = 'on'"

log = logging.getLogger("pms.migrations")


@dataclass(frozen=True)
class MigrationStatus:
    done: list[str]
    pending: list[str]


def _router(database: peewee.Database) -> Router:
    return Router(database, migrate_dir=MIGRATIONS_DIR, logger=log)


def status(url: str) -> MigrationStatus:
    database = make_database(url, pool_size=1)
    db.initialize(database)
    try:
        router = _router(database)
        done = router.done
        return MigrationStatus(done=done, pending=[n for n in router.todo if n not in done])
    finally:
        database.close()


def migrate(url: str, *, service_url: str | None = None) -> list[str]:
    """Apply pending migrations, then (PostgreSQL) RLS policies and grants. Returns what ran."""
    database = make_database(url, pool_size=1, statement_timeout_ms=0)
    db.initialize(database)
    try:
        ran = _router(database).run()
        if is_postgres(database):
            ensure_row_level_security(database)
            if service_url:
                grant_service_role(database, service_url)
        return ran
    finally:
        database.close()


def tenant_tables(database: peewee.Database) -> list[str]:
    cursor = database.execute_sql(
        "SELECT table_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND column_name = 'env_id' ORDER BY table_name"
    )
    return [row[0] for row in cursor.fetchall()]


def ensure_row_level_security(database: peewee.Database) -> None:
    """ENABLE + FORCE RLS and (re)create the tenant policy on every table with env_id."""
    with database.atomic():
        for table in tenant_tables(database):
            using = ENV_EXPR
            using_sql = f"env_id = {using}"
            if table in CROSS_ENV_TABLES:
                using_sql = f"({using_sql}) OR {CROSS_ENV_EXPR}"
            database.execute_sql(f'ALTER TABLE "{table}" ENABLE ROW LEVEL SECURITY')
            database.execute_sql(f'ALTER TABLE "{table}" FORCE ROW LEVEL SECURITY')
            database.execute_sql(f'DROP POLICY IF EXISTS {TENANT_POLICY} ON "{table}"')
            database.execute_sql(
                f'CREATE POLICY {TENANT_POLICY} ON "{table}" USING ({using_sql}) '
                f"WITH CHECK ({using_sql})"
            )


def grant_service_role(database: peewee.Database, service_url: str) -> None:
    user = urlparse(service_url).username
    if not user:
        return
    role = unquote(user)
    owner = database.execute_sql("SELECT current_user").fetchone()[0]
    if role == owner:
        log.warning("service role %s owns the tables: RLS is FORCEd, but use a separate role", role)
        return
    quoted = '"' + role.replace('"', '""') + '"'
    with database.atomic():
        database.execute_sql(f"GRANT USAGE ON SCHEMA public TO {quoted}")
        database.execute_sql(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {quoted}")
        database.execute_sql(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {quoted}")


def make_migration(name: str, models: list[type[peewee.Model]], url: str) -> str | None:
    """Developer tool: write the next migration file for `models` (diffed against the files).

    Our column types (pms.db.fields) are kept as they are instead of being decayed to their
    peewee base classes.
    """
    from peewee_migrate import auto

    auto.PW_MODULES = (*auto.PW_MODULES, "pms.db.fields")
    for cls in ("JsonField", "UtcDateTimeField", "MoneyField"):
        auto.FIELD_MODULES_MAP[cls] = "pmsf"
    database = make_database(url, pool_size=1)
    db.initialize(database)
    router = _router(database)
    created = router.create(name, auto=models)
    if created:
        path = MIGRATIONS_DIR / f"{created}.py"
        text = path.read_text()
        # Convention: no single-column FK indexes; composite indexes lead with env_id.
        text = text.replace("pw.ForeignKeyField(column_name=",
                            "pw.ForeignKeyField(index=False, column_name=")
        text = re.sub(r'^"""Peewee migrations -- .*?"""\n',
                      f'"""Migration {created} (peewee-migrate; generated by '
                      f'pms.db.migrator.make_migration)."""\n', text, count=1, flags=re.S)
        text = text.replace("from contextlib import suppress\n\n", "")
        text = text.replace("\nwith suppress(ImportError):\n"
                            "    import playhouse.postgres_ext as pw_pext\n", "")
        text = text.replace(
            "from peewee_migrate import Migrator\n",
            "from peewee_migrate import Migrator\n\nfrom pms.db import fields as pmsf\n", 1)
        path.write_text(text)
    return created
