"""`pms-cli privacy purge`: apply an env's retention rules now (pms.services.privacy.retention:
each property's `privacy` settings, else PMS_PRIVACY_*_RETENTION_DAYS: profiles without a stay
that long are erased, registrations cleared and message bodies removed that long after
departure), with a progress bar, a summary table or `--json`; `--dry-run` counts and changes
nothing. Safe to re-run: an erased profile is not taken again. The `privacy.retention`
schedule runs the same purge once a day per env."""

from __future__ import annotations

import typer
from rich.progress import BarColumn, Progress, TextColumn

from cli.output import console, emit, open_database, parse_uuid
from pms.config import load_settings

app = typer.Typer(help="A guest's data rights: retention.", no_args_is_help=True)


@app.command("purge")
def purge(env: str = typer.Option(..., "--env", help="The env id (UUID)."),
          dry_run: bool = typer.Option(False, "--dry-run", help="Count; change nothing."),
          json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Erase the profiles, clear the registrations and remove the messages past each
    property's retention rules."""
    from pms.context import system_ctx
    from pms.services.privacy import retention

    env_id = parse_uuid(env)
    open_database(load_settings())
    ctx = system_ctx(env_id, sub="pms-cli privacy purge")
    with Progress(TextColumn("purge"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  console=console, disable=json_out or dry_run, transient=True) as bar:
        task = bar.add_task("purge", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        report = retention.purge(ctx, dry_run=dry_run, progress=advance)
    emit(report, as_json=json_out, title="Retention purge" + (" (dry run)" if dry_run else ""),
         columns=["profiles", "profiles erased", "skipped", "registrations cleared",
                  "messages removed"],
         rows=[[report["profiles"], report["profiles_erased"], len(report["skipped"]),
                report["registrations_cleared"], report["messages_removed"]]])
