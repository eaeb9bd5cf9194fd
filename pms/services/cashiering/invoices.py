"""Folio generation: the fiscal documents of a closed folio, as JSON and as a printable PDF.

A closed folio gets one INVOICE; a correction after issue is a CREDIT_NOTE that cancels it whole
(numbered in its own series, referring to the invoice, with its reason), never an edit: reverting
an invoiced check-out issues the credit note in the revert's transaction, and the folio, closed
again, gets its next invoice (`generation` + 1, naming the credit note it follows). Numbers come
from a per-property sequence row per series taken under a row lock, so they are gapless and never
reused; issuing again returns the same invoice. A document is never updated (reprints read the
same JSON; the PDF is rendered from it) and every one is chained into the property's fiscal
journal in its transaction (pms.services.cashiering.fiscal_journal) and queued for its fiscal
provider (pms.services.cashiering.fiscalization).
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.pdf import render_pdf
from pms.domain.states import FolioStatus
from pms.errors import Conflict, NotFound, ValidationFailed
from pms.models import Folio, Property, Reservation
from pms.models.cashiering import Invoice, InvoiceSequence
from pms.schemas.common import to_data
from pms.services.cashiering import einvoice, fiscal_journal, fiscalization
from pms.services.cashiering.cashiering import load_folio, record_change
from pms.services.cashiering.folios import guest_folio, render

INVOICE = "INVOICE"
CREDIT_NOTE = "CREDIT_NOTE"
RECEIPT = "RECEIPT"  # and advance invoices: pms.services.cashiering.receipts
DEPOSIT_INVOICE = "DEPOSIT_INVOICE"
SERIES_PREFIX = {INVOICE: "", CREDIT_NOTE: "CN-", RECEIPT: "R-", DEPOSIT_INVOICE: "D-"}
TITLES = {INVOICE: "INVOICE", CREDIT_NOTE: "CREDIT NOTE", RECEIPT: "RECEIPT",
          DEPOSIT_INVOICE: "DEPOSIT INVOICE"}
DEFAULT_LANGUAGE = "en"
# the printable rendition's words per language (primary subtag); any other language prints
# in English
LABELS: dict[str, dict[str, str]] = {
    "en": {INVOICE: "INVOICE", CREDIT_NOTE: "CREDIT NOTE", RECEIPT: "RECEIPT",
           DEPOSIT_INVOICE: "DEPOSIT INVOICE", "issued": "Issued", "cancels": "Cancels invoice",
           "guest": "Guest", "stay": "Stay", "confirmation": "Confirmation", "date": "Date",
           "description": "Description", "amount": "Amount", "total": "Total charges",
           "tax": "of which tax", "payment": "Payment", "refund": "Refund",
           "balance": "Balance"},
    "de": {INVOICE: "RECHNUNG", CREDIT_NOTE: "GUTSCHRIFT", RECEIPT: "QUITTUNG",
           DEPOSIT_INVOICE: "ANZAHLUNGSRECHNUNG", "issued": "Ausgestellt",
           "cancels": "Storniert Rechnung", "guest": "Gast", "stay": "Aufenthalt",
           "confirmation": "Bestätigung", "date": "Datum", "description": "Beschreibung",
           "amount": "Betrag", "total": "Summe", "tax": "davon MwSt.", "payment": "Zahlung",
           "refund": "Erstattung", "balance": "Saldo"},
}


class FolioNotClosed(Conflict):
    """Raised when an invoice is asked for a folio that is still open."""

    code = "folio_not_closed"


def _number(prop: Property, series: str) -> str:
    """The next number of the property's series (gapless: the sequence row is locked until
    the document commits with it)."""
    query = InvoiceSequence.select().where(InvoiceSequence.property == prop.id,
                                           InvoiceSequence.series == series)
    seq = for_update(query).first()
    if seq is None:  # the series' first document; a parallel first one waits on the row
        InvoiceSequence.insert(property=prop.id, series=series,
                               last_number=0).on_conflict_ignore().execute()
        seq = for_update(query).get()
    seq.last_number += 1
    seq.save()
    return f"{prop.code}-{SERIES_PREFIX[series]}{seq.last_number:06d}"


def document_language(prop: Property, folio: Any) -> str:
    """The language a document of `folio` is issued in: the guest profile's language (the
    stay's guest), else the property's first `languages` entry, else English. Chosen once, at
    issue, and frozen with the document."""
    if getattr(folio, "reservation_id", None) is not None:
        from pms.models import Profile

        row = (Profile.select(Profile.language)
               .join(Reservation, on=(Reservation.guest_profile == Profile.id))
               .where(Reservation.id == folio.reservation_id).first())
        if row is not None and (row.language or "").strip():
            return row.language.strip()[:16]
    for language in prop.languages or ():
        if isinstance(language, str) and language.strip():
            return language.strip()[:16]
    return DEFAULT_LANGUAGE


def labels(language: str | None) -> dict[str, str]:
    """The printable words of `language` (its primary subtag: de-AT prints in German); English
    for a language without a table."""
    primary = (language or DEFAULT_LANGUAGE).split("-")[0].split("_")[0].lower()
    return LABELS.get(primary, LABELS[DEFAULT_LANGUAGE])


def _generation(folio_id: uuid.UUID) -> int:
    """How many times the folio's invoice was cancelled: its current invoice's generation."""
    return Invoice.select().where(Invoice.folio_id == folio_id,
                                  Invoice.kind == CREDIT_NOTE).count()


def _current(folio_id: uuid.UUID) -> Invoice | None:
    """The folio's invoice in force (issued and not cancelled by a credit note)."""
    return Invoice.get_or_none(Invoice.folio_id == folio_id, Invoice.kind == INVOICE,
                               Invoice.generation == _generation(folio_id))


