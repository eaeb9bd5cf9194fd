"""Finding one reservation for a caller: the env's reservation of a property, narrowed to the
guest's own when a guest session asks, optionally locked for the caller's unit of work.

A leaf below every service that reads or changes a reservation (bookings, folios, the front
desk, cashiering), so none of them needs `pms.services.reservations.reservations` just to find the row.
"""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.db.locking import for_update
from pms.errors import NotFound
from pms.models import Reservation


def load_reservation(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID, *,
                     lock: bool = False) -> Reservation:
    """The env's reservation of that property (a guest session sees only its own), else NotFound."""
    query = Reservation.select().where((Reservation.id == reservation_id)
                                       & (Reservation.property == property_id))
    if ctx.holder_id is not None:
        query = query.where(Reservation.guest_profile == ctx.holder_id)
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("no such reservation")
    return row
