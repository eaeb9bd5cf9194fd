"""Posting an event's charges: an ACTUAL event posts each resource (unit price x quantity,
x actual attendees for a per-attendee item) and its space's rental (once per event) to the open folio named on the event, else to its
block's master folio, through cashiering's posting use case (pms.services.cashiering.posting).
event_posting remembers what was posted per (event, resource), so a repeat posts nothing and a
change (actual attendees, quantity, a removed resource) posts only the difference (a negative
difference is an allowance line).
"""

from __future__ import annotations

import uuid
from decimal import Decimal

import peewee

from pms import wiring
from pms.context import Ctx
from pms.db.database import db
from pms.db.locking import lock_errors
from pms.db.uow import unit_of_work
from pms.domain.money import quantize
from pms.domain.states import EventStatus
from pms.errors import Conflict
from pms.models import (
    BanquetEvent,
    EventPosting,
    EventResource,
    EventResourceItem,
    FunctionSpace,
)
from pms.schemas import banquets as s
from pms.schemas.common import to_data
from pms.services.cashiering.posting import PostingLine, lock_open_folio, post_lines_with_tax
from pms.services.groups.banquet_events import load_event
from pms.services.groups.event_stock import units
from pms.services.groups.function_spaces import _invalid


def _posting_folio(ev: BanquetEvent) -> uuid.UUID:
    """Where an event posts: the folio named on it, else its block's master folio (opened now
    for a block made before it had one: the block row locked, after the event's; see
    pms.services.cashiering.master_folios). 422 folio_id when it has neither."""
    from pms.services.cashiering.master_folios import open_master_folio
    from pms.services.groups.room_blocks import load_block

    if ev.folio_id is not None:
        return ev.folio_id
    if ev.block_id is None:
        raise _invalid("folio_id", "the event names no folio and belongs to no block")
    block = load_block(ev.property_id, ev.block_id)
    if block.folio_id is None:
        block = load_block(ev.property_id, ev.block_id, lock=True)
        open_master_folio(block)
    return block.folio_id


def _first_posting(ev: BanquetEvent, resource_id: uuid.UUID, folio_id: uuid.UUID, qty: int,
                   amount: Decimal, code_name: str | None) -> EventPosting:
    """The (event, resource) posting row; its unique key refuses a second one (a post that
    raced past the event's lock: 409 event_posting_raced, its lines roll back with it)."""
    try:
        with db.atomic():
            return EventPosting.create(event=ev.id, resource_id=resource_id, folio_id=folio_id,
                                       posted_quantity=qty, posted_amount=amount,
                                       transaction_code=code_name)
    except peewee.IntegrityError as exc:
        raise Conflict("a concurrent post of this event posted this resource first; post "
                       "again to post any difference", code="event_posting_raced") from exc


def post_event(ctx: Ctx, property_id: uuid.UUID, event_id: uuid.UUID) -> s.EventPostResult:
    """Post an ACTUAL event's resources to the folio named on it, else to its block's master
    folio, idempotently per (event, resource): each posts the difference between what it costs
    now and what was posted (a correcting line: a charge, or an allowance when it went down).

    The event row is locked first, so two posts of one event serialize (PostgreSQL: FOR UPDATE;
    SQLite: the write lock) and the second sees the first's event_posting rows; the unique key
    (env_id, event_id, resource_id) of event_posting refuses a second row for one resource
    whatever the path (a raced insert fails: 409, nothing posted twice).

    Raises: NotFound. Conflict (409 event_not_actual) unless ACTUAL. ValidationFailed (422
    folio_id) when the event names no folio and has no block. FolioClosed (409) for a closed
    folio.
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        ev = load_event(ctx, property_id, event_id, lock=True)
        if ev.status != EventStatus.ACTUAL:
            raise Conflict(f"only an ACTUAL event posts (this one is {ev.status})",
                           code="event_not_actual", status_now=ev.status)
        folio = lock_open_folio(ctx, property_id, _posting_folio(ev))
        posted = {p.resource_id: p for p in EventPosting.select().where(
            EventPosting.event == ev.id)}
        pause = wiring.current().pause_after_check
        if pause is not None:  # TEST-ONLY: widen the window a concurrent post would need
            pause()
        resources = {r.id: r for r in EventResource.select(EventResource, EventResourceItem)
                     .join(EventResourceItem, on=(EventResource.item == EventResourceItem.id))
                     .where(EventResource.event == ev.id)}
        # what each charge costs now: (name, quantity, amount, transaction code) per resource,
        # and the space's rental (keyed by the space's id) once per event
        charges: dict[uuid.UUID, tuple[str, int, Decimal, str]] = {}
        for rid, res in resources.items():
            item = res.item
            qty = units(res.quantity, bool(item.per_attendee), ev)  # ACTUAL: its actual covers
            charges[rid] = (item.name, qty, quantize(Decimal(str(item.unit_price)) * qty,
                                                     folio.currency), item.transaction_code)
        space = FunctionSpace.get_by_id(ev.space_id)
        if space.rental_price is not None:
            charges[space.id] = (f"{space.name} rental", 1, quantize(
                Decimal(str(space.rental_price)), folio.currency), space.rental_transaction_code)
        lines, changed, results = [], [], []
        for rid in sorted(set(posted) | set(charges), key=str):
            charge, prior = charges.get(rid), posted.get(rid)
            name, qty, amount, code_now = charge or ("released resource", 0, Decimal(0), None)
            done_qty = prior.posted_quantity if prior else 0
            done_amount = Decimal(str(prior.posted_amount)) if prior else Decimal(0)
            diff = quantize(amount - done_amount, folio.currency)
            if diff != 0:
                code_name = code_now if charge else prior.transaction_code
                lines.append(PostingLine(
                    gross=diff, quantity=max(abs(qty - done_qty), 1),
                    description=f"{ev.name}: {name}",
                    transaction_code=code_name, ledger_key=f"event:{ev.id}:{rid}",
                    memo=f"event {ev.id}"))
                changed.append((rid, prior, qty, amount, code_name))
            if prior is not None or diff != 0:
                results.append(s.EventPostingOut(
                    resource_id=rid, folio_id=prior.folio_id if prior else folio.id,
                    posted_quantity=qty, posted_amount=amount, posted_now=diff))
        # the lines (and the folio's one change), then what each resource has posted so far
        post_lines_with_tax(uow, folio, lines, reason=f"banquet event {ev.id}")
        for rid, prior, qty, amount, code_name in changed:
            if prior is None:
                _first_posting(ev, rid, folio.id, qty, amount, code_name)
            else:
                prior.posted_quantity, prior.posted_amount = qty, amount
                prior.save()
        out = s.EventPostResult(event_id=ev.id, folio_id=folio.id, postings=results)
        ev.updated_at = ctx.now
        uow.record("event", "posted", ev, to_data(out), property_id=property_id)
    return out

