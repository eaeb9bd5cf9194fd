"""A room block's master folio: members' room nights billed to it, and its settling when the
block ends.

Routing: the block's `master_folio_routing` (NONE, ROOM_AND_TAX, ROOM_TAX_AND_PACKAGES) is
copied onto each member's guest folio (`folio.routing`, `folio.routing_folio_id`): when the
folio opens at check-in (`pms.services.cashiering.folios.block_routing`), and, by
`apply_routing`, onto the OPEN guest folios of the block's stays whenever the block's routing
changes. Every poster of room nights (the night audit, check-out, the projected nights) reads
it from the folio row (`pms.services.cashiering.folios.route_rows`): the routed lines go to the
master folio, each naming the stay and the room; incidentals stay on the guest folio.

The block has ended when none of its reservations is still to come or in house (CONFIRMED or
CHECKED_IN): then its master folio (`pms.services.cashiering.master_folios`), paid through the
folio routes like any folio, is closed here with a zero balance (409 folio_not_closable naming
the balance otherwise, folio_credit_balance for a credit). One change of the block: its
`block.master_folio_settled` event and audit row carry the block and the closed folio."""

from __future__ import annotations

import uuid
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import unit_of_work
from pms.domain.states import FolioStatus
from pms.errors import Conflict
from pms.models import Folio
from pms.models.reservations import Reservation
from pms.schemas import room_blocks as s
from pms.schemas.common import to_data
from pms.services.cashiering.folios import GUEST, ROUTED_KINDS, close_folio, folio_balance
from pms.services.cashiering.master_folios import open_master_folio
from pms.services.groups.room_block_inventory import block_out, load_block

LIVE = ("CONFIRMED", "CHECKED_IN")


def settle_master_folio(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID
                        ) -> s.MasterFolioSettledOut:
    """Close the block's master folio (see the module). Raises: NotFound (block). Conflict
    (409): block_has_no_master_folio, block_in_progress (naming the stays still to come or in
    house), folio_closed (settled already), folio_not_closable / folio_credit_balance."""
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_block(property_id, block_id, lock=True)
        if row.folio_id is None:
            raise Conflict("the block has no master folio", code="block_has_no_master_folio")
        live = list(Reservation.select(Reservation.id, Reservation.confirmation_number,
                                       Reservation.status).where(
            (Reservation.block_id == row.id) & Reservation.status.in_(list(LIVE)))
            .order_by(Reservation.arrival_date, Reservation.id).limit(50))
        if live:
            raise Conflict(f"the block has not ended: {len(live)} of its reservations are "
                           "still to come or in house", code="block_in_progress",
                           reservations=[{"id": str(r.id),
                                          "confirmation_number": r.confirmation_number,
                                          "status": r.status} for r in live])
        folio = for_update(Folio.select().where(Folio.id == row.folio_id)).get()
        if folio.status != FolioStatus.OPEN:
            raise Conflict("the block's master folio is settled already", code="folio_closed",
                           folio_id=str(folio.id))
        before = to_data(block_out(row))
        paid = folio_balance(folio)
        close_folio(folio, now=ctx.now)  # 409 while a balance is owed or a credit held
        # no folio routes to a settled master folio (a stay reopened later pays its own)
        Folio.update(routing=None, routing_folio_id=None).where(
            Folio.routing_folio_id == folio.id).execute()
        row.updated_at = ctx.now
        row.save()
        out = s.MasterFolioSettledOut(block=block_out(row), folio_id=folio.id,
                                      folio_status=folio.status, closed_at=folio.closed_at,
                                      balance=str(paid))
        data = to_data(out)
        uow.record("block", "master_folio_settled", row, data, before=before,
                   property_id=property_id)
        out.block.version = row.version
    return out


def apply_routing(block: Any, routing: str) -> None:
    """Set the block's routing (inside the unit of work that holds the block row's lock) and
    copy it onto the OPEN guest folios of its stays (their room nights from now on); a
    routing other than NONE opens the block's master folio if it has none, and routes nothing
    once that folio is settled."""
    block.master_folio_routing = routing
    master = open_master_folio(block) if routing in ROUTED_KINDS else None
    routed = master is not None and master.status == FolioStatus.OPEN  # not once settled
    target = master.id if routed else None
    stays = Reservation.select(Reservation.id).where(Reservation.block_id == block.id)
    Folio.update(routing=routing if routed else None, routing_folio_id=target).where(
        (Folio.reservation.in_(stays)) & (Folio.folio_type == GUEST)
        & (Folio.status == FolioStatus.OPEN.value)).execute()
