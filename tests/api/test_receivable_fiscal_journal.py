"""A company's receivable (AR) invoice in the property's fiscal journal, on SQLite and
PostgreSQL: issuing it appends an AR_INVOICE entry in the issue's transaction, the chain (what
`pms-cli fiscal verify` checks) verifies with it, the auditor's export carries its record and
verifies offline, and an edit of the invoice's row behind the service's back fails the
verification (the control: the same chain verified before the edit)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

from pms.db.scope import tenant_scope
from pms.db.uow import read_scope
from pms.models.companies import CompanyInvoice
from pms.services.cashiering import fiscal_export, fiscal_journal
from tests.api.test_company_direct_bill import corp  # noqa: F401  (the fixture)
from tests.api.test_corporate_receivable_ledger import _billed, _items


def _verification(corp):  # noqa: F811
    resp = corp.api.get(f"/v1/properties/{corp.hotel.id}/fiscal-journal/verification")
    assert resp.status_code == 200, resp.text
    return resp.json


def test_a_receivable_invoice_is_chained_exported_and_an_edit_fails(corp, database):  # noqa: F811
    _billed(corp, 2)
    before = _verification(corp)
    ar = f"{corp.base}/receivable-account"
    created = corp.api.post(f"{ar}/invoices", {"item_ids": [i["id"] for i in _items(corp)]})
    assert created.status_code == 201, created.text
    invoice = created.json
    check = _verification(corp)
    assert check["ok"], check
    assert check["entries"] == before["entries"] + 1
    assert check["documents"] == before["documents"] + 1
    with read_scope(corp.ctx):
        chained = fiscal_journal.export(corp.hotel.id)
    [entry] = [e for e in chained["entries"] if e["kind"] == "AR_INVOICE"]
    assert entry["number"] == invoice["number"] and entry["document_id"] == invoice["id"]
    assert entry["seq"] == len(chained["entries"])  # appended last, in the transaction
    record = chained["documents"][invoice["id"]]
    assert record["charges_total"] == invoice["total"] and record["due_on"] == invoice["due_on"]

    # the auditor's export of the day carries it and verifies offline
    day = corp.hotel.today
    period = (day - timedelta(days=1), day + timedelta(days=1))
    files = fiscal_export.collect(corp.ctx, corp.hotel.id, *period)
    assert fiscal_export.verify_files(files)["ok"]
    exported = [json.loads(line) for line in files["documents.jsonl"].decode().splitlines()]
    assert [d["number"] for d in exported if d.get("kind") == "AR_INVOICE"] == [
        invoice["number"]]
    assert invoice["number"] in files["documents.csv"].decode()

    # an edit of the invoice's row made outside the service fails the verification
    with tenant_scope(corp.ctx.env_id), database.atomic():
        assert CompanyInvoice.update(total=1).where(
            CompanyInvoice.id == uuid.UUID(invoice["id"])).execute() == 1
    check = _verification(corp)
    assert not check["ok"] and any("differs from what was chained" in p
                                   for p in check["problems"]), check
    # and so does a new export, whose record (rebuilt from the row) no longer matches its entry
    offline = fiscal_export.verify_files(fiscal_export.collect(corp.ctx, corp.hotel.id, *period))
    assert not offline["ok"] and offline["problems"], offline
