"""The auditor's export of a property's period: its fiscal documents, their lines, the payments
taken and the fiscal journal, as CSV files with a manifest (modelled on the German DSFinV-K
export: one table per file, a header row, one row per record, keys that join the tables).

The period is a range of dates, both included, read in UTC: the journal entries recorded in it,
their documents (and lines), and the folio payments made in it.

| file | one row per | joins by |
|---|---|---|
| `documents.csv` | document (invoice, credit note) | `document_id` |
| `lines.csv` | folio line of a document, with its VAT rate | `document_id` |
| `payments.csv` | folio payment or refund of the period | `folio_id` |
| `journal.csv` | fiscal journal entry (the hash chain) | `document_id` |
| `documents.jsonl` | document as frozen at issue (canonical JSON) | `id` |

`manifest.json` names each file with its row count and SHA-256, and the period's chain: the
hash of the entry before it (`prev_hash`, 64 zeros from the first), the first and last entry's
seq and hash. `verify_files` checks an export offline: every file's hash and rows against the
manifest, the journal's links and hashes from `prev_hash` to `last_hash`, each document's JSON
against the hash its entry chained, and `documents.csv` and `lines.csv` against the documents
(rebuilt from the JSON, byte for byte). An auditor compares `last_hash` with the live chain
(`pms-cli fiscal verify`).

As a job (`fiscal_audit_export`): `start` queues it, the worker's `run` builds the files (the
job's progress is the tables done), stores them zipped in object storage and leaves the
manifest and the archive's key, size and sha256 on the job's result; `download` reads it back.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import uuid
import zipfile
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from pms.context import Ctx
from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import JOB_INITIAL, JobStatus
from pms.errors import NotFound, ValidationFailed
from pms.models import Folio, FolioPayment, Property
from pms.models.platform import Job
from pms.services.cashiering import fiscal_journal
from pms.services.job_records import JobNotFinished, record_queued, requested_by

AUDIT_EXPORT = "fiscal_audit_export"
FORMAT = "pms-audit-export/1"
MAX_DAYS = 400
MANIFEST = "manifest.json"
PAYMENT_RECORDS = ("PAYMENT", "REFUND")  # journal entries of payments: their record, no lines

DOCUMENT_COLUMNS = ["document_id", "kind", "number", "issued_at", "folio_id", "refers_to_number",
                    "reason", "confirmation_number", "buyer_name", "buyer_vat_id", "currency",
                    "charges_total", "payments_total", "balance"]
LINE_COLUMNS = ["document_id", "document_number", "line_no", "line_id", "kind", "category",
                "transaction_code", "description", "business_date", "night", "quantity",
                "amount", "vat_rate", "parent_id"]
PAYMENT_COLUMNS = ["payment_id", "folio_id", "created_at", "business_date", "kind", "method",
                   "status", "amount", "currency", "refund_of"]
JOURNAL_COLUMNS = ["seq", "kind", "number", "document_id", "recorded_at", "content_hash",
                   "prev_hash", "hash"]


def check_period(date_from: date, date_to: date) -> None:
    """Raises ValidationFailed (422) for a reversed or too long period."""
    if date_to < date_from:
        raise ValidationFailed("the period ends before it starts",
                               errors=[{"field": "to", "message": "before from"}])
    if (date_to - date_from).days + 1 > MAX_DAYS:
        raise ValidationFailed(f"a period is at most {MAX_DAYS} days",
                               errors=[{"field": "to", "message": f"at most {MAX_DAYS} days"}])


def _csv(columns: list[str], rows: list[dict[str, Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row[k] for k in columns})
    return out.getvalue().encode()


def canonical(document: dict[str, Any]) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def _document_row(doc: dict[str, Any]) -> dict[str, Any]:
    buyer = doc.get("buyer") or {}
    return {"document_id": doc.get("id"), "kind": doc.get("kind"), "number": doc.get("number"),
            "issued_at": doc.get("issued_at"), "folio_id": doc.get("folio_id"),
            "refers_to_number": (doc.get("refers_to") or {}).get("number"),
            "reason": doc.get("reason"), "confirmation_number": doc.get("confirmation_number"),
            "buyer_name": buyer.get("name"), "buyer_vat_id": buyer.get("vat_id"),
            "currency": doc.get("currency"), "charges_total": doc.get("charges_total"),
            "payments_total": doc.get("payments_total"), "balance": doc.get("balance")}


def _line_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    rates = doc.get("line_tax_rates") or {}
    return [{"document_id": doc.get("id"), "document_number": doc.get("number"), "line_no": n,
             "line_id": line.get("id"), "kind": line.get("kind"),
             "category": line.get("category"), "transaction_code": line.get("transaction_code"),
             "description": line.get("description"), "business_date": line.get("business_date"),
             "night": line.get("night"), "quantity": line.get("quantity"),
             "amount": line.get("amount"), "vat_rate": rates.get(line.get("id")),
             "parent_id": line.get("parent_id")}
            for n, line in enumerate(doc.get("lines") or (), start=1)]


def document_tables(records: list[dict[str, Any]]) -> dict[str, bytes]:
    """documents.csv and lines.csv of the chained records that are documents (a payment's
    record is in payments.csv), in journal order."""
    documents = [d for d in records if d.get("kind") not in PAYMENT_RECORDS]
    return {"documents.csv": _csv(DOCUMENT_COLUMNS, [_document_row(d) for d in documents]),
            "lines.csv": _csv(LINE_COLUMNS, [r for d in documents for r in _line_rows(d)])}


def _utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _bounds(date_from: date, date_to: date) -> tuple[datetime, datetime]:
    return (datetime.combine(date_from, time(), UTC),
            datetime.combine(date_to + timedelta(days=1), time(), UTC))


def collect(ctx: Ctx, property_id: uuid.UUID, date_from: date, date_to: date, *,
            progress: Callable[[int, int], None] | None = None) -> dict[str, bytes]:
    """Every file of the period's export, the manifest last. Reads the chain, then the
    payments, each in a read scope of its own (`progress` is called between them, outside)."""
    total = 4
    step = progress or (lambda done, total: None)
    start, end = _bounds(date_from, date_to)
    with read_scope(ctx):
        prop = Property.get_or_none(Property.id == property_id)
        if prop is None:
            raise NotFound("no such property")
        chained = fiscal_journal.export(property_id)  # every entry and the record it chained
    journal = [e for e in chained["entries"] if start <= _utc(e["recorded_at"]) < end]
    before = next((e for e in chained["entries"]
                   if journal and e["seq"] == journal[0]["seq"] - 1), None)
    files = {"journal.csv": _csv(JOURNAL_COLUMNS, journal)}
    step(1, total)
    documents = [chained["documents"][e["document_id"]] for e in journal
                 if e["document_id"] in chained["documents"]]
    files["documents.jsonl"] = "".join(canonical(d) + "\n" for d in documents).encode()
    files.update(document_tables(documents))
    step(2, total)
    with read_scope(ctx):
        payments = list(FolioPayment.select(FolioPayment, Folio.id).join(Folio).where(
            (Folio.property_id == property_id) & (FolioPayment.created_at >= start)
            & (FolioPayment.created_at < end))
            .order_by(FolioPayment.created_at, FolioPayment.id))
    step(3, total)
    files["payments.csv"] = _csv(PAYMENT_COLUMNS, [
        {"payment_id": str(p.id), "folio_id": str(p.folio_id),
         "created_at": p.created_at.isoformat(),
         "business_date": p.business_date.isoformat() if p.business_date else None,
         "kind": p.kind, "method": p.method, "status": p.status, "amount": str(p.amount),
         "currency": p.currency, "refund_of": str(p.refund_of) if p.refund_of else None}
        for p in payments])
    step(4, total)
    chain = {"entries": len(journal),
             "prev_hash": before["hash"] if before is not None else fiscal_journal.GENESIS,
             "first_seq": journal[0]["seq"] if journal else None,
             "first_hash": journal[0]["hash"] if journal else None,
             "last_seq": journal[-1]["seq"] if journal else None,
             "last_hash": journal[-1]["hash"] if journal else None}
    manifest = {
        "format": FORMAT, "property": {"id": str(prop.id), "code": prop.code},
        "period": {"from": date_from.isoformat(), "to": date_to.isoformat(), "timezone": "UTC"},
        "files": [{"name": name, "rows": _rows(name, data),
                   "sha256": hashlib.sha256(data).hexdigest()}
                  for name, data in sorted(files.items())],
        "chain": chain}
    files[MANIFEST] = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
    return files


def _rows(name: str, data: bytes) -> int:
    lines = data.decode().splitlines()
    if name.endswith(".csv"):
        return len(list(csv.reader(lines))) - 1
    return len(lines)


def _file_problems(files: dict[str, bytes], listed: dict[str, Any]) -> list[str]:
    """Each listed file present with the manifest's hash and rows, and nothing unlisted."""
    problems: list[str] = []
    for name, meta in sorted(listed.items()):
        data = files.get(name)
        if data is None:
            problems.append(f"{name}: missing")
            continue
        if hashlib.sha256(data).hexdigest() != meta["sha256"]:
            problems.append(f"{name}: its sha256 differs from the manifest's (edited)")
        if _rows(name, data) != meta["rows"]:
            problems.append(f"{name}: {_rows(name, data)} rows, the manifest says {meta['rows']}")
    for name in sorted(set(files) - set(listed) - {MANIFEST}):
        problems.append(f"{name}: not in the manifest")
    return problems


