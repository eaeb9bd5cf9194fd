"""A database made by the migrations (SQLite, in the test's tmp_path) as the process's database,
for the CLI commands that open it themselves: what `pms-cli` is run against in these tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cli.main import app as cli_app
from pms import wiring
from pms.context import Ctx
from pms.db.database import db, make_database
from pms.db.migrator import migrate
from pms.devkeys import all_scopes


@contextmanager
def migrated_database(tmp_path: Path, name: str) -> Iterator[tuple[Ctx, dict[str, str]]]:
    """(a staff ctx of a fresh env, the environment the CLI reads the database from). The
    process's database and wiring are restored after (a command wires its own settings)."""
    url = f"sqlite:///{tmp_path}/{name}.db"
    migrate(url)
    previous = db.obj
    db.initialize(make_database(url))
    ctx = Ctx(env_id=uuid.uuid4(), sub="t", client_kind="user", scopes=frozenset(all_scopes()),
              now=datetime.now(UTC))
    try:
        with wiring.installed():
            yield ctx, {"PMS_DATABASE_URL": url, "PMS_MIGRATION_DATABASE_URL": url}
    finally:
        if not db.is_closed():
            db.close()
        db.initialize(previous)


def run_cli(env: dict[str, str], *args: str) -> Any:
    return CliRunner().invoke(cli_app, list(args), env=env)


__all__: list[str] = ["migrated_database", "run_cli"]
