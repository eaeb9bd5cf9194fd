"""`pms-cli fiscal export|verify`: a property's fiscal journal (the hash chain of its invoices and
credit notes, pms.services.cashiering.fiscal_journal) for an auditor.

`export --env ID --property CODE --out FILE` writes the chain, its recorded end and every
document as one JSON file. `verify --env ID --property CODE` checks the chain as the database
holds it; `verify --file FILE` checks an export offline (no database, no configuration): every
entry links to the one before, every document matches what was chained and is in the chain, and
the chain reaches its recorded end. Exit 1 when it does not verify (the problems are listed),
2 for a file that cannot be read. `--json` for scripts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from cli.output import emit, env_properties, fail, open_database, parse_uuid

app = typer.Typer(help="Fiscal journal: export a property's chain of documents, verify it.",
                  no_args_is_help=True)

ENV_OPT = typer.Option(None, "--env", help="Env id (UUID).")
PROPERTY_OPT = typer.Option(None, "--property", help="The property, by code.")


def _export(env: str | None, code: str | None) -> dict[str, Any]:
    from pms.config import load_settings
    from pms.context import system_ctx
    from pms.db.uow import read_scope
    from pms.services.cashiering import fiscal_journal

    if not env or not code:
        fail("name the property: --env ID --property CODE (or verify an export with --file)", 2)
    open_database(load_settings())
    ctx = system_ctx(parse_uuid(env), sub="pms-cli fiscal")
    found = env_properties(ctx, code)
    if not found:
        fail(f"no property {code} in this env", 1)
    with read_scope(ctx):
        return {"property_code": code, **fiscal_journal.export(found[0].id)}


@app.command("export")
def export(env: str = ENV_OPT, property_code: str = PROPERTY_OPT,
           out: Path = typer.Option(..., "--out", help="The file to write (JSON)."),
           json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Write the property's fiscal chain and its documents to one file."""
    data = _export(env, property_code)
    out.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    summary = {"file": str(out), "entries": len(data["entries"]),
               "documents": len(data["documents"]),
               "last_hash": (data["head"] or {}).get("last_hash")}
    emit(summary, as_json=json_out, title="Fiscal export", columns=["field", "value"],
         rows=[[k, v] for k, v in summary.items()])


@app.command("verify")
def verify(env: str = ENV_OPT, property_code: str = PROPERTY_OPT,
           file: Path = typer.Option(None, "--file", help="Verify this export offline."),
           json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Check the fiscal chain (the database's, or an export's with --file)."""
    from pms.services.cashiering import fiscal_journal

    if file is not None:
        try:
            data = json.loads(file.read_text())
            entries, documents, head = data["entries"], data["documents"], data.get("head")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            fail(f"{file}: not a fiscal export ({exc})", 2)
    else:
        data = _export(env, property_code)
        entries, documents, head = data["entries"], data["documents"], data["head"]
    result = fiscal_journal.verify_chain(entries, documents, head=head).as_dict()
    rows = [["verified" if result["ok"] else "BROKEN", result["entries"], result["documents"],
             result["last_hash"][:16]]]
    emit(result, as_json=json_out, title="Fiscal chain",
         columns=["chain", "entries", "documents", "last hash"], rows=rows)
    if not result["ok"]:
        if not json_out:
            for problem in result["problems"]:
                typer.echo(f"  {problem}", err=True)
        raise typer.Exit(1)