def _chain_problems(journal: list[dict[str, str]], documents: list[dict[str, Any]],
                    chain: dict[str, Any]) -> list[str]:
    """The journal's links and hashes from the manifest's prev_hash to its last_hash, and each
    chained record's hash."""
    problems: list[str] = []
    prev, seq = chain["prev_hash"], chain["first_seq"]
    by_id = {d.get("id"): d for d in documents}
    for entry in journal:
        where = f"journal entry {entry['seq']} ({entry['number']})"
        if seq is not None and int(entry["seq"]) != seq:
            problems.append(f"{where}: expected seq {seq} (a gap or a reorder)")
        seq = int(entry["seq"]) + 1
        if entry["prev_hash"] != prev:
            problems.append(f"{where}: prev_hash does not name the entry before")
        again = fiscal_journal.link_hash(entry["prev_hash"], int(entry["seq"]), entry["kind"],
                                         entry["number"], entry["document_id"],
                                         entry["content_hash"])
        if again != entry["hash"]:
            problems.append(f"{where}: its hash does not match its fields (edited)")
        document = by_id.get(entry["document_id"])
        if document is None:
            problems.append(f"{where}: the document is missing")
        elif fiscal_journal.content_hash(document) != entry["content_hash"]:
            problems.append(f"{where}: the document differs from what was chained")
        prev = entry["hash"]
    if len(journal) != chain["entries"] or (journal and prev != chain["last_hash"]):
        problems.append("the journal does not end at the manifest's last_hash (entries removed)")
    return problems


