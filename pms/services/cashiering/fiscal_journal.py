"""A property's fiscal journal: every fiscal document, appended in its own transaction to a
hash chain, so a gap, an edit or a deletion is detectable by anyone holding the documents and
the chain (`verify`, `pms-cli fiscal verify`, offline from an export too).

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
from typing import Any

from pms.db.locking import for_update
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


def append(property_id: uuid.UUID, document: Invoice, *, now: datetime) -> FiscalJournalEntry:
    """Chain `document` at the end of the property's journal (inside its unit of work)."""
    query = FiscalJournalHead.select().where(FiscalJournalHead.property_id == property_id)
    head = for_update(query).first()
    if head is None:  # the property's first document; a parallel first one waits on the row
        FiscalJournalHead.insert(property_id=property_id, last_seq=0,
                                 last_hash=GENESIS).on_conflict_ignore().execute()
        head = for_update(query).get()
    seq = head.last_seq + 1
    content = content_hash(document.document)
    entry = FiscalJournalEntry.create(
        property_id=property_id, seq=seq, kind=document.kind, document_id=document.id,
        number=document.number, recorded_at=now, content_hash=content, prev_hash=head.last_hash,
        hash=link_hash(head.last_hash, seq, document.kind, document.number, str(document.id),
                       content))
    head.last_seq = seq
    head.last_hash = entry.hash
    head.save()
    return entry


@dataclass
class Verification:
    """What `verify` found: `ok` when every entry links to the one before, every document
    matches its entry and every document has one."""

    entries: int = 0
    documents: int = 0
    last_hash: str = GENESIS
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "entries": self.entries, "documents": self.documents,
                "last_hash": self.last_hash, "problems": self.problems[:50],
                "problem_count": len(self.problems)}


def verify_chain(entries: Iterable[dict[str, Any]], documents: dict[str, dict[str, Any]], *,
                 head: dict[str, Any] | None = None) -> Verification:
    """Check a chain and its documents as plain data (the database's or an export's):
    `entries` in seq order, `documents` by id, `head` the recorded end when known."""
    result = Verification(documents=len(documents))
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
