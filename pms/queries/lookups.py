"""The loaders every use case starts with: one row of the env by id, else NotFound.

They stand below the use cases: the write side (pms.services) and the read side (pms.queries)
both find their rows here, so neither reaches into the other for a loader. Reads only, inside
the caller's tenant scope; `for_update` / `lock` takes the row lock in the caller's write
transaction (pms.db.locking).

- `load_property`, `load_child` (a catalog row of a property: anything with the kind's `model`
  and `label`, pms.services.catalog.catalog.Kind);
- `load_reservation`: the env's reservation of a property, narrowed to the guest's own when a
  guest session asks;
- `live_key_count`: a stay's live digital keys (INACTIVE or ACTIVE, not past valid_until): the
  boarding pass's key count and what `max_keys_per_stay` bounds.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update as locked
from pms.domain.states import DIGITAL_KEY_LIVE
from pms.errors import NotFound
from pms.models import DigitalKey, Property, Reservation

LIVE_KEY_STATES = [st.value for st in DIGITAL_KEY_LIVE]


def load_property(property_id: uuid.UUID, *, for_update: bool = False) -> Property:
    """The env's property or NotFound (call inside a scope)."""
    if for_update:
        row = locked(Property.select().where(Property.id == property_id)).first()
    else:
        row = Property.fetch(property_id)
    if row is None:
        raise NotFound("no such property")
    return row


def load_child(kind: Any, property_id: uuid.UUID, id_: uuid.UUID, *,
               for_update: bool = False) -> Any:
    """A catalog row of the property (`kind.model`), or NotFound naming `kind.label`."""
    model = kind.model
    if for_update:
        row = locked(model.select().where((model.id == id_) & (model.property == property_id))).first()
    else:
        row = model.fetch(id_)
    if row is None or row.property_id != property_id:
        raise NotFound(f"no such {kind.label}")
    return row


def load_reservation(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID, *,
                     lock: bool = False) -> Reservation:
    """The env's reservation of that property (a guest session sees only its own), else NotFound."""
    query = Reservation.select().where((Reservation.id == reservation_id)
                                       & (Reservation.property == property_id))
    if ctx.holder_id is not None:
        query = query.where(Reservation.guest_profile == ctx.holder_id)
    row = (locked(query) if lock else query).first()
    if row is None:
        raise NotFound("no such reservation")
    return row


def live_key_count(reservation_id: uuid.UUID, now: datetime) -> int:
    """Live keys of a stay (INACTIVE or ACTIVE, not past valid_until). Call inside a scope."""
    return DigitalKey.select().where((DigitalKey.reservation == reservation_id)
                                     & DigitalKey.status.in_(LIVE_KEY_STATES)
                                     & (DigitalKey.valid_until > now)).count()