def verify_files(files: dict[str, bytes]) -> dict[str, Any]:
    """Check an export offline (see the module's docstring). Returns {"ok", "problems",
    "entries", "documents", "last_hash"}."""
    problems: list[str] = []
    try:
        manifest = json.loads(files[MANIFEST])
        listed = {f["name"]: f for f in manifest["files"]}
        chain = manifest["chain"]
    except (KeyError, ValueError, TypeError) as exc:
        return {"ok": False, "problems": [f"no readable manifest ({exc})"], "entries": 0,
                "documents": 0, "last_hash": None}
    problems += _file_problems(files, listed)
    try:
        journal = list(csv.DictReader(io.StringIO(files["journal.csv"].decode())))
        documents = [json.loads(line) for line in
                     files["documents.jsonl"].decode().splitlines() if line]
    except (KeyError, ValueError) as exc:
        problems.append(f"the journal or the documents cannot be read ({exc})")
        return {"ok": False, "problems": problems, "entries": 0, "documents": 0,
                "last_hash": None}
    problems += _chain_problems(journal, documents, chain)
    if len(documents) != len(journal):
        problems.append(f"{len(documents)} documents for {len(journal)} journal entries")
    for name, data in document_tables(documents).items():
        if files.get(name) != data:
            problems.append(f"{name}: its rows differ from the chained documents (edited)")
    return {"ok": not problems, "problems": problems, "entries": len(journal),
            "documents": len(documents), "last_hash": chain["last_hash"]}


def zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            archive.writestr(name, files[name])
    return out.getvalue()


def unzipped(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


# -- as a job -----------------------------------------------------------------------------------

def start(ctx: Ctx, property_id: uuid.UUID, date_from: date, date_to: date) -> Job:
    """Queue the export. Raises NotFound (no such property), ValidationFailed (the period)."""
    check_period(date_from, date_to)
    with unit_of_work(ctx) as uow:
        if Property.get_or_none(Property.id == property_id) is None:
            raise NotFound("no such property")
        job = Job.create(kind=AUDIT_EXPORT, status=JOB_INITIAL.value, property_id=property_id,
                         input={"from": date_from.isoformat(), "to": date_to.isoformat(),
                                **requested_by(ctx)})
        record_queued(uow, job)
    return job


def archive_key(job: Job) -> str:
    return f"fiscal-exports/{job.env_id}/{job.id}.zip"


def run(ctx: Ctx, job: Job, *, store: Any) -> dict[str, Any]:
    """Build and store the archive (inside the job runner's guard). Returns the job's result."""
    def progress(done: int, total: int) -> None:
        with unit_of_work(ctx):
            Job.update(result={"progress": {"done": done, "total": total + 1}}).where(
                Job.id == job.id).execute()

    files = collect(ctx, job.property_id, date.fromisoformat(job.input["from"]),
                    date.fromisoformat(job.input["to"]), progress=progress)
    data = zipped(files)
    digest = hashlib.sha256(data).hexdigest()
    store.put(archive_key(job), data, content_type="application/zip", sha256=digest)
    return {"progress": {"done": 5, "total": 5}, "manifest": json.loads(files[MANIFEST]),
            "archive": {"key": archive_key(job), "bytes": len(data), "sha256": digest}}


def load(ctx: Ctx, property_id: uuid.UUID, job_id: uuid.UUID) -> Job:
    """The property's export job. Raises NotFound."""
    with read_scope(ctx):
        job = Job.get_or_none(Job.id == job_id)
    if job is None or job.kind != AUDIT_EXPORT or job.property_id != property_id:
        raise NotFound("no such fiscal export")
    return job


def download(ctx: Ctx, property_id: uuid.UUID, job_id: uuid.UUID, *, store: Any) -> bytes:
    """The stored archive. Raises NotFound; JobNotFinished (409) before the job succeeded."""
    job = load(ctx, property_id, job_id)
    if job.status != JobStatus.SUCCEEDED:
        raise JobNotFinished(f"the job is {job.status}", job_status=job.status)
    data = store.get(archive_key(job))
    if data is None:
        raise NotFound("the archive is gone")
    return data
