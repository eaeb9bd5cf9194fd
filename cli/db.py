"""`pms-cli db migrate|status`."""

from __future__ import annotations

import typer

from cli.output import emit, fail
from pms.config import load_settings

app = typer.Typer(help="Database migrations.", no_args_is_help=True)


@app.command()
def migrate(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Apply pending migrations as the owner (PMS_MIGRATION_DATABASE_URL); on PostgreSQL also
    enforce row-level security on every tenant table and grant the service role its rights."""
    from pms.db.migrator import migrate as run

    settings = load_settings()
    try:
        ran = run(settings.migration_database_url, service_url=settings.database_url)
    except Exception as exc:  # noqa: BLE001 - report and exit non-zero
        fail(f"migration failed: {exc}")
    emit({"applied": ran}, as_json=json_out, title="Applied migrations", columns=["migration"],
         rows=[[name] for name in ran] or [["(nothing to do)"]])


@app.command()
def status(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Show applied and pending migrations."""
    from pms.db.migrator import status as read

    settings = load_settings()
    try:
        st = read(settings.migration_database_url)
    except Exception as exc:  # noqa: BLE001
        fail(f"cannot read migration status: {exc}")
    emit({"done": st.done, "pending": st.pending}, as_json=json_out, title="Migrations",
         columns=["migration", "state"],
         rows=[[n, "applied"] for n in st.done] + [[n, "pending"] for n in st.pending])
    if st.pending:
        raise typer.Exit(3)
