"""`PMS_MIGRATION_DATABASE_URL` (CONTRACT §1): migrations may bypass the pooler; without it they
use `PMS_DATABASE_URL`. `pms-cli db migrate` migrates the migration URL and grants the service
URL's role."""

from __future__ import annotations

import inspect

from pms.config import load_settings


def test_migrations_default_to_the_service_url():
    settings = load_settings({"PMS_DATABASE_URL": "postgresql://app@bouncer:6432/pms"})
    assert settings.migration_database_url == "postgresql://app@bouncer:6432/pms"


def test_migrations_use_their_own_url_when_given():
    settings = load_settings({"PMS_DATABASE_URL": "postgresql://app@bouncer:6432/pms",
                              "PMS_MIGRATION_DATABASE_URL": "postgresql://owner@db:5432/pms"})
    assert settings.migration_database_url == "postgresql://owner@db:5432/pms"
    assert settings.database_url == "postgresql://app@bouncer:6432/pms"


def test_db_migrate_runs_on_the_migration_url():
    from cli import db as db_cli

    source = inspect.getsource(db_cli.migrate)
    assert "run(settings.migration_database_url, service_url=settings.database_url)" in source
