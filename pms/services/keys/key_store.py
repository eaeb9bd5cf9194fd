"""The keys' store: a stay's live keys (inactive or active), locked for the caller's unit of
work. The statement asks first whether there are any, so a check-out of a stay without keys
(most stays) builds no model."""

from __future__ import annotations

import uuid

from pms.db.locking import for_update, locking_enabled
from pms.db.statements import Statement
from pms.models import DigitalKey
from pms.services.keys.keys import LIVE

_LIVE_IDS = ("SELECT id FROM digital_key WHERE env_id = %(env)s AND reservation_id = "
             "%(reservation)s AND status IN ('INACTIVE', 'ACTIVE') ORDER BY created_at, id")
# PERF (check-out is a hot route): the stay's live keys, locked, by one precompiled statement;
# the models are built only when there are some (most stays have none)
LOCK_LIVE_IDS = Statement.text("keys.lock_live_ids", postgres=_LIVE_IDS + " FOR UPDATE",
                               sqlite=_LIVE_IDS)
READ_LIVE_IDS = Statement.text("keys.read_live_ids", both=_LIVE_IDS)  # TEST-ONLY control runs


def locked_live(reservation_id: uuid.UUID, room_id: uuid.UUID | None = None) -> list[DigitalKey]:
    statement = LOCK_LIVE_IDS if locking_enabled() else READ_LIVE_IDS
    if not statement.rows(reservation=reservation_id):
        return []
    query = DigitalKey.select().where((DigitalKey.reservation == reservation_id)
                                      & DigitalKey.status.in_(LIVE))
    if room_id is not None:
        query = query.where(DigitalKey.room_id == room_id)
    return list(for_update(query.order_by(DigitalKey.created_at, DigitalKey.id)))
