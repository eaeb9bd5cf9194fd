"""The auditor's export of a simulated month loads and verifies: the demo hotel lives a month
through the API (cli.hotelsim.demo_month: bookings, check-ins, charges, payments, a company on
direct bill, no-shows, the night audit every night) with the departure rule on, so every
check-out issues its invoice; `pms-cli fiscal export-audit` writes the month and `verify-audit`
checks it offline; the CSV files load into a fresh SQLite database, where the row counts match
the manifest, every line and journal entry joins its document, and the journal's links run
from the manifest's `prev_hash` to its `last_hash`, the live chain's end. On a database made by
the migrations (SQLite); `PMS_FISCAL_MONTH_DAYS` shortens the month."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import uuid
from pathlib import Path

import pytest

from tests.cli.migrated import run_cli

pytestmark = pytest.mark.slow

DAYS = int(os.environ.get("PMS_FISCAL_MONTH_DAYS", "30"))


def _load(db: sqlite3.Connection, path: Path) -> int:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        table = path.stem
        db.execute(f"CREATE TABLE {table} ({', '.join(f'{c} TEXT' for c in header)})")
        rows = list(reader)
        db.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in header)})", rows)
    return len(rows)


@pytest.fixture
def lived_month(tmp_path):
    from cli.demo import seed_demo
    from cli.hotelsim.demo_month import live_month, opening_moment
    from cli.output import open_database
    from pms.config import load_settings
    from pms.context import system_ctx
    from pms.db.database import db
    from pms.db.migrator import migrate
    from pms.services.catalog import settings as module_settings
    from workers import actors

    # `pms-cli demo` lives its month in a process of its own; here the process's StubBroker has
    # served earlier tests, and a message of theirs still retrying with backoff would hold the
    # month's settle (it joins every queue) for as long as its retries last
    actors.broker.flush_all()
    url = f"sqlite:///{tmp_path}/month.db"
    migrate(url)
    env = {"PMS_DATABASE_URL": url, "PMS_MIGRATION_DATABASE_URL": url,
           "PMS_HOME": str(tmp_path / "home")}
    keys = run_cli(env, "dev", "keys")  # the demo's client signs its tokens with them
    assert keys.exit_code == 0, keys.output
    settings = load_settings(env)
    previous = db.obj
    open_database(settings)
    env_id = uuid.uuid4()
    opened = opening_moment(DAYS)
    try:
        summary = seed_demo(settings, env_id, now=opened)
        ctx = system_ctx(env_id, sub="test").with_(now=opened)
        etag = module_settings.get_modules(ctx).etag
        module_settings.patch_modules(ctx, None, {"invoicing": {"invoice_at_check_out": True}},
                                      if_match=etag)
        month = live_month(settings, env_id, summary["property_id"], days=DAYS, opened=opened)
        yield env, env_id, month, opened
    finally:
        if not db.is_closed():
            db.close()
        db.initialize(previous)


def test_the_export_of_a_lived_month_loads_and_verifies(lived_month, tmp_path):
    env, env_id, month, opened = lived_month
    from cli.demo import DEMO_CODE as code
    out = tmp_path / "audit"
    done = run_cli(env, "fiscal", "export-audit", "--env", str(env_id), "--property", code,
                   "--from", opened.date().isoformat(), "--to", month["business_date"],
                   "--out", str(out), "--json")
    assert done.exit_code == 0, done.output
    manifest = json.loads((out / "manifest.json").read_text())
    offline = run_cli({}, "fiscal", "verify-audit", "--dir", str(out), "--json")
    assert offline.exit_code == 0, offline.output
    assert json.loads(offline.output)["last_hash"] == manifest["chain"]["last_hash"]
    live = run_cli(env, "fiscal", "verify", "--env", str(env_id), "--property", code, "--json")
    assert live.exit_code == 0, live.output

    db = sqlite3.connect(":memory:")
    counts = {f["name"]: f["rows"] for f in manifest["files"]}
    for name in ("documents.csv", "lines.csv", "payments.csv", "journal.csv"):
        assert _load(db, out / name) == counts[name], name

    def one(sql: str) -> int:
        return db.execute(sql).fetchone()[0]

    # a month's work: invoices at every departure, their lines, the payments
    invoices = one("SELECT count(*) FROM documents WHERE kind = 'INVOICE'")
    assert invoices >= DAYS, manifest
    assert one("SELECT count(*) FROM lines") > invoices
    assert one("SELECT count(*) FROM payments") > 0
    assert one("SELECT count(DISTINCT substr(issued_at, 1, 10)) FROM documents") >= DAYS // 2
    # every line and every document entry joins its document; every document is chained
    assert one("SELECT count(*) FROM lines WHERE document_id NOT IN "
               "(SELECT document_id FROM documents)") == 0
    assert one("SELECT count(*) FROM documents WHERE document_id NOT IN "
               "(SELECT document_id FROM journal)") == 0
    # the chain: consecutive seqs, each entry linked to the one before, from prev_hash to
    # last_hash (the live chain's end: the month ends now)
    chain = db.execute("SELECT seq, prev_hash, hash FROM journal "
                       "ORDER BY CAST(seq AS INTEGER)").fetchall()
    assert len(chain) == manifest["chain"]["entries"]
    assert [int(s) for s, _, _ in chain] == list(range(int(chain[0][0]),
                                                     int(chain[0][0]) + len(chain)))
    assert chain[0][1] == manifest["chain"]["prev_hash"]
    assert all(chain[i][1] == chain[i - 1][2] for i in range(1, len(chain)))
    assert chain[-1][2] == manifest["chain"]["last_hash"] == json.loads(live.output)["last_hash"]
