"""`pms-cli fiscal export-audit|verify-audit`: a period's auditor's export (a stay with a
correction: an invoice, the credit note of a reverted check-out, the next invoice) written into
a directory verifies offline; one CSV row edited afterwards fails it with exit 1 naming the
file. On a database made by the migrations (SQLite)."""

from __future__ import annotations

import csv
import json

from tests.cli.migrated import run_cli
from tests.cli.test_fiscal_cli import chained  # noqa: F401  (fixture)


def test_an_audit_export_verifies_and_an_edited_row_does_not(chained, tmp_path):  # noqa: F811
    ctx, env, code = chained
    out = tmp_path / "audit"
    day = ctx.now.date().isoformat()
    done = run_cli(env, "fiscal", "export-audit", "--env", str(ctx.env_id), "--property", code,
                   "--from", day, "--to", day, "--out", str(out), "--json")
    assert done.exit_code == 0, done.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["chain"]["entries"] >= 3
    assert {f["name"] for f in manifest["files"]} == {
        "documents.csv", "documents.jsonl", "journal.csv", "lines.csv", "payments.csv"}
    with (out / "documents.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["kind"] for r in rows] == ["INVOICE", "CREDIT_NOTE", "INVOICE"]
    offline = run_cli({}, "fiscal", "verify-audit", "--dir", str(out), "--json")
    assert offline.exit_code == 0, offline.output
    assert json.loads(offline.output)["last_hash"] == manifest["chain"]["last_hash"]

    rows[1]["reason"] = "nothing happened"  # the credit note's reason, changed in the file
    with (out / "documents.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    broken = run_cli({}, "fiscal", "verify-audit", "--dir", str(out), "--json")
    assert broken.exit_code == 1, broken.output
    assert any(p.startswith("documents.csv") for p in json.loads(broken.output)["problems"])


def test_verify_audit_needs_an_export_directory(tmp_path):
    assert run_cli({}, "fiscal", "verify-audit", "--dir", str(tmp_path)).exit_code == 2
    assert run_cli({}, "fiscal", "export-audit", "--from", "x", "--to", "2026-01-01",
                   "--out", str(tmp_path)).exit_code == 2
