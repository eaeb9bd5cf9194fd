"""`pms-cli calendar fill`: make every room type's calendar rows for the horizon.

Room types get their `inventory_day` rows for the horizon (PMS_CALENDAR_HORIZON_DAYS, 550 days
by default) when they are created, and the night audit extends them by the day it rolls. This
command is the upgrade path for room types created before that (a database older than the calendar horizon),
and the way to widen the window at once after raising the horizon. One short transaction and one
set-based statement per property; safe to re-run (rows that exist are left as they are), so a
second run adds 0 rows. Without it nothing is wrong, only slower: a booking of a night without
its row makes the row itself (one more round trip).
"""

from __future__ import annotations

import time
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cli.output import (
    console,
    emit,
    env_properties,
    fail,
    open_database,
    parse_uuid,
    require_property_choice,
)
from pms.config import MAX_CALENDAR_HORIZON_DAYS, load_settings

app = typer.Typer(help="Room type calendars (inventory rows kept ahead for booking).",
                  no_args_is_help=True)


@app.command("fill")
def fill(
    env: str = typer.Option(..., "--env", help="Env id (UUID)."),
    property_code: str = typer.Option(None, "--property", help="One property by code."),
    all_properties: bool = typer.Option(False, "--all", help="Every property of the env."),
    days: int = typer.Option(None, "--days", help="Days ahead of each property's business "
                             "date (default: PMS_CALENDAR_HORIZON_DAYS, 550)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Fill each room type's calendar rows from the business date for the horizon (idempotent)."""
    from pms.context import system_ctx
    from pms.services.inventory.inventory_calendar import fill_property_calendars

    require_property_choice(property_code, all_properties, "to fill")
    if days is not None and not 1 <= days <= MAX_CALENDAR_HORIZON_DAYS:
        fail(f"--days must be 1..{MAX_CALENDAR_HORIZON_DAYS}, not {days}", 2)
    env_id = parse_uuid(env)
    settings = load_settings()
    open_database(settings)
    horizon = days if days is not None else settings.calendar_horizon_days
    ctx = system_ctx(env_id, sub="pms-cli calendar fill")
    props = env_properties(ctx, property_code)
    if not props:
        fail("no such property" if property_code else "the env has no property", 1)

    results: list[dict[str, Any]] = []

    def one(prop: Any) -> None:
        started = time.perf_counter()
        done = fill_property_calendars(ctx, prop.id, days=horizon)
        results.append({"property_code": done.property_code,
                        "property_id": str(done.property_id), "room_types": done.room_types,
                        "from_date": done.from_date.isoformat(),
                        "to_date": done.to_date.isoformat(), "days": horizon,
                        "rows_added": done.added,
                        "seconds": round(time.perf_counter() - started, 3)})

    if as_json:
        for prop in props:
            one(prop)
    else:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console, transient=False) as progress:
            task = progress.add_task("filling calendars", total=len(props))
            for prop in props:
                progress.update(task, description=f"filling calendars: {prop.code}")
                one(prop)
                progress.advance(task)
    emit({"results": results, "days": horizon,
          "rows_added": sum(r["rows_added"] for r in results)}, as_json=as_json,
         title=f"Calendars filled ({horizon} days ahead)",
         columns=["property", "room types", "from", "to", "rows added", "seconds"],
         rows=[(r["property_code"], r["room_types"], r["from_date"], r["to_date"],
                r["rows_added"], r["seconds"]) for r in results])
