"""`pms-cli serve`: run the API under gunicorn. On the embedded default it first makes the dev
keys, migrates the SQLite file, seeds the demo hotel if the database is empty, and prints a
working token and curl line."""

from __future__ import annotations

import os
import sys

import typer

from cli.output import fail, refuse_to_serve
from pms.config import load_settings


def serve(port: int = typer.Option(None, help="Port (default $PORT or 8000)."),
          workers: int = typer.Option(None, help="Gunicorn workers (default $WEB_CONCURRENCY, "
                                      "else 2 on the embedded SQLite file, two per CPU on "
                                      "PostgreSQL)."),
          prepare: bool = typer.Option(True, help="Keys, migrations and demo data first "
                                                  "(embedded default only)."),
          ) -> None:
    """Serve the API under gunicorn."""
    settings = load_settings()
    refuse_to_serve(settings, "pms-cli serve")  # issue 28: no development fallback in production
    port = port or settings.port
    env = dict(os.environ, PORT=str(port))
    if workers:
        env["WEB_CONCURRENCY"] = str(workers)
    elif not settings.is_postgres and "WEB_CONCURRENCY" not in env:
        # one SQLite file, written by every worker: more processes only queue on its lock
        env["WEB_CONCURRENCY"] = "2"
    if prepare and settings.jwks_is_local_file:
        from cli.demo import DEMO_ENV_ID, seed_demo
        from pms.db.migrator import migrate
        from pms.devkeys import ForeignKeySet, generate_keys, mint_token

        try:
            generate_keys(settings)
        except ForeignKeySet as exc:  # issue 28: never written over; no demo token from it
            fail(f"{exc}; start with --no-prepare to serve with it", 2)
        if not settings.is_postgres:
            migrate(settings.migration_database_url, service_url=settings.database_url)
        from pms.db.database import connection_scope, init_db

        init_db(settings.database_url, pool_size=2)
        with connection_scope():  # released before the server starts
            summary = seed_demo(settings, DEMO_ENV_ID)
        token = mint_token(settings, env_id=DEMO_ENV_ID, ttl_s=12 * 3600)
        prop = summary["property_id"]
        typer.echo("\nDemo env:      " + str(DEMO_ENV_ID))
        typer.echo("Demo property: " + str(prop))
        typer.echo("Token (12 h):  " + token)
        typer.echo("\nTry:\n  curl -s -H 'Authorization: Bearer " + token + "' "
                   f"-H 'X-Platform-Env-Id: {DEMO_ENV_ID}' "
                   f"http://127.0.0.1:{port}/v1/properties/{prop}\n")
        sys.stdout.flush()
    argv = [sys.executable, "-m", "gunicorn", "-c", "python:pms.gunicorn_conf", "pms.app:get_app()"]
    os.execvpe(argv[0], argv, env)
