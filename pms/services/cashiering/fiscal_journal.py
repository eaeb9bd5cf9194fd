"""A property's fiscal journal: every fiscal document and every payment or refund taken,
appended in its own transaction to a hash chain, so a gap, an edit or a deletion is detectable
by anyone holding the documents and the chain (`verify`, `pms-cli fiscal verify`, offline from
an export too). A payment's entry (kind PAYMENT or REFUND, `document_id` the payment's id, its
`number` the payment's idempotency reference) chains its record (`payment_record`: id, kind,
folio, amount, currency, method, business date, the payment it refunds); the export carries
that record, rebuilt from the payment's row, among the documents. A company's receivable (AR)
invoice is chained the same way as it is issued (kind AR_INVOICE, `document_id` the
company_invoice row's id, `ar_invoice_record`: its number, series, company, dates, total and
currency, none of which changes after issue), and rebuilt from its row for the export.

Entry n holds the SHA-256 of the document's canonical JSON (`content_hash`), the hash of entry
n-1 (`prev_hash`; the first entry's is 64 zeros) and its own `hash` over
`prev_hash|seq|kind|number|document id|content_hash`. Appends take the chain's head row lock
(`fiscal_journal_head`), after the document's series lock, in the document's transaction: the
chain order is the commit order, and a document that rolls back leaves no entry.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from pms.db.current import current_unit_of_work
from pms.db.dialect import fast_path
from pms.db.fields import utcnow
from pms.db.locking import for_update_always
from pms.db.statements import Statement
from pms.domain.money import quantize
from pms.models import FolioPayment
from pms.models.cashiering import FiscalJournalEntry, FiscalJournalHead, Invoice

GENESIS = "0" * 64


def content_hash(document: dict[str, Any]) -> str:
    """The SHA-256 of a document's canonical JSON (sorted keys, no spaces, UTF-8)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def link_hash(prev_hash: str, seq: int, kind: str, number: str, document_id: str,
              content: str) -> str:
    text = "|".join((prev_hash, str(seq), kind, number, document_id, content))
    return hashlib.sha256(text.encode()).hexdigest()


PAYMENT_KINDS = ("PAYMENT", "REFUND")
AR_INVOICE = "AR_INVOICE"


def payment_record(payment: FolioPayment) -> dict[str, Any]:
    """The facts of a captured payment or refund that the journal chains (none of them changes
    after capture)."""
    day = payment.business_date
    return {"id": str(payment.id), "kind": payment.kind, "folio_id": str(payment.folio_id),
            "amount": str(quantize(Decimal(str(payment.amount)), payment.currency)),
            "currency": payment.currency, "method": payment.method,
            "business_date": day.isoformat() if day is not None else None,
            "refund_of": str(payment.refund_of) if payment.refund_of else None}


def append_payment(property_id: uuid.UUID, payment: FolioPayment, *,
                   now: datetime, head: FiscalJournalHead | None = None) -> FiscalJournalEntry:
    """Chain a payment or refund as it is captured (inside the capture's unit of work).
    `head`: the property's head, read with its lock by the caller in this transaction (the
    card payment's outcome read, `payments.OUTCOME_WITH_HEAD`), else read and locked here."""
    kind = "REFUND" if payment.kind == "REFUND" else "PAYMENT"
    return _append(property_id, kind=kind, document_id=payment.id,
                   number=str(payment.idempotency_key or payment.id)[:64],
                   content=content_hash(payment_record(payment)), now=now, head=head)


def ar_invoice_record(row: Any) -> dict[str, Any]:
    """The facts of a company's receivable invoice (a `CompanyInvoice`) that the journal chains
    (its open amount moves with payments, so it is not one of them)."""
    return {"id": str(row.id), "kind": AR_INVOICE, "number": row.number, "series": row.series,
            "company_profile_id": str(row.company_profile_id),
            "property_id": str(row.property_id), "issued_on": row.issued_on.isoformat(),
            "due_on": row.due_on.isoformat(),
            "charges_total": str(quantize(Decimal(str(row.total)), row.currency)),
            "currency": row.currency}


def append_ar_invoice(property_id: uuid.UUID, row: Any, *, now: datetime) -> FiscalJournalEntry:
    """Chain a company's receivable invoice as it is issued (inside the issue's unit of work,
    after its number's series lock)."""
    return _append(property_id, kind=AR_INVOICE, document_id=row.id, number=row.number,
                   content=content_hash(ar_invoice_record(row)), now=now)


def append(property_id: uuid.UUID, document: Invoice, *, now: datetime) -> FiscalJournalEntry:
    """Chain `document` at the end of the property's journal (inside its unit of work)."""
    return _append(property_id, kind=document.kind, document_id=document.id,
                   number=document.number, content=content_hash(document.document), now=now)


def _append(property_id: uuid.UUID, *, kind: str, document_id: uuid.UUID, number: str,
            content: str, now: datetime, head: FiscalJournalHead | None = None
            ) -> FiscalJournalEntry:
    query = FiscalJournalHead.select().where(FiscalJournalHead.property_id == property_id)
    if head is None:
        head = _locked_head(query).first()
    if head is None:  # the property's first document; a parallel first one waits on the row
        FiscalJournalHead.insert(property_id=property_id, last_seq=0,
                                 last_hash=GENESIS).on_conflict_ignore().execute()
        head = _locked_head(query).get()
    seq = head.last_seq + 1
    entry = FiscalJournalEntry(
        property_id=property_id, seq=seq, kind=kind, document_id=document_id, number=number,
        recorded_at=now, content_hash=content, prev_hash=head.last_hash,
        hash=link_hash(head.last_hash, seq, kind, number, str(document_id), content))
    head.last_seq = seq
    head.last_hash = entry.hash
    uow = current_unit_of_work()
    if uow is None:
        entry.save(force_insert=True)
        head.save()
        return entry
    # PERF: on PostgreSQL both writes go with the next statement or the COMMIT (the head's
    # lock is held already; the next append's read of the head is sent after them)
    uow.add(entry)
    head.updated_at = utcnow()
    _advance_head(uow, head)
    return entry


