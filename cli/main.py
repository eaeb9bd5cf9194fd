"""`pms-cli`: the Typer root. Each sub-command group lives in its own module and is registered
here; commands parse options, call pms.services, and print through cli.output."""

from __future__ import annotations

import typer

from cli import ari as ari_cli
from cli import calendar as calendar_cli
from cli import config as config_cli
from cli import db, demo, dev, eod, openapi, output, serve
from cli import email as email_cli
from cli import fiscal as fiscal_cli
from cli import keys as keys_cli
from cli import outbox as outbox_cli
from cli import platform as platform_cli
from cli import privacy as privacy_cli
from cli import schedules as schedules_cli
from cli.help import set_metavars

app = typer.Typer(help="Hotel PMS maintenance: database, server, dev tokens, demo data, "
                       "night audit, outbox.", no_args_is_help=True, add_completion=False)
app.add_typer(db.app, name="db")
app.add_typer(dev.app, name="dev")
app.add_typer(demo.app, name="demo")
app.command("serve")(serve.serve)
app.command("openapi")(openapi.openapi)
app.command("end-of-day")(eod.end_of_day)
app.add_typer(eod.cashiering_app, name="cashiering")
app.add_typer(outbox_cli.app, name="outbox")
app.add_typer(platform_cli.app, name="platform")
app.add_typer(email_cli.app, name="email")
app.add_typer(calendar_cli.app, name="calendar")
app.add_typer(keys_cli.app, name="keys")
app.add_typer(schedules_cli.app, name="schedules")
app.add_typer(ari_cli.app, name="ari")
app.add_typer(config_cli.app, name="config")  # configuration bundles
app.add_typer(fiscal_cli.app, name="fiscal")
app.add_typer(privacy_cli.app, name="privacy")


@app.callback()
def _root(ctx: typer.Context) -> None:
    """Hotel PMS maintenance: database, server, dev tokens, demo data, night audit, outbox."""
    ctx.call_on_close(output.end_command)  # one connection scope per command, left at its end


set_metavars(app)  # after every command is registered: no `<str>` / `<bool>` in --help


def main() -> None:
    app()


if __name__ == "__main__":
    main()
