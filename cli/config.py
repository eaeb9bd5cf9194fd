"""`pms-cli config export|apply`: a property's configuration bundle, the same service
as `GET/POST /v1/properties/{id}/config-bundle` (pms/services/admin/config_bundles.py).

`export --property CODE [--out FILE]` writes the bundle (JSON) to FILE or stdout. `apply
--property CODE FILE [--dry-run]` shows the difference per row (create, update with the changed
fields, unchanged, kept) and, without `--dry-run`, applies it in one transaction. `--json` prints
the result as JSON. Exit 1: no such property; 2: a bundle that does not validate or apply.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from cli.output import emit, env_properties, fail, open_database, parse_uuid, print_json
from pms.config import load_settings

app = typer.Typer(help="Configuration bundles: export a property's configuration, apply it to "
                       "another property.", no_args_is_help=True)


def _property(env: str, code: str, sub: str):  # noqa: ANN202
    from pms.context import system_ctx
    from pms.services.admin.config_bundles import SECTION_RESOURCES, section_scope

    open_database(load_settings())
    # the operator's tool holds every section's scopes; the env's policies still decide for
    # its machine subject (docs/guides/authorization.md)
    scopes = frozenset(section_scope(name, write=write) for name in SECTION_RESOURCES
                       for write in (False, True))
    ctx = system_ctx(parse_uuid(env), sub=sub).with_(scopes=scopes)
    found = env_properties(ctx, code)
    if not found:
        fail(f"no property {code} in this env", 1)
    return ctx, found[0]


@app.command("export")
def export(
    env: str = typer.Option(..., "--env", help="Env id (UUID)."),
    property_code: str = typer.Option(..., "--property", help="The property, by code."),
    out: Path = typer.Option(None, "--out", help="Write the bundle here (default: stdout)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output (with --out: "
                                 "the file's path and hash as JSON)."),
) -> None:
    """Export the property's configuration as one versioned bundle (codes, no ids)."""
    import msgspec

    from pms.services.admin import config_bundles

    ctx, prop = _property(env, property_code, "pms-cli config export")
    bundle = config_bundles.export_bundle(ctx, prop.id)
    data = msgspec.to_builtins(bundle)
    if out is None:
        print_json(data)
        return
    out.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    summary = {"file": str(out), "bundle_version": bundle.bundle_version,
               "content_hash": bundle.content_hash}
    emit(summary, as_json=as_json, title="Configuration exported",
         columns=["file", "version", "hash"],
         rows=[(summary["file"], summary["bundle_version"], summary["content_hash"])])


@app.command("apply")
def apply(
    bundle_file: Path = typer.Argument(..., help="A bundle written by `config export`."),
    env: str = typer.Option(..., "--env", help="Env id (UUID)."),
    property_code: str = typer.Option(..., "--property", help="The property, by code."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the difference, write nothing."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Show the difference between a bundle and the property, and apply it (unless --dry-run)."""
    import msgspec

    from pms.errors import PmsError
    from pms.schemas.config_bundles import ConfigBundle
    from pms.services.admin import config_bundles

    try:
        bundle = msgspec.json.decode(bundle_file.read_bytes(), type=ConfigBundle)
    except OSError as exc:
        fail(f"cannot read {bundle_file}: {exc.strerror}", 2)
    except msgspec.ValidationError as exc:
        fail(f"not a valid bundle: {exc}", 2)
    except msgspec.DecodeError as exc:
        fail(f"not JSON: {exc}", 2)
    ctx, prop = _property(env, property_code, "pms-cli config apply")
    try:
        result = config_bundles.apply_bundle(ctx, prop.id, bundle, dry_run=dry_run)
    except PmsError as exc:
        errors = "; ".join(f"{e['field']}: {e['message']}" for e in exc.extra.get("errors") or [])
        fail(f"{exc} ({errors})" if errors else str(exc), 1 if exc.status == 404 else 2)
    emit(msgspec.to_builtins(result), as_json=as_json,
         title=f"{'Dry run' if dry_run else 'Applied'} to {prop.code}: " + ", ".join(
             f"{n} {a}" for a, n in result.counts.items() if n),
         columns=["section", "code", "action", "changed"],
         rows=[(c.section, c.code, c.action, ", ".join(c.changed)) for c in result.changes])
