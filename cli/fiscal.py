"""`pms-cli fiscal export|verify|resend`: a property's fiscal journal (the hash chain of its
documents and payments, pms.services.cashiering.fiscal_journal) for an auditor, and its
documents' submissions to the fiscal provider.

`export --env ID --property CODE --out FILE` writes the chain, its recorded end and every
document as one JSON file. `verify --env ID --property CODE` checks the chain as the database
holds it; `verify --file FILE` checks an export offline (no database, no configuration): every
entry links to the one before, every document matches what was chained and is in the chain, and
the chain reaches its recorded end. Exit 1 when it does not verify (the problems are listed),
2 for a file that cannot be read. `resend --env ID --property CODE [--document ID]` submits
again every document of the property its fiscal provider has not accepted (or the one named):
each goes back to PENDING and the worker submits it. `--json` for scripts.

`export-audit --env ID --property CODE --from DAY --to DAY --out DIR` writes a period's
auditor's export (CSV files, the chained documents and manifest.json:
pms.services.cashiering.fiscal_export) into a directory, with a progress bar; `verify-audit
--dir DIR` checks such a directory offline against its manifest and the chain (exit 1 when it
does not verify, 2 for a directory that is not an export).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from cli.output import emit, env_properties, fail, open_database, parse_uuid

app = typer.Typer(help="Fiscal journal: export a property's chain of documents, verify it; "
                       "resend documents to the fiscal provider.",
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


FROM_OPT = typer.Option(..., "--from", help="The period's first day (YYYY-MM-DD, UTC).")
TO_OPT = typer.Option(..., "--to", help="The period's last day, included.")


def _day(text: str, option: str) -> Any:
    from datetime import date

    try:
        return date.fromisoformat(text)
    except ValueError:
        fail(f"{option} {text!r}: not a date (YYYY-MM-DD)", 2)


@app.command("export-audit")
def export_audit(env: str = ENV_OPT, property_code: str = PROPERTY_OPT,
                 date_from: str = FROM_OPT, date_to: str = TO_OPT,
                 out: Path = typer.Option(..., "--out", help="The directory to write."),
                 json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Write a period's auditor's export (CSV files and manifest.json) into a directory."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from pms.config import load_settings
    from pms.context import system_ctx
    from pms.errors import PmsError
    from pms.services.cashiering import fiscal_export

    first, last = _day(date_from, "--from"), _day(date_to, "--to")
    if not env or not property_code:
        fail("name the property: --env ID --property CODE", 2)
    try:
        fiscal_export.check_period(first, last)
    except PmsError as exc:
        fail(exc.detail, 2)
    open_database(load_settings())
    ctx = system_ctx(parse_uuid(env), sub="pms-cli fiscal")
    found = env_properties(ctx, property_code)
    if not found:
        fail(f"no property {property_code} in this env", 1)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=Console(stderr=True), disable=json_out) as bar:
        task = bar.add_task("exporting", total=4)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        files = fiscal_export.collect(ctx, found[0].id, first, last, progress=progress)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
    manifest = json.loads(files[fiscal_export.MANIFEST])
    emit({"dir": str(out), **manifest}, as_json=json_out, title=f"Auditor's export: {out}",
         columns=["file", "rows", "sha256"],
         rows=[[f["name"], f["rows"], f["sha256"][:16]] for f in manifest["files"]])


@app.command("verify-audit")
def verify_audit(directory: Path = typer.Option(..., "--dir", help="An export-audit directory."),
                 json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Check an auditor's export offline against its manifest and the chain."""
    from pms.services.cashiering import fiscal_export

    if not (directory / fiscal_export.MANIFEST).is_file():
        fail(f"{directory}: no {fiscal_export.MANIFEST} (not an auditor's export)", 2)
    files = {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}
    result = fiscal_export.verify_files(files)
    emit(result, as_json=json_out, title="Auditor's export",
         columns=["export", "entries", "documents", "last hash"],
         rows=[["verified" if result["ok"] else "BROKEN", result["entries"],
                result["documents"], (result["last_hash"] or "")[:16]]])
    if not result["ok"]:
        if not json_out:
            for problem in result["problems"]:
                typer.echo(f"  {problem}", err=True)
        raise typer.Exit(1)


@app.command("resend")
def resend(env: str = ENV_OPT, property_code: str = PROPERTY_OPT,
           document: str = typer.Option(None, "--document",
                                        help="Only this document (UUID)."),
           json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Submit again the property's documents its fiscal provider has not accepted."""
    from pms.config import load_settings
    from pms.context import system_ctx
    from pms.errors import NotFound
    from pms.services.cashiering import fiscalization

    if not env or not property_code:
        fail("name the property: --env ID --property CODE", 2)
    document_id = parse_uuid(document, "--document") if document else None
    open_database(load_settings())
    ctx = system_ctx(parse_uuid(env), sub="pms-cli fiscal")
    found = env_properties(ctx, property_code)
    if not found:
        fail(f"no property {property_code} in this env", 1)
    try:
        sent = fiscalization.resend(ctx, found[0].id, document_id)
    except NotFound as exc:
        fail(str(exc.detail), 1)
    emit({"property_code": property_code, "documents": sent}, as_json=json_out,
         title="Fiscal resend", columns=["number", "kind", "state", "attempts", "last error"],
         rows=[[d["number"], d["kind"], d["state"], d["attempts"], d["last_error"] or ""]
               for d in sent])
