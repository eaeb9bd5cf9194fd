"""A block cancelled with its pick-ups and a guest cancelling one of them, at the same time, on
PostgreSQL: both take the reservation rows before the block row, so they never deadlock.

The guest's side is played by the test's own transaction, step by step: it locks one picked-up
reservation (as a guest's cancel does first), waits until the block's cancel is queued behind
that row, then takes the block row (as the guest's cancel does next). The block's cancel holds
no block lock while it waits for the reservations, so the guest's lock is granted; with the
block row taken first (the order this replaced) the two would wait on each other."""

from __future__ import annotations

import threading
import time
from datetime import date, timedelta
from typing import Any

import msgspec
import pytest

from pms.db.database import db
from pms.db.locking import for_update
from pms.db.scope import tenant_scope
from pms.db.uow import read_scope
from pms.models.reservations import Reservation
from pms.models.room_blocks import RoomBlock
from pms.schemas import room_blocks as s
from pms.services.groups import block_changes, pickups, room_blocks
from tests.factories import make_hotel

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ARR = date(2030, 1, 3)
DEP = ARR + timedelta(days=2)


def _waiting_on_us() -> int:
    """Lock requests of other sessions that wait on this session's locks."""
    return db.execute_sql("SELECT count(*) FROM pg_locks WHERE NOT granted "
                          "AND pg_backend_pid() = ANY(pg_blocking_pids(pid))").fetchone()[0]


def test_a_block_cancel_and_a_guest_cancel_take_locks_in_one_order(ctx, pg_db):
    h = make_hotel(ctx, rooms=4)
    block = room_blocks.create_block(ctx, h.property.id, msgspec.convert({
        "code": "LOCKS", "name": "Locks", "arrival_date": str(ARR), "departure_date": str(DEP),
        "rate_plan_id": str(h.rate_plan.id),
        "allocation": [{"room_type_id": str(h.room_type.id), "date": str(ARR),
                        "to_date": str(ARR + timedelta(days=1)), "allotted": 3}]}, s.BlockIn))
    block_changes.transition(ctx, h.property.id, block.id, "definite")
    body = msgspec.convert({"room_type_id": str(h.room_type.id), "arrival_date": str(ARR),
                            "departure_date": str(DEP), "guest": {"last_name": "G"}},
                           s.PickupIn)
    ids = sorted(pickups.pick_up(ctx, h.property.id, block.id, body).id for _ in range(2))
    guest_row = ids[1]  # the block's cancel locks ids[0] first, then waits for this one
    outcome: dict[str, Any] = {}

    def cancel_block() -> None:
        try:
            outcome["result"] = block_changes.transition(ctx, h.property.id, block.id, "cancel",
                                                       cancel_picked=True)
        except Exception as exc:  # noqa: BLE001 - reported below
            outcome["error"] = exc
        finally:
            db.close()

    worker = threading.Thread(target=cancel_block)
    with tenant_scope(ctx.env_id), db.atomic():
        list(for_update(Reservation.select(Reservation.id).where(Reservation.id == guest_row)))
        worker.start()
        deadline = time.monotonic() + 30
        while not _waiting_on_us():  # the block's cancel queues behind our row
            assert worker.is_alive() and time.monotonic() < deadline, outcome
            time.sleep(0.01)
        # the guest's next lock: the block row (granted: the block's cancel does not hold it)
        db.execute_sql("SET LOCAL lock_timeout = '3s'")
        list(for_update(RoomBlock.select(RoomBlock.id).where(RoomBlock.id == block.id)))
    worker.join(timeout=60)
    assert "error" not in outcome, outcome
    assert outcome["result"].block.status == "CANCELLED"
    with read_scope(ctx):
        statuses = {r.status for r in Reservation.select().where(Reservation.id.in_(ids))}
    assert statuses == {"CANCELLED"}
