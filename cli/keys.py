"""`pms-cli keys sweep`: the digital keys' sweeper for one env: writes EXPIRED (with
a `digital_key:expired` event) for live keys past valid_until, then sends due lock commands
again (pending or failed ones, and online revocations never confirmed). Safe to re-run and to
run on several hosts at once. The `digital_keys.sweep` schedule runs it for every env without
a cron line (pms.scheduling); this command sweeps one env now."""

from __future__ import annotations

import typer

from cli.output import emit, open_database, parse_uuid
from pms.config import load_settings

app = typer.Typer(help="Digital keys maintenance.", no_args_is_help=True)


@app.command("sweep")
def sweep(env: str = typer.Option(..., "--env", help="The env id (UUID)."),
          json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Expire the env's keys past valid_until and retry their due lock commands."""
    from pms.context import system_ctx
    from pms.platform import build_platform
    from pms.services.keys.lock_sync import sweep as run_sweep

    env_id = parse_uuid(env)
    settings = load_settings()
    open_database(settings)
    result = run_sweep(system_ctx(env_id, sub="pms-cli keys sweep"),
                       build_platform(settings).locks)
    emit(result, as_json=json_out, title="Digital keys sweep", columns=["expired", "synced"],
         rows=[[result["expired"], result["synced"]]])
