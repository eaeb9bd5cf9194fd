"""Folio generation: the numbered invoice of a closed folio, as JSON and as a printable PDF.

One invoice per folio (unique); numbers come from a per-property sequence row taken under a row
lock, so they are gapless and never reused. Issuing again returns the same invoice (no new rows).
The JSON document is frozen at issue time; the PDF is rendered from it on request.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.pdf import render_pdf
from pms.domain.states import FolioStatus
from pms.errors import Conflict, NotFound
from pms.models import Property, Reservation
from pms.models.cashiering import Invoice, InvoiceSequence
from pms.schemas.common import to_data
from pms.services.cashiering.cashiering import load_folio, record_change
from pms.services.cashiering.folios import render


class FolioNotClosed(Conflict):
    """Raised when an invoice is asked for a folio that is still open."""

    code = "folio_not_closed"


def _number(prop: Property) -> str:
    seq = for_update(InvoiceSequence.select().where(InvoiceSequence.property == prop.id)).first()
    if seq is None:
        seq = InvoiceSequence.create(property=prop.id, last_number=0)
        seq = for_update(InvoiceSequence.select().where(InvoiceSequence.id == seq.id)).get()
    seq.last_number += 1
    seq.save()
    return f"{prop.code}-{seq.last_number:06d}"


def _document(prop: Property, folio_out: Any, reservation: Any, number: str,
              issued_at: Any) -> dict[str, Any]:
    data = to_data(folio_out)
    taxes: dict[str, Decimal] = {}
    for line in data["charges"]:
        if line["kind"] == "tax":
            key = line["transaction_code"] or line["description"]
            taxes[key] = taxes.get(key, Decimal(0)) + Decimal(line["amount"])
    return {
        "number": number, "issued_at": issued_at.isoformat(), "folio_id": data["id"],
        "property": {"code": prop.code, "name": prop.name, "address": prop.display_address},
        "guest": {"first_name": reservation.guest_first_name,
                  "last_name": reservation.guest_last_name},
        "confirmation_number": reservation.confirmation_number,
        "arrival_date": reservation.arrival_date.isoformat(),
        "departure_date": reservation.departure_date.isoformat(),
        "currency": data["currency"], "lines": data["charges"],
        "payments": [p for p in data["payments"] if p["status"] == "CAPTURED"],
        "tax_summary": {k: str(v) for k, v in sorted(taxes.items())},
        "charges_total": data["charges_total"], "payments_total": data["payments_total"],
        "balance": data["posted_balance"],  # closed at check-out: nothing projected
    }


def _billed(folio: Any) -> Any:
    """Whom the invoice names: the stay, or for a block's master folio the block (its name as
    the last name, its code as the confirmation number, its dates)."""
    if folio.reservation_id is not None:
        return Reservation.get_by_id(folio.reservation_id)
    from types import SimpleNamespace

    from pms.models import RoomBlock

    block = RoomBlock.get_by_id(folio.block_id)
    return SimpleNamespace(guest_first_name=None, guest_last_name=block.name,
                           confirmation_number=block.code, arrival_date=block.arrival_date,
                           departure_date=block.departure_date)


def issue_invoice(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID
                  ) -> tuple[dict[str, Any], bool]:
    """The invoice of a closed folio, numbered on first issue. Returns (document, created).

    Raises:
        NotFound. FolioNotClosed (409 folio_not_closed).
    """
    with read_scope(ctx):
        folio = load_folio(ctx, property_id, folio_id)
        existing = Invoice.get_or_none(Invoice.folio_id == folio.id)
    if existing is not None:
        return existing.document, False
    with lock_errors(), unit_of_work(ctx) as uow:
        folio = load_folio(ctx, property_id, folio_id, lock=True)
        if folio.status != FolioStatus.CLOSED:
            raise FolioNotClosed("an invoice is issued for a closed folio; close it first",
                                 folio_id=str(folio.id))
        invoice = Invoice.get_or_none(Invoice.folio_id == folio.id)
        created = invoice is None
        if created:
            prop = Property.get_by_id(property_id)
            number = _number(prop)
            document = _document(prop, render(folio), _billed(folio), number, ctx.now)
            invoice = Invoice.create(property=prop.id, folio_id=folio.id, number=number,
                                     issued_at=ctx.now, document=document)
            record_change(uow, folio, "invoiced")
    return invoice.document, created


def get_invoice(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID) -> dict[str, Any]:
    """The issued invoice of a folio. Raises NotFound (none issued yet)."""
    with read_scope(ctx):
        folio = load_folio(ctx, property_id, folio_id)
        invoice = Invoice.get_or_none(Invoice.folio_id == folio.id)
        if invoice is None:
            raise NotFound("no invoice was issued for this folio")
        return invoice.document


def invoice_pdf(document: dict[str, Any]) -> bytes:
    """The printable rendition of an invoice document."""
    cur = document["currency"]
    guest = document["guest"]
    lines = [f"INVOICE {document['number']}", "",
             f"{document['property']['name']} ({document['property']['code']})",
             f"Issued: {document['issued_at']}",
             f"Guest: {guest.get('first_name') or ''} {guest.get('last_name') or ''}".rstrip(),
             f"Stay: {document['arrival_date']} - {document['departure_date']}  "
             f"Confirmation {document['confirmation_number']}", "",
             f"{'Date':<12}{'Description':<50}{'Amount':>14}", "-" * 76]
    for line in document["lines"]:
        lines.append(f"{line['business_date']:<12}{line['description'][:48]:<50}"
                     f"{line['amount']:>10} {cur}")
    lines += ["-" * 76, f"{'Total charges':<62}{document['charges_total']:>10} {cur}"]
    for code, amount in document["tax_summary"].items():
        lines.append(f"  of which tax {code:<47}{amount:>10} {cur}")
    for pay in document["payments"]:
        label = "Refund " if pay.get("kind") == "REFUND" else "Payment "  # amount negative
        lines.append(f"{label + pay['method']:<62}{pay['amount']:>10} {cur}")
    lines.append(f"{'Balance':<62}{document['balance']:>10} {cur}")
    return render_pdf(lines, title=f"Invoice {document['number']}")
