"""`pms-cli serve`: run the API under gunicorn. On the embedded default it first makes the dev
keys, migrates the SQLite file, seeds the demo hotel if the database is empty, and prints a
working token and curl line."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import typer

from cli.output import fail, refuse_to_serve
from pms.config import load_settings


def serve(port: int = typer.Option(None, help="Port (default $PORT or 8000)."),
          host: str = typer.Option("127.0.0.1", envvar="PMS_HOST",
                                   help="Address to listen on (0.0.0.0: every interface)."),
          workers: int = typer.Option(None, help="Gunicorn workers (default $WEB_CONCURRENCY, "
                                      "else 2 on the embedded SQLite file, two per CPU on "
                                      "PostgreSQL)."),
          prepare: bool = typer.Option(True, help="Keys, migrations and demo data first "
                                                  "(embedded default only)."),
          demo_days: int = typer.Option(30, "--demo-days", envvar="PMS_DEMO_DAYS", min=0,
                                        max=365, help="A new demo hotel lives this many days "
                                        "before today through the API (0: opened today)."),
          ) -> None:
    """Serve the API under gunicorn."""
    settings = load_settings()
    refuse_to_serve(settings, "pms-cli serve")  # no development fallback in production
    port = port or settings.port
    env = dict(os.environ, PORT=str(port), PMS_HOST=host)
    if workers:
        env["WEB_CONCURRENCY"] = str(workers)
    elif not settings.is_postgres and "WEB_CONCURRENCY" not in env:
        # one SQLite file, written by every worker: more processes only queue on its lock
        env["WEB_CONCURRENCY"] = "2"
    if prepare and settings.jwks_is_local_file:
        from cli.demo import DEMO_ENV_ID, seed_living_demo
        from pms.db.migrator import migrate
        from pms.devkeys import ForeignKeySet, generate_keys, mint_token

        try:
            generate_keys(settings)
        except ForeignKeySet as exc:  # never written over; no demo token from it
            fail(f"{exc}; start with --no-prepare to serve with it", 2)
        if not settings.is_postgres:
            migrate(settings.migration_database_url, service_url=settings.database_url)
        from pms.db.database import connection_scope, init_db

        init_db(settings.database_url, pool_size=2)
        with connection_scope():  # released before the server starts
            summary = seed_living_demo(settings, DEMO_ENV_ID, days=demo_days)
        token = mint_token(settings, env_id=DEMO_ENV_ID, ttl_s=12 * 3600)
        token_file = write_token(settings.home, token)
        # the gateway's part for the admin console on loopback (embedded default only: the
        # app ignores it elsewhere; pms/api/console.py)
        env["PMS_CONSOLE_TOKEN_FILE"] = str(token_file)
        prop = summary["property_id"]
        shown = _shown_path(token_file)
        url_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        typer.echo(f"\nDemo env:      {DEMO_ENV_ID}")
        typer.echo(f"Demo property: {prop} (business date {summary['business_date']})")
        if "month_reservations" in summary:
            typer.echo(f"Demo month:    {summary['month_reservations']} reservations, "
                       f"{summary['month_in_house']} in house, "
                       f"{summary['month_arrivals_today']} arrivals and "
                       f"{summary['month_departures_today']} departures today")
        typer.echo(f"Token (12 h):  written to {shown}")
        typer.echo(f"Serving on:    http://{url_host}:{port}  (document: /v1/openapi.json)")
        typer.echo(f"Admin console: http://{url_host}:{port}/admin/  (signed in as the demo staff)")
        typer.echo("\nTry:\n"
                   f"  curl -s http://{url_host}:{port}/v1/properties/{prop} \\\n"
                   f'    -H "Authorization: Bearer $(cat {shlex.quote(shown)})" \\\n'
                   f'    -H "X-Platform-Env-Id: {DEMO_ENV_ID}"\n')
        sys.stdout.flush()
    argv = [sys.executable, "-m", "gunicorn", "-c", "python:pms.gunicorn_conf", "pms.app:get_app()"]
    os.execvpe(argv[0], argv, env)


TOKEN_FILE = "demo-token"


def write_token(home: Path, token: str) -> Path:
    """The demo token in a file of its own (owner-only), so the terminal shows a path, not
    2 KB of JWT."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / TOKEN_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return path


def _shown_path(path: Path) -> str:
    """The path relative to the working directory when it is under it (shorter to read)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
