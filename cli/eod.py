"""`pms-cli end-of-day`: the night audit per property, with a progress bar per step and a summary
table (or `--json`); exits 1 if any property failed; safe to re-run (a finished date answers
with its run, an interrupted one resumes). `pms-cli cashiering reconcile` finishes PENDING
payments and ledger postings left by a crash or an outage."""

from __future__ import annotations

import time
import uuid
from datetime import date
from typing import Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from cli.output import (
    console,
    emit,
    fail,
    open_database,
    parse_uuid,
    require_property_choice,
)
from pms.config import load_settings

cashiering_app = typer.Typer(help="Cashiering maintenance.", no_args_is_help=True)


def _setup(env: str) -> tuple[Any, Any, uuid.UUID]:
    from pms.context import system_ctx
    from pms.platform import build_platform

    env_id = parse_uuid(env)
    settings = load_settings()
    open_database(settings)
    return system_ctx(env_id, sub="pms-cli end-of-day"), build_platform(settings), env_id


def _properties(ctx: Any, code: str | None) -> list[Any]:
    from pms.db.uow import read_scope
    from pms.models import Property

    with read_scope(ctx):
        query = Property.select().order_by(Property.code)
        if code:
            query = query.where(Property.code == code)
        return list(query)


def _run_one(ctx: Any, platform: Any, prop: Any, day: date | None, dry_run: bool,
             progress: Progress | None, override_reason: str | None = None,
             catch_up: bool = False) -> dict[str, Any]:
    from pms.errors import PmsError
    from pms.schemas.common import to_data
    from pms.services.night_audit.end_of_day import STEPS, Hooks, run_night_audit

    tasks: dict[str, Any] = {}

    def on_step(step: str, phase: str, count: int) -> None:
        if progress is None:
            return
        if step not in tasks:
            tasks[step] = progress.add_task(f"{prop.code} {step}", total=1)
        if phase != "start":
            progress.update(tasks[step], completed=1,
                            description=f"{prop.code} {step}" + (" (done before)" if phase == "skip" else ""))

    started = time.perf_counter()
    try:
        out = run_night_audit(ctx, prop.id, business_date=day, dry_run=dry_run,
                              hooks=Hooks(ledger=getattr(platform, "ledger", None),
                                          progress=on_step),
                              override_reason=override_reason, catch_up=catch_up)
        result = to_data(out)
    except PmsError as exc:
        error = exc.detail
        if exc.code == "business_date_not_over":
            error += " (--override-reason 'why' closes it now)"
        result = {"status": "REFUSED" if exc.status == 409 else "FAILED", "error": error,
                  "code": exc.code, "steps": [], "business_date": None}
    if progress is not None and dry_run:
        for step in STEPS:
            on_step(step, "done", 0)
    result["property_code"] = prop.code
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def end_of_day(
    env: str = typer.Option(..., "--env", help="Env id (UUID)."),
    property_code: str = typer.Option(None, "--property", help="One property by code."),
    all_properties: bool = typer.Option(False, "--all", help="Every property of the env."),
    business_date: str = typer.Option(None, "--business-date", help="YYYY-MM-DD to close."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be done."),
    override_reason: str = typer.Option(
        None, "--override-reason",
        help="Close a business date the property's local date has not passed yet; the reason "
             "(1-500 characters) is audited."),
    catch_up: bool = typer.Option(
        False, "--catch-up",
        help="The business date is more than a day behind the local date: close every missed "
             "day in order (each run audited as a catch-up)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Run the night audit (no-shows, room and tax charges, housekeeping, figures, date roll).

    A business date closes once the property's local date has passed it; before that the run
    is refused (status REFUSED, exit 1) unless --override-reason says why. A business date
    more than a day behind the local date is refused too (night_audit_overdue) unless
    --catch-up closes every missed day in order."""
    # closing a business date is not undone by re-running: no default of "every property"
    require_property_choice(property_code, all_properties, "to close")
    day = None
    if business_date:
        try:
            day = date.fromisoformat(business_date)
        except ValueError:
            fail(f"--business-date must be YYYY-MM-DD, not {business_date!r}", 2)
    if override_reason is not None and not (override_reason.strip()
                                            and len(override_reason) <= 500):
        fail("--override-reason must be 1 to 500 characters", 2)
    ctx, platform, _ = _setup(env)
    props = _properties(ctx, property_code)
    if not props:
        fail("no such property" if property_code else "the env has no property", 1)
    results = []
    if as_json:
        results = [_run_one(ctx, platform, p, day, dry_run, None, override_reason, catch_up)
                   for p in props]
    else:
        with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                      console=console, transient=False) as progress:
            results = [_run_one(ctx, platform, p, day, dry_run, progress, override_reason,
                                catch_up) for p in props]
    failed = [r for r in results if r["status"] not in ("DONE", "PREVIEW")]
    emit({"results": results, "failed": len(failed)}, as_json=as_json,
         title="Night audit" + (" (dry run)" if dry_run else ""),
         columns=["property", "business date", "status", "no-shows", "stays charged",
                  "rooms dirty", "occupancy %", "seconds", "error"],
         rows=[(r["property_code"], r.get("business_date"), r["status"],
                *[{s["name"]: s["count"] for s in r["steps"]}.get(n, "")
                  for n in ("no_shows", "room_charges", "housekeeping")],
                (r.get("figures") or {}).get("occupancy_percent", ""), r["seconds"],
                r.get("error") or "") for r in results])
    if failed:
        raise typer.Exit(1)


@cashiering_app.command("reconcile")
def reconcile(
    env: str = typer.Option(..., "--env", help="Env id (UUID)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Finish PENDING card payments and ledger postings (idempotent by key; safe to re-run)."""
    from pms.services.cashiering.ledger_postings import reconcile_postings
    from pms.services.cashiering.payments import reconcile_payments

    ctx, platform, _ = _setup(env)
    outcome = reconcile_payments(ctx, payments=platform.payments, ledger=platform.ledger)
    outcome["ledger_posted"] = reconcile_postings(ctx, platform.ledger)
    emit(outcome, as_json=as_json, title="Reconciled", columns=["outcome", "count"],
         rows=sorted(outcome.items()))
