"""A stay's hooks on its digital keys, inside the caller's unit of work (the reservation row is
locked): check-out and the revert of a check-in revoke every live key, a room move re-keys as a
tracked pair, a departure edit of an in-house stay moves valid_until. Each change records its
lock command and event (`pms.services.keys.keys.record_change`); `revocation` on a revoked key
says by when the door stops opening at the latest: the key's own valid_until until the lock
confirms the revocation (`pms.services.keys.lock_sync`), then the confirmation time.
"""

from __future__ import annotations

import uuid
from typing import Any

from pms.db.uow import UnitOfWork
from pms.domain.states import DIGITAL_KEY_MACHINE
from pms.models import DigitalKey, Reservation
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property
from pms.services.keys import key_store
from pms.services.keys.keys import (
    key_out,
    new_key,
    queue_lock_command,
    record_change,
    valid_until_for,
)


def _revoke(uow: UnitOfWork, row: DigitalKey, reason: str) -> None:
    now = uow.ctx.now
    before = to_data(key_out(row, now))
    row.status = DIGITAL_KEY_MACHINE.transition(row.status, "revoke").value
    row.revoked_at = now
    row.revoke_reason = reason
    # until the lock itself confirms, the old key may open the door up to its own end
    row.revocation_effective_by = max(now, row.valid_until)
    queue_lock_command(row)
    row.save()
    record_change(uow, row, "revoked", before=before, reason=reason)


def revoke_stay_keys(uow: UnitOfWork, reservation: Reservation, reason: str = "check_out"
                     ) -> list[DigitalKey]:
    """Revoke every live key of the stay (ACTIVE and INACTIVE: none can be re-activated), in
    the caller's transaction. The check-out hook (pms.services.frontdesk.checkout.CHECK_OUT_HOOKS)."""
    keys = key_store.locked_live(reservation.id, uow=uow)
    for row in keys:
        _revoke(uow, row, reason)
    return keys


def check_out_hook(uow: UnitOfWork, reservation: Reservation) -> None:
    revoke_stay_keys(uow, reservation, "check_out")


def move_keys(uow: UnitOfWork, reservation: Reservation, old_room_id: uuid.UUID | None,
              new_room: Any) -> list[tuple[DigitalKey, DigitalKey]]:
    """A room move: each live key of the old room is revoked and a key of the same type is
    issued (INACTIVE) for the new room, the two sharing a `pair_id` (the new one names the key
    it replaces). Returns the (old, new) pairs."""
    if old_room_id is None:
        return []
    pairs = []
    for old in key_store.locked_live(reservation.id, old_room_id):
        _revoke(uow, old, "room_move")
        pair_id = old.pair_id or uuid.uuid4()
        old.pair_id = pair_id
        old.save()
        new = new_key(uow.ctx, reservation, new_room.id, new_room.room_number, old.key_type,
                       old.valid_until, pair_id=pair_id, replaces=old.id,
                       holder=old.holder_profile_id)
        record_change(uow, new, "issued", before=None, reason="room_move")
        pairs.append((old, new))
    return pairs


def move_validity(uow: UnitOfWork, reservation: Reservation) -> list[DigitalKey]:
    """A departure edit of an in-house stay: its live keys end at the new departure's
    check-out time (a lock command each). A key already past its valid_until is EXPIRED
    whether or not the sweeper has written it, and stays so: an extension never revives it
    (the stay gets a new key instead)."""
    moved: list[DigitalKey] = []
    now = uow.ctx.now
    live = [k for k in key_store.locked_live(reservation.id) if k.valid_until > now]
    if not live:
        return moved
    until = valid_until_for(load_property(reservation.property_id), reservation.departure_date,
                            reservation.departure_time)
    for row in live:
        if row.valid_until == until:
            continue
        before = to_data(key_out(row, uow.ctx.now))
        row.status = DIGITAL_KEY_MACHINE.transition(row.status, "extend").value
        row.valid_until = until
        queue_lock_command(row)
        row.save()
        record_change(uow, row, "validity_changed", before=before)
        moved.append(row)
    return moved


__all__ = ["check_out_hook", "move_keys", "move_validity", "revoke_stay_keys"]
