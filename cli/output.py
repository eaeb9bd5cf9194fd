"""One place for how the CLI prints: rich tables for people, JSON for scripts (`--json`)."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)


def _default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=_default, sort_keys=True) + "\n")


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    console.print(table)


def emit(data: Any, *, as_json: bool, title: str = "", columns: Sequence[str] = (),
         rows: Iterable[Sequence[Any]] = ()) -> None:
    """Print `data` as JSON, or `rows` as a table."""
    if as_json:
        print_json(data)
    else:
        print_table(title, columns, rows)


def fail(message: str, code: int = 1) -> None:
    import typer

    # one line, unwrapped: paths and commands in the message stay copyable and greppable
    err_console.print(f"[red]error:[/red] {message}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def require_property_choice(property_code: str | None, all_properties: bool, what: str) -> None:
    """Exactly one of --property CODE and --all (exit 2 otherwise): a command that changes
    properties never picks "every property" for an operator who only forgot the option."""
    if property_code and all_properties:
        fail("use --property CODE or --all, not both", 2)
    if not property_code and not all_properties:
        fail(f"choose the properties {what}: --property CODE for one, or --all for every "
             "property of the env", 2)


def parse_uuid(value: str, name: str = "--env") -> uuid.UUID:
    """`value` as a UUID, or exit 2 naming the option."""
    try:
        return uuid.UUID(value)
    except ValueError:
        fail(f"{name} must be a UUID, not {value!r}", 2)
        raise  # unreachable: fail() exits


def open_database(settings: Any, *, pool_size: int = 2) -> Any:
    """Bind the database of `settings` for a command, or exit 1 with a clear message (no
    traceback) when it is missing or not migrated. An embedded SQLite file is never created
    here: a command run against an empty PMS_HOME must say so, not make an empty database."""
    from pathlib import Path

    from pms.config import sqlite_path
    from pms.db.database import init_db
    from pms.db.migrator import status

    url = settings.database_url
    where = url.split("@")[-1]  # never print a password
    if url.startswith("sqlite://"):
        path = sqlite_path(url)
        where = path
        if path not in ("", ":memory:") and not Path(path).exists():
            fail(f"no database at {path}: run `pms-cli db migrate` first (embedded files live "
                 f"under PMS_HOME={settings.home}; set PMS_HOME or PMS_DATABASE_URL to use "
                 "another)")
    try:
        pending = status(settings.migration_database_url).pending
    except Exception as exc:  # noqa: BLE001 - any failure to read it is reported, not raised
        fail(f"cannot open the database at {where}: {type(exc).__name__}: {exc}")
        raise  # unreachable: fail() exits
    if pending:
        fail(f"the database at {where} is not migrated ({len(pending)} pending, first "
             f"{pending[0]}): run `pms-cli db migrate`")
    from pms import wiring

    wiring.set_calendar_horizon(settings.calendar_horizon_days)  # room types, night audit
    database = init_db(url, pool_size=pool_size)
    _scope_to_command(database)
    return database


# The connection scope of the running command: entered when the command binds its database,
# left by `end_command`, which the root callback (cli/main.py) registers on the command's context.
_COMMAND_SCOPE = ExitStack()


def _scope_to_command(database: Any) -> None:
    """One connection scope per CLI command (pms.db.database.connection_scope), so the
    connection is released (and any transaction left open rolled back) when the command ends."""
    _COMMAND_SCOPE.enter_context(database.connection_scope())


def end_command() -> None:
    """Leave the running command's connection scope (the root callback's on-close hook)."""
    _COMMAND_SCOPE.close()


def refuse_to_serve(settings, process: str, reads: tuple[str, ...] | None = None) -> None:  # noqa: ANN001
    """Exit 2 naming the variables when a serving command would fall back to a development
    default outside the embedded one (pms/startup.py)."""
    from pms.startup import WEB, development_fallbacks

    problems = development_fallbacks(settings, WEB if reads is None else reads)
    if problems:
        fail(f"{process} refuses to start: " + "; ".join(problems), 2)


def leave_command_scope() -> None:
    """For a long-running command (the relay, the platform consumer): give up the command's
    connection scope now, so each iteration of its loop owns (and closes) its own connection
    (pms.db.iteration); a scope nested in the command's would keep a dead connection forever."""
    _COMMAND_SCOPE.close()


def env_properties(ctx: Any, code: str | None) -> list[Any]:
    """The env's properties by code (one, when `code` names it), for commands that take
    `--property CODE` or `--all`."""
    from pms.db.uow import read_scope
    from pms.models import Property

    with read_scope(ctx):
        query = Property.select().order_by(Property.code)
        if code:
            query = query.where(Property.code == code)
        return list(query)
