"""The master folio of a room block: a folio that belongs to the block, not to a
reservation (`folio.block_id` set, `folio.reservation_id` None; migration 042).

Opened with the block (pms.services.groups.room_blocks.create_block, in the block's unit of
work: one insert, the block's `created` event carries `folio_id`). A block made before migration
042 has none: `master_folio` opens it on first use (a banquet event's posting), idempotently: the
caller holds the block row's lock, and the unique index `folio_block_master` (env_id, block_id)
refuses a second master folio of one block whatever the path.

It is read and posted to through the folio routes like any folio (`folios:read` /
`folios:write`); a holder (guest) session never sees it (it has no stay: the holder guard joins
the stay). The rules of reservation folios do not reach it: check-out closes the folios of its
stay (the master folio has none), the night audit posts room nights to guest folios only, and it
is never a GUEST folio (folio_type MASTER), so no projected room nights. It stays OPEN until
someone settles and closes it; the open-folios report lists it with its `block_id`.
"""

from __future__ import annotations

from typing import Any

import peewee

from pms.db.database import db
from pms.domain.states import FOLIO_INITIAL
from pms.errors import Conflict
from pms.models import Folio, FolioCharge, FolioPayment, Property

MASTER = "MASTER"


def open_master_folio(block: Any) -> Folio:
    """The block's master folio, opened now if it has none (inside a unit of work that holds
    the block row, new or locked); sets `block.folio_id` (written by a plain UPDATE: the
    block's own version moves with the caller's change, not with this)."""
    folio = None
    if block.folio_id is not None:
        folio = Folio.select().where(Folio.id == block.folio_id).first()
    if folio is None:
        folio = Folio.select().where(Folio.block_id == block.id).first()
    if folio is None:
        currency = Property.select(Property.currency_code).where(
            Property.id == block.property_id).get().currency_code
        try:
            with db.atomic():  # a savepoint: a raced opening leaves us able to read the winner
                folio = Folio.create(reservation=None, block_id=block.id,
                                     property=block.property_id, room_number=None,
                                     status=FOLIO_INITIAL.value, folio_type=MASTER,
                                     currency=currency)
        except peewee.IntegrityError:  # folio_block_master: another opening won
            folio = Folio.select().where(Folio.block_id == block.id).get()
    if block.folio_id != folio.id:
        type(block).update(folio_id=folio.id).where(type(block).id == block.id).execute()
        block.folio_id = folio.id
    return folio


def drop_master_folio(block: Any) -> None:
    """Delete the block's master folio with the block (409 block_folio_in_use while it holds a
    line or a payment: a block with a bill is cancelled, not deleted)."""
    if block.folio_id is None:
        return
    used = (FolioCharge.select(FolioCharge.id).where(FolioCharge.folio == block.folio_id).exists()
            or FolioPayment.select(FolioPayment.id).where(
                FolioPayment.folio == block.folio_id).exists())
    if used:
        raise Conflict("the block's master folio holds lines or payments; cancel the block "
                       "instead", code="block_folio_in_use", folio_id=str(block.folio_id))
    type(block).update(folio_id=None).where(type(block).id == block.id).execute()
    Folio.delete().where(Folio.id == block.folio_id).execute()
    block.folio_id = None


__all__ = ["MASTER", "drop_master_folio", "open_master_folio"]
