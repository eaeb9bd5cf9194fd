"""`pms-cli dev keys|token`: the development key set and tokens (the embedded default only:
SQLite, the stub broker and a local file:// JWKS)."""

from __future__ import annotations

import uuid

import typer

from cli.output import fail, print_json
from pms.config import load_settings

app = typer.Typer(help="Development keys and tokens (refuses a non-local JWKS).",
                  no_args_is_help=True)


def _local_settings():  # noqa: ANN202
    """The settings, when they are the embedded default's; exit 1 otherwise (a key pair or a
    token minted for a production configuration would be trusted by whatever names it)."""
    settings = load_settings()
    if not settings.jwks_is_local_file:
        fail("PMS_JWKS_URL is not a local file:// key set; dev keys and tokens are refused")
    if not settings.development:
        fail("this is a production configuration (PostgreSQL or an AMQP broker, see "
             "PMS_DATABASE_URL and PMS_BROKER_URL); dev keys and tokens are refused")
    return settings


def _generate(generate_keys, settings, **kw):  # noqa: ANN001, ANN003, ANN202
    """generate_keys, a key set these commands did not make refused with exit 2."""
    from pms.devkeys import ForeignKeySet

    try:
        return generate_keys(settings, **kw)
    except ForeignKeySet as exc:
        fail(str(exc), 2)
        raise  # unreachable: fail() exits


@app.command()
def keys(force: bool = typer.Option(False, help="Replace an existing key pair."),
         json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Create the development RSA key pair and its JWKS (idempotent)."""
    from pms.devkeys import generate_keys

    settings = _local_settings()
    kid = _generate(generate_keys, settings, force=force)
    if json_out:
        print_json({"kid": kid, "jwks": str(settings.jwks_path)})
    else:
        typer.echo(f"key {kid} in {settings.jwks_path}")


@app.command()
def token(env: uuid.UUID = typer.Option(..., "--env", help="Tenant env id (the env_id claim)."),
          scope: list[str] = typer.Option(None, "--scope",
                                          help="Scope to grant (repeatable); all when omitted."),
          sub: str = typer.Option("dev-user", help="Subject claim."),
          kind: str = typer.Option("user", "--kind", help="client_kind claim."),
          holder: str = typer.Option(None, help="holder_id claim (guest sessions)."),
          ttl: int = typer.Option(3600, help="Lifetime in seconds."),
          json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Print a signed development token for an env."""
    from pms.devkeys import generate_keys, mint_token

    settings = _local_settings()
    _generate(generate_keys, settings)
    tok = mint_token(settings, env_id=env, scopes=scope or None, sub=sub, client_kind=kind,
                     holder_id=holder, ttl_s=ttl)
    if json_out:
        print_json({"token": tok, "env_id": str(env)})
    else:
        typer.echo(tok)
