"""One place for how the CLI prints: rich tables for people, JSON for scripts (`--json`)."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterable, Sequence
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

    err_console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code)


def parse_uuid(value: str, name: str = "--env") -> uuid.UUID:
    """`value` as a UUID, or exit 2 naming the option."""
    try:
        return uuid.UUID(value)
    except ValueError:
        fail(f"{name} must be a UUID, not {value!r}", 2)
        raise  # unreachable: fail() exits
