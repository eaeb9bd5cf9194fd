"""`pms-cli email list`: what the embedded email sandbox has sent (PMS_PLATFORM_URL=embedded)."""

from __future__ import annotations

import typer

from cli.output import emit, fail, open_database, parse_uuid
from pms.config import load_settings

app = typer.Typer(help="Transactional email (the embedded sandbox).", no_args_is_help=True)


@app.command("list")
def list_(env: str = typer.Option(..., "--env", help="The env id (UUID)."),
          limit: int = typer.Option(50, "--limit", min=1, max=1000),
          json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Emails the sandbox sent in an env, newest first."""
    from pms.platform.email import EmbeddedEmail

    env_id = parse_uuid(env)
    settings = load_settings()
    if not settings.embedded_platform:
        fail("the email sandbox exists only with PMS_PLATFORM_URL=embedded", 2)
    open_database(settings)
    rows = EmbeddedEmail().sent(env_id, limit=limit)
    emit(rows, as_json=json_out, title="Sandbox email", columns=["sent at", "to", "subject"],
         rows=[[r["sent_at"], r["to"], r["subject"]] for r in rows])
