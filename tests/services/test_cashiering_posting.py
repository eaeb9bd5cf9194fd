"""Cashiering's posting use case for another capability (pms.services.cashiering.posting): lines
with their tax lines by the code's rules, one recorded folio change however many lines, nothing
for a line of zero, and no posting to a folio that is not OPEN."""

from __future__ import annotations

from decimal import Decimal

import msgspec
import pytest

from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import FolioStatus
from pms.errors import FolioClosed
from pms.models import Folio, FolioCharge
from pms.schemas.cashiering import TransactionCodeIn
from pms.services.cashiering import posting
from pms.services.cashiering.posting import PostingLine
from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
from pms.services.catalog import catalog
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import counts, outbox_types


@pytest.fixture
def stay(ctx, database):
    hotel = make_booking_hotel(ctx, rooms=1)
    catalog.create_child(ctx, TRANSACTION_CODE, hotel.id, msgspec.convert(
        {"code": "BQ", "name": "Banquet", "category": "F&B",
         "tax_rules": [{"code": "VAT", "kind": "percentage", "rate": "7", "inclusive": True,
                        "name": "VAT"}]}, TransactionCodeIn))
    res = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
    return hotel, folio


def _line(gross: str, code: str | None, key: str) -> PostingLine:
    return PostingLine(gross=Decimal(gross), quantity=1, description=f"line {key}",
                       transaction_code=code, ledger_key=f"test:{key}", memo="test")


def _post(ctx, hotel, folio, lines):
    with unit_of_work(ctx) as uow:
        held = posting.lock_open_folio(ctx, hotel.id, folio.id)
        return posting.post_lines_with_tax(uow, held, lines, reason="test posting")


def test_lines_post_with_their_taxes_and_the_folio_records_one_change(ctx, stay):
    hotel, folio = stay
    outbox, audit = counts(ctx)
    written = _post(ctx, hotel, folio, [_line("107.00", "BQ", "a"), _line("0", "BQ", "zero"),
                                        _line("-10.00", None, "b")])
    assert [(w.kind, w.category, Decimal(str(w.amount))) for w in written] == [
        ("charge", "F&B", Decimal("100.00")), ("tax", "tax", Decimal("7.00")),
        ("allowance", "other", Decimal("-10.00"))]
    with read_scope(ctx):
        assert FolioCharge.select().where(FolioCharge.folio == folio.id,
                                          FolioCharge.description == "line zero").count() == 0
    # one change of the folio for the three lines: one outbox row, one audit row
    assert counts(ctx) == (outbox + 1, audit + 1)
    assert outbox_types(ctx)[-1].endswith(":folio:charge_posted")


def test_nothing_to_post_records_no_change(ctx, stay):
    hotel, folio = stay
    before = counts(ctx)
    assert _post(ctx, hotel, folio, [_line("0.00", "BQ", "zero")]) == []
    assert counts(ctx) == before


def test_a_folio_that_is_not_open_takes_no_posting(ctx, stay):
    hotel, folio = stay
    with unit_of_work(ctx):
        Folio.update(status=FolioStatus.CLOSED.value).where(Folio.id == folio.id).execute()
    before = counts(ctx)
    with pytest.raises(FolioClosed):
        _post(ctx, hotel, folio, [_line("10.00", "BQ", "a")])
    assert counts(ctx) == before
