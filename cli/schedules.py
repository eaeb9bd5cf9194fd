"""`pms-cli schedules`: the service's recurring work (pms.scheduling). `run` is what the
platform's schedule service invokes for a registered schedule: it runs the named (or every)
schedule whose tick is due, through the same claim as the processes' own scheduler threads, so
a trigger and a host's loop never run one tick twice. `list` shows when each is next due."""

from __future__ import annotations

import typer

from cli.output import emit, fail, open_database
from pms.config import load_settings

app = typer.Typer(help="The service's recurring work (key sweeper, purges, reconciler).",
                  no_args_is_help=True)


@app.command("run")
def run(names: list[str] = typer.Argument(None, metavar="NAME",
                                          help="Schedules to run (all when none)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Run the due schedules (those named, or all) that this host claims."""
    from pms.platform import build_platform
    from pms.scheduling import BY_NAME, run_due

    unknown = [n for n in names or [] if n not in BY_NAME]
    if unknown:
        fail(f"unknown schedule {', '.join(unknown)}; known: {', '.join(BY_NAME)}", 2)
    settings = load_settings()
    open_database(settings)
    ran = run_due(build_platform(settings), names=names or None)
    emit(ran, as_json=json_out, title="Schedules run", columns=["schedule", "result"],
         rows=[[name, result] for name, result in ran.items()])


@app.command("list")
def list_schedules(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Every schedule: its interval, when it is next due and its last run."""
    from pms.db.scope import unscoped
    from pms.models.schedules import ScheduleTick
    from pms.scheduling import SCHEDULES

    open_database(load_settings())
    with unscoped():
        ticks = {t.name: t for t in ScheduleTick.select()}
    rows = []
    for s in SCHEDULES:
        t = ticks.get(s.name)
        rows.append({"name": s.name, "every_seconds": int(s.every.total_seconds()),
                     "due_at": t.due_at.isoformat() if t else None,
                     "owner": t.owner if t else None, "runs": t.runs if t else 0,
                     "last_result": t.last_result if t else None})
    emit(rows, as_json=json_out, title="Schedules",
         columns=["schedule", "every (s)", "next due", "last host", "runs", "last result"],
         rows=[[r["name"], r["every_seconds"], r["due_at"], r["owner"], r["runs"],
                r["last_result"]] for r in rows])