def _document(prop: Property, folio_out: Any, reservation: Any, number: str,
              issued_at: Any) -> dict[str, Any]:
    data = to_data(folio_out)
    taxes: dict[str, Decimal] = {}
    for line in data["charges"]:
        if line["kind"] == "tax":
            key = line["transaction_code"] or line["description"]
            taxes[key] = taxes.get(key, Decimal(0)) + Decimal(line["amount"])
    return {
        "kind": INVOICE, "number": number, "issued_at": issued_at.isoformat(),
        "folio_id": data["id"],
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
        existing = _current(folio.id)
    if existing is not None:
        return existing.document, False
    with lock_errors(), unit_of_work(ctx) as uow:
        folio = load_folio(ctx, property_id, folio_id, lock=True)
        if folio.status != FolioStatus.CLOSED:
            raise FolioNotClosed("an invoice is issued for a closed folio; close it first",
                                 folio_id=str(folio.id))
        invoice = _current(folio.id)
        created = invoice is None
        if created:
            invoice = _issue(uow, folio)
    return invoice.document, created


def in_force(folio_id: uuid.UUID) -> Invoice | None:
    """The folio's invoice in force, if any (inside a scope)."""
    return _current(folio_id)


def issue_in(uow: UnitOfWork, folio: Folio) -> Invoice:
    """Inside the caller's unit of work, the folio locked and CLOSED, its next invoice
    (check-out's departure rule: pms.services.cashiering.departure_documents)."""
    return _issue(uow, folio)


def _issue(uow: UnitOfWork, folio: Folio) -> Invoice:
    """Number, freeze and chain the folio's next invoice (the folio locked, CLOSED)."""
    ctx = uow.ctx
    prop = Property.get_by_id(folio.property_id)
    generation = _generation(folio.id)
    number = _number(prop, INVOICE)
    document = _document(prop, render(folio), _billed(folio), number, ctx.now)
    document["id"] = str(uuid.uuid4())
    document["language"] = document_language(prop, folio)
    document.update(einvoice.frozen_identity(ctx, prop, folio, document))
    if generation:
        cancelled = Invoice.get(Invoice.folio_id == folio.id, Invoice.kind == CREDIT_NOTE,
                                Invoice.generation == generation - 1)
        document["follows_credit_note"] = cancelled.number
    invoice = Invoice.create(id=uuid.UUID(document["id"]), property=prop.id,
                             folio_id=folio.id, kind=INVOICE, generation=generation,
                             number=number, issued_at=ctx.now, document=document,
                             language=document["language"])
    fiscal_journal.append(prop.id, invoice, now=ctx.now)
    fiscalization.request(uow, invoice)
    record_change(uow, folio, "invoiced")
    return invoice


def credit_reverted_check_out(uow: UnitOfWork, reservation: Reservation, *,
                              reason: str | None) -> Invoice | None:
    """A check-out's revert hook: the guest folio about to reopen has an invoice in force, so it
    is cancelled by a credit note, in the revert's transaction (an issued invoice never changes
    and never stops matching its folio silently).

    Raises:
        ValidationFailed (422): no reason (or a blank one) for the cancellation: every
            cancelled document states why (NF525, KassenSichV).
    """
    folio = guest_folio(reservation, lock=True)
    if folio is None or folio.status != FolioStatus.CLOSED:
        return None
    invoice = _current(folio.id)
    if invoice is None:
        return None
    if not (reason or "").strip():
        raise ValidationFailed(
            f"reverting this check-out cancels invoice {invoice.number}: give the reason",
            errors=[{"field": "reason", "message": "the cancellation's reason is required"}])
    return _credit(uow, folio, invoice, reason=reason.strip())


def _credit(uow: UnitOfWork, folio: Folio, invoice: Invoice, *, reason: str) -> Invoice:
    """The credit note that cancels `invoice` whole: every line and total negated, the invoice
    named, the reason given; numbered in the credit-note series and chained."""
    ctx = uow.ctx
    prop = Property.get_by_id(folio.property_id)
    number = _number(prop, CREDIT_NOTE)
    original = invoice.document

    def negated(amount: str) -> str:
        return str(-Decimal(amount))

    document = {
        **{k: original[k] for k in ("folio_id", "property", "guest", "confirmation_number",
                                    "arrival_date", "departure_date", "currency")},
        **{k: original[k] for k in einvoice.FROZEN_KEYS if k in original},
        "id": str(uuid.uuid4()), "kind": CREDIT_NOTE, "number": number,
        "issued_at": ctx.now.isoformat(), "reason": reason,
        "language": document_language(prop, folio),
        "refers_to": {"id": str(invoice.id), "number": invoice.number,
                      "issued_at": original["issued_at"]},
        "lines": [{**line, "amount": negated(line["amount"])} for line in original["lines"]],
        "tax_summary": {k: negated(v) for k, v in original["tax_summary"].items()},
        "charges_total": negated(original["charges_total"]),
    }
    note = Invoice.create(id=uuid.UUID(document["id"]), property=prop.id, folio_id=folio.id,
                          kind=CREDIT_NOTE, generation=invoice.generation,
                          refers_to_id=invoice.id, reason=reason[:500], number=number,
                          issued_at=ctx.now, document=document, language=document["language"])
    fiscal_journal.append(prop.id, note, now=ctx.now)
    fiscalization.request(uow, note)
    record_change(uow, folio, "credit_noted", reason=reason)
    return note


def get_invoice(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID) -> dict[str, Any]:
    """The folio's invoice in force. Raises NotFound (none issued, or the last one cancelled by
    a credit note: the detail names it)."""
    with read_scope(ctx):
        folio = load_folio(ctx, property_id, folio_id)
        invoice = _current(folio.id)
        if invoice is None:
            note = (Invoice.select().where(Invoice.folio_id == folio.id,
                                           Invoice.kind == CREDIT_NOTE)
                    .order_by(Invoice.generation.desc()).first())
            if note is not None:
                raise NotFound(f"invoice {note.document['refers_to']['number']} was cancelled "
                               f"by credit note {note.number}; the folio's next invoice is "
                               "issued once it is closed again (GET .../documents lists both)")
            raise NotFound("no invoice was issued for this folio")
        return invoice.document


def folio_documents(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID
                    ) -> list[dict[str, Any]]:
    """Every document of the folio, in the order issued."""
    with read_scope(ctx):
        folio = load_folio(ctx, property_id, folio_id)
        rows = list(Invoice.select().where(Invoice.folio_id == folio.id)
                    .order_by(Invoice.issued_at, Invoice.generation, Invoice.kind.desc()))
        states = fiscalization.states_of([r.id for r in rows])
        return [{**_summary(r), "fiscal_state": states.get(r.id)} for r in rows]


def _summary(row: Invoice) -> dict[str, Any]:
    return {"id": str(row.id), "kind": row.kind, "number": row.number,
            "issued_at": row.document["issued_at"], "folio_id": str(row.folio_id),
            "refers_to_id": str(row.refers_to_id) if row.refers_to_id else None,
            "reason": row.reason, "charges_total": row.document["charges_total"],
            "currency": row.document["currency"]}


def get_document(ctx: Ctx, property_id: uuid.UUID, document_id: uuid.UUID) -> dict[str, Any]:
    """A fiscal document of the property by id. Raises NotFound."""
    with read_scope(ctx):
        row = Invoice.get_or_none(Invoice.id == document_id, Invoice.property == property_id)
        if row is None:
            raise NotFound("no such document at this property")
        return row.document


def verify_journal(ctx: Ctx, property_id: uuid.UUID) -> dict[str, Any]:
    """The property's fiscal chain verified (`fiscal_journal.verify`). Raises NotFound."""
    with read_scope(ctx):
        if Property.get_or_none(Property.id == property_id) is None:
            raise NotFound("no such property")
        return fiscal_journal.verify(property_id).as_dict()


def invoice_pdf(document: dict[str, Any]) -> bytes:
    """The printable rendition of an invoice document, in the document's frozen `language`
    (English and German; a document without one, issued before languages were recorded, and
    any other language print in English)."""
    cur = document["currency"]
    guest = document["guest"]
    kind = document.get("kind", INVOICE)
    words = labels(document.get("language"))
    title = words.get(kind, words[INVOICE])
    lines = [f"{title} {document['number']}", "",
             f"{document['property']['name']} ({document['property']['code']})",
             f"{words['issued']}: {document['issued_at']}",
             *([f"{words['cancels']} {document['refers_to']['number']}: {document['reason']}"]
               if kind == CREDIT_NOTE else []),
             f"{words['guest']}: {guest.get('first_name') or ''} "
             f"{guest.get('last_name') or ''}".rstrip(),
             f"{words['stay']}: {document['arrival_date']} - {document['departure_date']}  "
             f"{words['confirmation']} {document['confirmation_number']}", "",
             f"{words['date']:<12}{words['description']:<50}{words['amount']:>14}", "-" * 76]
    for line in document["lines"]:
        lines.append(f"{line['business_date']:<12}{line['description'][:48]:<50}"
                     f"{line['amount']:>10} {cur}")
    lines += ["-" * 76, f"{words['total']:<62}{document['charges_total']:>10} {cur}"]
    for code, amount in document["tax_summary"].items():
        lines.append(f"  {words['tax']} {code:<{59 - len(words['tax'])}}{amount:>10} {cur}")
    for pay in document.get("payments", ()):
        label = words["refund" if pay.get("kind") == "REFUND" else "payment"] + " "
        lines.append(f"{label + pay['method']:<62}{pay['amount']:>10} {cur}")
    if "balance" in document:
        lines.append(f"{words['balance']:<62}{document['balance']:>10} {cur}")
    return render_pdf(lines, title=f"{title.title()} {document['number']}")
