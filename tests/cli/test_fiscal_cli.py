"""`pms-cli fiscal verify|export`: a property's fiscal chain (an invoice, the credit note of a
reverted check-out, the next invoice) verifies from the database and, exported, offline; an
export edited afterwards fails the offline check with exit 1 and names the entry. On a database
made by the migrations (SQLite)."""

from __future__ import annotations

import json
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
    assert result["ok"] and result["entries"] == result["documents"] == 3
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
