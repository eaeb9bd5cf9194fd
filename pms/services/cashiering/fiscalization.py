"""Fiscalization: every fiscal document submitted to the property's fiscal provider (a TSE, an
NF525 signer, an authority's registry: pms.platform.fiscal) after its commit, through the outbox.

Issuing a document writes its `fiscalization` row (PENDING; its id is the document's) and the
event `hotel:pms:fiscal_document:fiscalization_requested` in the document's transaction; the
relay's reaction sends the `fiscalize_document` actor, which calls the provider outside any
transaction with the document's id as the idempotency key and records the answer. A provider
outage leaves the row PENDING (counted in `attempts`, the error kept) and raises, so the actor
retries with backoff; nothing else waits for it (a check-out or an invoice is never refused for
it). An ACCEPTED row is never submitted again; REJECTED and CORRECTION_NEEDED rows wait for
`resend` (`pms-cli fiscal resend`). The document's content never changes: the provider's
signature, counter and signing time live on the fiscalization row only.
"""

from __future__ import annotations

import uuid
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.states import FISCAL_INITIAL, FISCAL_MACHINE, FiscalState
from pms.errors import NotFound
from pms.models.cashiering import Invoice
from pms.models.fiscalization import Fiscalization
from pms.services.cashiering.fiscal_journal import content_hash

AGGREGATE = "fiscal_document"
REQUESTED = "fiscalization_requested"
RESENDABLE = (FiscalState.PENDING, FiscalState.SUBMITTED, FiscalState.REJECTED,
              FiscalState.CORRECTION_NEEDED)


def view(row: Fiscalization) -> dict[str, Any]:
    """The fiscal state of a document as the API and the CLI show it."""
    return {"document_id": str(row.id), "kind": row.kind, "number": row.number,
            "state": row.state, "provider": row.provider, "attempts": row.attempts,
            "last_error": row.last_error,
            "submitted_at": row.submitted_at.isoformat() if row.submitted_at else None,
            "signature": row.signature, "signature_counter": row.signature_counter,
            "signed_at": row.signed_at.isoformat() if row.signed_at else None,
            "transaction_ref": row.transaction_ref}


def request(uow: UnitOfWork, document: Invoice) -> Fiscalization:
    """The document's fiscalization row (PENDING) and its event, in the document's unit of
    work."""
    row = Fiscalization.create(id=document.id, version=1, property_id=document.property_id,
                               kind=document.kind, number=document.number,
                               state=FISCAL_INITIAL.value, provider="platform")
    uow.record(AGGREGATE, REQUESTED, row, view(row), property_id=document.property_id)
    return row


def fiscalize(ctx: Ctx, document_id: uuid.UUID, client: Any) -> Fiscalization | None:
    """Submit the document to the fiscal provider and record its answer; the actor's body, safe
    to run twice (an ACCEPTED, REJECTED or CORRECTION_NEEDED document is not submitted again).

    Raises:
        FiscalUnavailable (503): the provider cannot be reached; the row stays PENDING.
    """
    from pms.platform.fiscal import FiscalUnavailable

    with lock_errors(), unit_of_work(ctx):
        row = _locked(document_id)
        if row is None:
            return None
        if not FISCAL_MACHINE.can(row.state, "submit"):
            return row  # answered already (or waiting for a resend)
        document = Invoice.get_by_id(document_id)
        row.state = FISCAL_MACHINE.transition(row.state, "submit").value
        row.attempts += 1
        row.submitted_at = ctx.now
        row.save()
        submission = {"env_id": str(ctx.env_id), "property_id": str(row.property_id),
                      "document_id": str(row.id), "kind": row.kind, "number": row.number,
                      "content_hash": content_hash(document.document),
                      "idempotency_key": str(row.id)}
    try:
        outcome = client.submit(**submission)
    except FiscalUnavailable as exc:
        _record(ctx, document_id, "unavailable", error=str(exc.detail))
        raise
    trigger = {"ACCEPTED": "accept", "REJECTED": "reject",
               "CORRECTION_NEEDED": "correct"}[outcome.status]
    return _record(ctx, document_id, trigger, outcome=outcome)


def _locked(document_id: uuid.UUID) -> Fiscalization | None:
    return for_update(Fiscalization.select().where(Fiscalization.id == document_id)).first()


def _record(ctx: Ctx, document_id: uuid.UUID, trigger: str, *, outcome: Any = None,
            error: str | None = None) -> Fiscalization | None:
    """The provider's answer, written while the row is still SUBMITTED."""
    with lock_errors(), unit_of_work(ctx) as uow:
        row = _locked(document_id)
        if row is None or row.state != FiscalState.SUBMITTED:
            return row
        row.state = FISCAL_MACHINE.transition(row.state, trigger).value
        if outcome is not None:
            row.provider = outcome.provider[:32]
            row.signature = outcome.signature
            row.signature_counter = outcome.signature_counter
            row.signed_at = outcome.signed_at
            row.transaction_ref = outcome.transaction_ref
            row.last_error = (outcome.reason or None) and outcome.reason[:500]
        else:
            row.last_error = (error or "unavailable")[:500]
        row.save()
        if trigger != "unavailable":
            action = {"accept": "fiscalized", "reject": "fiscalization_rejected",
                      "correct": "correction_needed"}[trigger]
            uow.record(AGGREGATE, action, row, view(row), property_id=row.property_id)
        return row


def resend(ctx: Ctx, property_id: uuid.UUID, document_id: uuid.UUID | None = None
           ) -> list[dict[str, Any]]:
    """Submit again every document of the property not ACCEPTED (or only `document_id`): each
    goes back to PENDING with a new `fiscalization_requested` event (the actor's message).

    Raises:
        NotFound: `document_id` is not a document of the property.
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        query = Fiscalization.select().where(Fiscalization.property_id == property_id)
        if document_id is not None:
            query = query.where(Fiscalization.id == document_id)
        else:
            query = query.where(Fiscalization.state.in_([s.value for s in RESENDABLE]))
        rows = list(for_update(query.order_by(Fiscalization.created_at, Fiscalization.id)))
        if document_id is not None and not rows:
            raise NotFound("no such fiscal document at this property")
        out = []
        for row in rows:
            if not FISCAL_MACHINE.can(row.state, "resend"):
                out.append(view(row))  # ACCEPTED: nothing to resend
                continue
            row.state = FISCAL_MACHINE.transition(row.state, "resend").value
            row.save()
            out.append(uow.record(AGGREGATE, REQUESTED, row, view(row),
                                  property_id=row.property_id))
    return out


def get_fiscalization(ctx: Ctx, property_id: uuid.UUID, document_id: uuid.UUID
                      ) -> dict[str, Any]:
    """The document's fiscal state. Raises NotFound."""
    with read_scope(ctx):
        row = Fiscalization.get_or_none(Fiscalization.id == document_id,
                                        Fiscalization.property_id == property_id)
        if row is None:
            raise NotFound("no such fiscal document at this property")
        return view(row)


def states_of(document_ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    """Each document's fiscal state (inside a read scope)."""
    if not document_ids:
        return {}
    return {r.id: r.state for r in Fiscalization.select(Fiscalization.id, Fiscalization.state)
            .where(Fiscalization.id.in_(document_ids))}
