"""Check-out: post the room nights not yet charged, refuse while the folio has a balance (409
folio_not_closable: the guest is sent to the desk), otherwise close the folio, run the check-out
hooks (digital keys are revoked by the keys module through `on_check_out`), free the room and
mark it dirty. All in one unit of work.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import UnitOfWork, unit_of_work
from pms.domain.states import RESERVATION_MACHINE, ROOM_MACHINE
from pms.models import Reservation, Room
from pms.schemas import reservations as s
from pms.schemas.common import to_data
from pms.services.catalog import load_property
from pms.services.folios import close_folio, open_folio, post_room_charges
from pms.services.reservations import business_date, load_reservation, record
from pms.services.stays import mark_dirty, release_room_holds

CheckOutHook = Callable[[UnitOfWork, Reservation], None]

# Work other modules add to every check-out, inside its transaction (e.g. revoke the stay's
# active digital keys). A registry instead of an import, so check-out works before they exist.
_HOOKS: list[CheckOutHook] = []


def on_check_out(hook: CheckOutHook) -> CheckOutHook:
    """Register `hook(uow, reservation)` to run inside every check-out (decorator-friendly)."""
    if hook not in _HOOKS:
        _HOOKS.append(hook)
    return hook


def _run_hooks(uow: UnitOfWork, row: Reservation) -> None:
    try:  # the keys module registers its revoke hook on import, once it exists
        import importlib

        importlib.import_module("pms.services.keys")
    except ImportError:
        pass
    for hook in list(_HOOKS):
        hook(uow, row)


def check_out(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID) -> Reservation:
    """Check a CHECKED_IN guest out.

    Raises:
        NotFound. InvalidTransition (409): not CHECKED_IN.
        FolioNotClosable (409 folio_not_closable, with `balance` and `currency`): the folio,
            including the room nights posted now, has a balance; nothing is written.
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id, lock=True)
        status = RESERVATION_MACHINE.transition(row.status, "check_out")
        before = to_data(s.reservation_out(row))
        today = business_date(load_property(property_id), ctx.now)
        # Nights up to the night before today (at least the first night), within the stay.
        last_night = max(min(today, row.departure_date), row.arrival_date + timedelta(days=1))
        post_room_charges(row, last_night - timedelta(days=1), business_date=today)
        close_folio(open_folio(row), now=ctx.now)
        _run_hooks(uow, row)
        if row.room_id is not None:
            room = for_update(Room.select().where(Room.id == row.room_id)).first()
            room.status = ROOM_MACHINE.transition(room.status, "vacate").value
            mark_dirty(room)
            room.save()
        release_room_holds(row)
        row.status = status.value
        row.checked_out_at = ctx.now
        row.checked_out_business_date = today
        row.save()
        record(uow, row, "checked_out", before=before)
    return row