def _head_queued(uow: Any, head: FiscalJournalHead) -> None:
    uow.queue(ADVANCE_HEAD, {"id": head.id, "seq": head.last_seq, "hash": head.last_hash,
                             "at": head.updated_at})


@fast_path(_head_queued)
def _advance_head(uow: Any, head: FiscalJournalHead) -> None:
    """The head moved to the entry just appended (its seq and hash): on PostgreSQL queued
    with the next statement or the COMMIT (its lock is held already), elsewhere saved."""
    head.save()


def _locked_head(query: Any) -> Any:
    """The head read with its lock. NOTE: not `pms.db.locking.for_update`, which the TEST-ONLY
    controls switch off to let a race happen: the chain's order is no race under study."""
    return for_update_always(query)


ADVANCE_HEAD = Statement.text("fiscal_journal.advance_head", postgres=(
    "UPDATE fiscal_journal_head SET last_seq = %(seq)s, last_hash = %(hash)s,"
    " updated_at = %(at)s WHERE env_id = %(env)s AND id = %(id)s"))


@dataclass
class Verification:
    """What `verify` found: `ok` when every entry links to the one before, every document
    matches its entry and every document has one (`documents` counts the fiscal documents,
    `payments` the payments' and refunds' entries)."""

    entries: int = 0
    documents: int = 0
    payments: int = 0
    last_hash: str = GENESIS
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "entries": self.entries, "documents": self.documents,
                "payments": self.payments, "last_hash": self.last_hash, "problems": self.problems[:50],
                "problem_count": len(self.problems)}


def verify_chain(entries: Iterable[dict[str, Any]], documents: dict[str, dict[str, Any]], *,
                 head: dict[str, Any] | None = None) -> Verification:
    """Check a chain and its documents as plain data (the database's or an export's):
    `entries` in seq order, `documents` by id, `head` the recorded end when known."""
    result = Verification(documents=sum(1 for d in documents.values()
                                        if d.get("kind") not in PAYMENT_KINDS))
    prev = GENESIS
    seen: set[str] = set()
    for expected, entry in enumerate(entries, start=1):
        result.entries += 1
        where = f"entry {entry['seq']} ({entry['number']})"
        if entry["seq"] != expected:
            result.problems.append(f"{where}: expected seq {expected} (a gap or a reorder)")
        if entry["prev_hash"] != prev:
            result.problems.append(f"{where}: prev_hash does not name the entry before")
        again = link_hash(entry["prev_hash"], entry["seq"], entry["kind"], entry["number"],
                          entry["document_id"], entry["content_hash"])
        if again != entry["hash"]:
            result.problems.append(f"{where}: its hash does not match its fields (edited)")
        document = documents.get(entry["document_id"])
        if document is None:
            result.problems.append(f"{where}: the document is missing")
        elif content_hash(document) != entry["content_hash"]:
            result.problems.append(f"{where}: the document differs from what was chained")
        seen.add(entry["document_id"])
        if entry["kind"] in PAYMENT_KINDS:
            result.payments += 1
        prev = entry["hash"]
    for doc_id in sorted(set(documents) - seen):
        result.problems.append(f"document {documents[doc_id].get('number')} is not in the chain")
    if head is not None and (head["last_seq"] != result.entries or head["last_hash"] != prev):
        result.problems.append("the chain ends before its recorded head (entries removed)")
    result.last_hash = prev
    return result


def export(property_id: uuid.UUID) -> dict[str, Any]:
    """The property's chain, its head and its documents as plain data (what `verify_chain`
    reads; `pms-cli fiscal export` writes it)."""
    entries = [_entry(e) for e in FiscalJournalEntry.select().where(
        FiscalJournalEntry.property_id == property_id).order_by(FiscalJournalEntry.seq)]
    documents = {str(d.id): d.document for d in Invoice.select().where(
        Invoice.property == property_id).order_by(Invoice.issued_at)}
    paid = [e["document_id"] for e in entries if e["kind"] in PAYMENT_KINDS]
    for start in range(0, len(paid), 500):
        for row in FolioPayment.select().where(FolioPayment.id.in_(paid[start:start + 500])):
            documents[str(row.id)] = payment_record(row)
    receivable = [e["document_id"] for e in entries if e["kind"] == AR_INVOICE]
    if receivable:
        from pms.models.companies import CompanyInvoice

        for start in range(0, len(receivable), 500):
            for row in CompanyInvoice.select().where(
                    CompanyInvoice.id.in_(receivable[start:start + 500])):
                documents[str(row.id)] = ar_invoice_record(row)
    head = FiscalJournalHead.get_or_none(FiscalJournalHead.property_id == property_id)
    return {"property_id": str(property_id), "entries": entries, "documents": documents,
            "head": None if head is None else {"last_seq": head.last_seq,
                                               "last_hash": head.last_hash}}


def verify(property_id: uuid.UUID) -> Verification:
    """Verify the property's chain as the database holds it (inside a read scope)."""
    data = export(property_id)
    return verify_chain(data["entries"], data["documents"], head=data["head"])


def _entry(row: FiscalJournalEntry) -> dict[str, Any]:
    return {"seq": row.seq, "kind": row.kind, "document_id": str(row.document_id),
            "number": row.number, "recorded_at": row.recorded_at.isoformat(),
            "content_hash": row.content_hash, "prev_hash": row.prev_hash, "hash": row.hash}
