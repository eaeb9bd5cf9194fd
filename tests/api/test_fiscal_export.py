"""The auditor's export of a period, through the HTTP API on SQLite and PostgreSQL: a stay with a
correction (invoice, reverted check-out and its credit note, the next invoice) is exported as a
job with progress; the archive's CSV files load with the csv module, the manifest's row counts
and sha256 match the files and its chain hashes the journal's; the export verifies offline, and
editing one CSV row (or the chained document) makes the verification fail."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import uuid
from datetime import UTC

import pytest

from pms.services import jobs
from pms.services.cashiering import fiscal_export
from tests.api.test_cashiering import add_code
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import assert_problem


def _settle_and_check_out(api, res, f):
    checkout = api.post(f"{res}/check-out")
    if checkout.status_code == 409:
        balance = assert_problem(checkout, 409, "folio_not_closable")["balance"]
        assert api.post(f"{f}/payments", {"amount": balance, "method": "CASH"}).status_code == 201
        checkout = api.post(f"{res}/check-out")
    assert checkout.status_code == 200, checkout.text


@pytest.fixture
def corrected(kapi, ctx, database):
    from pms.db.uow import read_scope
    from pms.models import Folio

    hotel = make_booking_hotel(ctx, rooms=2)
    add_code(ctx, hotel.id, "FB", "F&B")
    res = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
    base = f"/v1/properties/{hotel.id}"
    r, f = f"{base}/reservations/{res.id}", f"{base}/folios/{folio.id}"
    kapi.post(f"{f}/charges", {"transaction_code": "FB", "amount": "30.00",
                               "description": "Dinner"})
    _settle_and_check_out(kapi, r, f)
    assert kapi.post(f"{f}/invoice").status_code == 201
    assert kapi.post(f"{r}/revert", {"reason": "guest extends"}).status_code == 200
    assert kapi.post(f"{f}/allowances", {"transaction_code": "FB", "amount": "5",
                                         "reason": "cold soup"}).status_code == 201
    assert kapi.post(f"{f}/refunds", {"amount": "5.00", "method": "CASH"}).status_code in (200,
                                                                                          201)
    _settle_and_check_out(kapi, r, f)
    assert kapi.post(f"{f}/invoice").status_code == 201
    # the export's period is in UTC dates (the documents were issued at the clock's now),
    # which differ from the property's date for an hour or two around its midnight
    return {"hotel": hotel, "base": base, "day": ctx.now.astimezone(UTC).date().isoformat()}


def _export(kapi, ctx, platform, corrected):
    started = kapi.post(f"{corrected['base']}/fiscal-exports",
                        {"from": corrected["day"], "to": corrected["day"]})
    assert started.status_code == 202, started.text
    item = started.headers["location"]
    assert kapi.get(item).json["status"] == "QUEUED"
    assert_problem(kapi.get(item + "/archive"), 409, "job_not_finished")
    jobs.run_job(ctx, uuid.UUID(started.json["id"]), platform=platform)  # (a worker runs it)
    done = kapi.get(item).json
    assert done["status"] == "SUCCEEDED", done
    assert done["progress"]["done"] == done["progress"]["total"]
    archive = kapi.get(item + "/archive")
    assert archive.status_code == 200, archive.text
    assert archive.headers["content-type"] == "application/zip"
    return fiscal_export.unzipped(archive.content)


def _table(files, name):
    return list(csv.DictReader(io.StringIO(files[name].decode())))


def test_a_periods_export_loads_matches_its_manifest_and_verifies(kapi, ctx, platform,
                                                                  corrected):
    files = _export(kapi, ctx, platform, corrected)
    manifest = json.loads(files["manifest.json"])
    assert manifest["period"] == {"from": corrected["day"], "to": corrected["day"],
                                  "timezone": "UTC"}
    for listed in manifest["files"]:
        data = files[listed["name"]]
        assert hashlib.sha256(data).hexdigest() == listed["sha256"]
        if listed["name"].endswith(".csv"):
            assert len(_table(files, listed["name"])) == listed["rows"]

    documents = _table(files, "documents.csv")
    assert [d["kind"] for d in documents] == ["INVOICE", "CREDIT_NOTE", "INVOICE"]
    assert documents[1]["refers_to_number"] == documents[0]["number"]
    assert documents[1]["reason"] == "guest extends"
    lines = _table(files, "lines.csv")
    assert {line["document_number"] for line in lines} == {d["number"] for d in documents}
    assert {line["vat_rate"] for line in lines if line["kind"] == "tax"} == {"7"}
    payments = _table(files, "payments.csv")
    assert {"PAYMENT", "REFUND"} <= {p["kind"] for p in payments}
    journal = _table(files, "journal.csv")
    chain = manifest["chain"]
    assert chain["entries"] == len(journal) >= 3
    assert chain["first_hash"] == journal[0]["hash"] and chain["last_hash"] == journal[-1]["hash"]
    assert chain["prev_hash"] == "0" * 64  # the property's first entries
    # the live chain ends where the export does
    live = kapi.get(f"{corrected['base']}/fiscal-journal/verification").json
    assert live["ok"] and live["last_hash"] == chain["last_hash"]

    result = fiscal_export.verify_files(files)
    assert result["ok"], result["problems"]


def test_editing_one_csv_row_fails_the_verification(kapi, ctx, platform, corrected):
    files = _export(kapi, ctx, platform, corrected)
    assert fiscal_export.verify_files(files)["ok"]
    rows = _table(files, "documents.csv")
    rows[0]["charges_total"] = "1.00"  # the first invoice's total, changed in the file
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    edited = {**files, "documents.csv": out.getvalue().encode()}
    result = fiscal_export.verify_files(edited)
    assert not result["ok"]
    assert any("documents.csv: its sha256" in p for p in result["problems"]), result
    # the manifest's hash rewritten to match: the rows no longer match the chained documents
    manifest = json.loads(files["manifest.json"])
    for listed in manifest["files"]:
        if listed["name"] == "documents.csv":
            listed["sha256"] = hashlib.sha256(edited["documents.csv"]).hexdigest()
    edited["manifest.json"] = json.dumps(manifest).encode()
    result = fiscal_export.verify_files(edited)
    assert result["problems"] == [
        "documents.csv: its rows differ from the chained documents (edited)"], result
    # and a chained document edited with its table: its journal entry no longer matches
    docs = [json.loads(line) for line in files["documents.jsonl"].decode().splitlines()]
    docs[0]["charges_total"] = "1.00"
    again = {**files, "documents.jsonl": "".join(
        fiscal_export.canonical(d) + "\n" for d in docs).encode()}
    again.update(fiscal_export.document_tables(docs))
    manifest = json.loads(files["manifest.json"])
    for listed in manifest["files"]:
        listed["sha256"] = hashlib.sha256(again[listed["name"]]).hexdigest()
    again["manifest.json"] = json.dumps(manifest).encode()
    result = fiscal_export.verify_files(again)
    assert not result["ok"]
    assert any("differs from what was chained" in p for p in result["problems"]), result


def test_a_reversed_period_is_422(kapi, corrected):
    resp = kapi.post(f"{corrected['base']}/fiscal-exports",
                     {"from": "2026-12-10", "to": "2026-12-01"})
    assert assert_problem(resp, 422)["errors"][0]["field"] == "to"
    assert_problem(kapi.post(f"{corrected['base']}/fiscal-exports",
                             {"from": "2026-01-01", "to": "2027-12-31"}), 422)
    assert_problem(kapi.post(f"/v1/properties/{uuid.uuid4()}/fiscal-exports",
                             {"from": "2026-12-01", "to": "2026-12-01"}), 404)
