"""The keys' store: a stay's live keys (inactive or active), locked for the caller's unit of
work. The statement asks first whether there are any, so a check-out of a stay without keys
(most stays) builds no model; check-out's locked read (pms.services.frontdesk.stay_reads)
counts and locks them ahead (`live_keys_locked`, the function `pms_lock_live_keys`), and a
count of 0 read ahead answers without a statement."""

from __future__ import annotations

import uuid
from typing import Any

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


def live_keys_locked(stay: str) -> str:
    """The SQL expression that locks the live keys of the stay `stay` (an SQL expression of its
    id) and gives how many, for a caller's larger locked read: VOLATILE, so it reads on a
    snapshot of its own, taken when it runs (after the locks its caller took before it)."""
    return f"pms_lock_live_keys(%(env)s, {stay})"


def read_ahead_key(reservation_id: Any) -> tuple[str, str]:
    """Where a locked read that ran `live_keys_locked` leaves the count in the unit of work."""
    return ("keys.live_locked", str(reservation_id))


def locked_live(reservation_id: uuid.UUID, room_id: uuid.UUID | None = None, *,
                uow: Any = None) -> list[DigitalKey]:
    """The stay's live keys (of `room_id` only, when given), locked, in key order. `uow`: the
    unit of work, whose read-ahead count of 0 (`read_ahead_key`) answers with no statement."""
    if uow is not None and room_id is None and uow.read_ahead.pop(
            read_ahead_key(reservation_id), None) == 0:
        return []
    statement = LOCK_LIVE_IDS if locking_enabled() else READ_LIVE_IDS
    if not statement.rows(reservation=reservation_id):
        return []
    query = DigitalKey.select().where((DigitalKey.reservation == reservation_id)
                                      & DigitalKey.status.in_(LIVE))
    if room_id is not None:
        query = query.where(DigitalKey.room_id == room_id)
    return list(for_update(query.order_by(DigitalKey.created_at, DigitalKey.id)))
