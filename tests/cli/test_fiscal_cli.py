"""`pms-cli fiscal verify|export|resend`: a property's fiscal chain (an invoice, the credit note
of a reverted check-out, the next invoice, the payments) verifies from the database and,
exported, offline; an export edited afterwards fails the offline check with exit 1 and names the
entry; `resend` puts the documents the fiscal provider has not accepted back for the worker. On
a database made by the migrations (SQLite)."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal

import pytest

from pms.db.uow import read_scope
from pms.errors import FolioNotClosable
from pms.models import Folio, Property
from pms.schemas.cashiering import PaymentIn
from pms.schemas.reservations import RevertIn
from pms.services.cashiering import invoices, payments
from pms.services.frontdesk import checkout
from tests.cli.migrated import migrated_database, run_cli
from tests.factories import make_booking_hotel, make_checked_in


def _check_out(ctx, hotel, res, folio_id):
    try:
        checkout.check_out(ctx, hotel.id, res.id)
    except FolioNotClosable as exc:
        payments.post_payment(ctx, hotel.id, folio_id,
                              PaymentIn(amount=Decimal(exc.extra["balance"]), method="CASH"),
                              payments=None)
        checkout.check_out(ctx, hotel.id, res.id)


@pytest.fixture
def chained(tmp_path):
    with migrated_database(tmp_path, "fiscal") as (ctx, env):
        hotel = make_booking_hotel(ctx, rooms=1)
        res = make_checked_in(ctx, hotel)
        with read_scope(ctx):
            folio_id = Folio.get(Folio.reservation == res.id).id
            code = Property.get_by_id(hotel.id).code
        _check_out(ctx, hotel, res, folio_id)
        invoices.issue_invoice(ctx, hotel.id, folio_id)
        checkout.revert(ctx, hotel.id, res.id, RevertIn(reason="guest extends"))
        _check_out(ctx, hotel, res, folio_id)
        invoices.issue_invoice(ctx, hotel.id, folio_id)
        yield ctx, env, code


def test_the_chain_verifies_and_an_edited_export_does_not(chained, tmp_path):
    ctx, env, code = chained
    where = ("--env", str(ctx.env_id), "--property", code)
    done = run_cli(env, "fiscal", "verify", *where, "--json")
    assert done.exit_code == 0, done.output
    result = json.loads(done.output)
    assert result["ok"] and result["documents"] == 3 and result["payments"] >= 1
    assert result["entries"] == result["documents"] + result["payments"]
    path = tmp_path / "chain.json"
    assert run_cli(env, "fiscal", "export", *where, "--out", str(path)).exit_code == 0
    offline = run_cli({}, "fiscal", "verify", "--file", str(path), "--json")
    assert offline.exit_code == 0 and json.loads(offline.output)["last_hash"] == result["last_hash"]
    data = json.loads(path.read_text())
    first = data["entries"][0]["document_id"]
    data["documents"][first]["charges_total"] = "0.01"  # the invoice changed after the fact
    path.write_text(json.dumps(data))
    broken = run_cli({}, "fiscal", "verify", "--file", str(path), "--json")
    assert broken.exit_code == 1, broken.output
    assert "entry 1" in json.loads(broken.output)["problems"][0]


def test_verify_names_what_it_needs(tmp_path):
    assert run_cli({}, "fiscal", "verify").exit_code == 2
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    assert run_cli({}, "fiscal", "verify", "--file", str(bad)).exit_code == 2


def test_resend_puts_rejected_documents_back_for_the_worker(chained):
    from pms.models.fiscalization import Fiscalization
    from pms.models.platform import OutboxEvent
    from pms.platform.fiscal import SandboxSigner
    from pms.services.cashiering import fiscalization

    ctx, env, code = chained
    with read_scope(ctx):
        ids = [r.id for r in Fiscalization.select().order_by(Fiscalization.created_at)]
    assert len(ids) == 3  # invoice, credit note, invoice
    rejecting = SandboxSigner(fault="reject")
    for document_id in ids[:2]:
        assert fiscalization.fiscalize(ctx, document_id, rejecting).state == "REJECTED"
    assert fiscalization.fiscalize(ctx, ids[2], SandboxSigner()).state == "ACCEPTED"

    def requested():
        with read_scope(ctx):
            return OutboxEvent.select().where(
                OutboxEvent.type == "hotel:pms:fiscal_document:fiscalization_requested").count()

    before = requested()
    where = ("--env", str(ctx.env_id), "--property", code)
    done = run_cli(env, "fiscal", "resend", *where, "--json")
    assert done.exit_code == 0, done.output
    sent = json.loads(done.output)["documents"]
    assert [d["document_id"] for d in sent] == [str(i) for i in ids[:2]]  # not the accepted one
    assert {d["state"] for d in sent} == {"PENDING"}
    assert requested() == before + 2  # each one's message for the worker
    table = run_cli(env, "fiscal", "resend", *where, "--document", str(ids[2]))
    assert table.exit_code == 0 and "ACCEPTED" in table.output  # named: shown, not resent
    assert requested() == before + 2
    missing = run_cli(env, "fiscal", "resend", *where, "--document", str(uuid.uuid4()))
    assert missing.exit_code == 1
    assert run_cli(env, "fiscal", "resend", "--env", str(ctx.env_id)).exit_code == 2
