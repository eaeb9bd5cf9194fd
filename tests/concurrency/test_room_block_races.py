"""room blocks under real concurrency on PostgreSQL.

- picks racing for a block's last room: parallel HTTP requests (gunicorn, 4 workers) pick up
  from a block with one room left: exactly one wins, the others answer 409
  block_allocation_exhausted; the control (row locking off, TEST-ONLY wiring, every pick paused
  after its allocation check) picks up more rooms than the block has;
- a block going DEFINITE while bookings race for the same nights: the rooms sold plus the rooms
  the block holds never exceed the rooms of the type; the control (locks off, paused after the
  checks) sells and holds more rooms than exist;
- cut-off while picks arrive: every pick is either a conversion of a held room (before the cut-
  off) or a sale from the house (after), the stored held rooms equal the recount from the blocks
  and the released rooms are exactly what was unpicked at the cut-off. The control (locks off,
  every pick paused after its allocation check, the cut-off sent while a pick waits there): a
  pick checked before the cut-off converts a room the cut-off already released, taking it out
  of ANOTHER block's held rooms: the house's held count falls below what the blocks hold (it
  would sell that block's room).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from typing import Any

import msgspec
import pytest

from pms import wiring
from pms.db.database import db
from pms.db.uow import read_scope
from pms.errors import Busy, Conflict, RoomTypeUnavailable
from pms.models.inventory import InventoryDay
from pms.models.reservations import Reservation
from pms.schemas import room_blocks as s
from pms.schemas.reservations import ReservationIn
from pms.services.groups import block_changes, pickups, room_block_inventory, room_blocks
from pms.services.reservations import reservations
from tests.concurrency.conftest import fire
from tests.factories import make_hotel

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

START = date(2030, 1, 1)
ARR, DEP = START + timedelta(days=2), START + timedelta(days=4)
NIGHTS = [ARR, ARR + timedelta(days=1)]
CONTROL_PAUSE_S = 0.4


def _block(ctx: Any, h: Any, allotted: int, *, definite: bool = True, code: str = "GRP") -> Any:
    out = room_blocks.create_block(ctx, h.property.id, msgspec.convert({
        "code": code, "name": "Group", "arrival_date": str(ARR), "departure_date": str(DEP),
        "rate_plan_id": str(h.rate_plan.id),
        "allocation": [{"room_type_id": str(h.room_type.id), "date": str(ARR),
                        "to_date": str(DEP - timedelta(days=1)), "allotted": allotted}]},
        s.BlockIn))
    if definite:
        block_changes.transition(ctx, h.property.id, out.id, "definite")
    return out


def _pickup_body(h: Any) -> s.PickupIn:
    return msgspec.convert({"room_type_id": str(h.room_type.id), "arrival_date": str(ARR),
                            "departure_date": str(DEP), "guest": {"last_name": "G"}}, s.PickupIn)


def _threads(n: int, fn: Any) -> list[Any]:
    barrier = threading.Barrier(n, timeout=120)

    def one(i: int) -> Any:
        barrier.wait(timeout=30)
        try:
            return fn(i)
        except (Conflict, Busy) as exc:
            return exc.code
        finally:
            db.close()

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(one, range(n)))


def _inventory(ctx: Any, h: Any) -> list[tuple[int, int]]:
    with read_scope(ctx):
        rows = {r.date: (r.sold, r.held) for r in InventoryDay.select().where(
            (InventoryDay.room_type == h.room_type.id) & InventoryDay.date.in_(NIGHTS))}
    return [rows[n] for n in NIGHTS]


def _live(ctx: Any, h: Any, block_id: Any = None) -> int:
    with read_scope(ctx):
        query = Reservation.select().where((Reservation.property == h.property.id)
                                           & (Reservation.status == "CONFIRMED"))
        if block_id is not None:
            query = query.where(Reservation.block_id == block_id)
        return query.count()


def test_parallel_picks_for_the_last_room_pick_it_once(ctx, pg_db, pms_server):
    h = make_hotel(ctx, rooms=6)
    block = _block(ctx, h, allotted=3)
    for _ in range(2):
        pickups.pick_up(ctx, h.property.id, block.id, _pickup_body(h))
    headers = pms_server.headers(ctx.env_id)
    url = f"{pms_server.base_url}/v1/properties/{h.property.id}/blocks/{block.id}/reservations"
    body = {"room_type_id": str(h.room_type.id), "arrival_date": str(ARR),
            "departure_date": str(DEP), "guest": {"last_name": "Racer"}}

    def send(i: int, session: Any) -> tuple[int, str]:
        resp = session.post(url, json=body, headers=headers, timeout=60)
        return resp.status_code, resp.json().get("code", "")

    results = fire(10, send)
    statuses = Counter(code for code, _ in results)
    assert set(statuses) <= {201, 409, 503}, (results, pms_server.log_tail())
    assert statuses[201] == 1, results
    assert {c for st, c in results if st == 409} <= {"block_allocation_exhausted"}
    assert _live(ctx, h, block.id) == 3
    assert _inventory(ctx, h) == [(3, 0), (3, 0)]  # 3 sold, nothing held: house unchanged


@pytest.mark.parametrize("control", [False, True], ids=["locked", "control-unlocked"])
def test_parallel_picks_never_exceed_the_allocation(ctx, pg_db, control):
    h = make_hotel(ctx, rooms=6)
    block = _block(ctx, h, allotted=1)
    changes: dict[str, Any] = {}
    if control:
        changes = {"locking_enabled": False,
                   "pause_after_check": lambda: time.sleep(CONTROL_PAUSE_S)}
    with wiring.installed(**changes):
        results = _threads(6, lambda i: pickups.pick_up(ctx, h.property.id, block.id,
                                                            _pickup_body(h)))
    won = [r for r in results if not isinstance(r, str)]
    if control:
        assert len(won) > 1, results  # the race the block's row lock closes
        return
    assert len(won) == 1 and set(results) - set(won) == {"block_allocation_exhausted"}
    assert _live(ctx, h, block.id) == 1


@pytest.mark.parametrize("control", [False, True], ids=["locked", "control-unlocked"])
def test_definite_racing_bookings_never_oversells(ctx, pg_db, control):
    h = make_hotel(ctx, rooms=3)
    block = _block(ctx, h, allotted=2, definite=False)
    body = msgspec.convert({"room_type_id": str(h.room_type.id),
                            "rate_plan_id": str(h.rate_plan.id), "arrival_date": str(ARR),
                            "departure_date": str(DEP), "guest": {"last_name": "W"}},
                           ReservationIn)

    def act(i: int) -> Any:
        if i == 0:
            return block_changes.transition(ctx, h.property.id, block.id, "definite")
        try:
            return reservations.create_reservation(ctx, h.property.id, body)
        except RoomTypeUnavailable:
            return "room_type_unavailable"

    changes: dict[str, Any] = {}
    if control:
        changes = {"locking_enabled": False,
                   "pause_after_check": lambda: time.sleep(CONTROL_PAUSE_S)}
    with wiring.installed(**changes):
        results = _threads(5, act)
    definite = not isinstance(results[0], str)
    booked = sum(1 for r in results[1:] if not isinstance(r, str))
    held = 2 if definite else 0
    if control:
        assert booked + held > 3, results  # more rooms promised than exist
        return
    assert booked + held <= 3, results
    assert _inventory(ctx, h) == [(booked, held)] * 2
    if not definite:
        assert results[0] == "room_type_unavailable", results


def test_cut_off_while_picks_arrive_keeps_every_count(ctx, pg_db):
    for round_ in range(3):
        h = make_hotel(ctx, rooms=8)
        block = _block(ctx, h, allotted=4, code=f"C{round_}")

        def act(i: int, h=h, block=block) -> Any:
            if i == 0:
                return block_changes.cut_off(ctx, h.property.id, block.id)
            return pickups.pick_up(ctx, h.property.id, block.id, _pickup_body(h))

        results = _threads(6, act)
        assert not isinstance(results[0], str), results
        picks = sum(1 for r in results[1:] if not isinstance(r, str))
        assert picks <= 4 and set(r for r in results[1:] if isinstance(r, str)) <= {
            "block_allocation_exhausted"}, results
        out = room_blocks.get_block(ctx, h.property.id, block.id)
        assert out.picked == picks * 2  # two nights per pick
        released = sum(n.released for n in out.allocation)
        # every room of the allocation is either picked before the cut-off or released at it,
        # and a pick after the cut-off sold a house room
        assert released + out.picked >= 8 and released <= 8
        assert _inventory(ctx, h) == [(picks, 0)] * 2
        with read_scope(ctx):
            ref = room_block_inventory.held_counts(h.property.id, [h.room_type.id], ARR, DEP)
        assert all(v == 0 for v in ref.values())


@pytest.mark.parametrize("control", [False, True], ids=["locked", "control-unlocked"])
def test_cut_off_racing_a_pick_in_its_window_keeps_other_blocks_held(ctx, pg_db, control):
    """The cut-off is sent while a pick waits between its allocation check and its conversion
    (a TEST-ONLY pause). Locked, the cut-off waits for the pick (the block's row lock) and
    every count holds; unlocked (the control), the pick converts a room the cut-off released
    and takes it from the other block's held rooms."""
    h = make_hotel(ctx, rooms=8)
    block = _block(ctx, h, allotted=4, code="CUT")
    _block(ctx, h, allotted=2, code="OTHER")  # holds 2 rooms the whole time
    in_window = threading.Event()

    def pause() -> None:
        in_window.set()
        time.sleep(CONTROL_PAUSE_S)

    def act(i: int) -> Any:
        if i == 0:
            assert in_window.wait(timeout=30)
            return block_changes.cut_off(ctx, h.property.id, block.id)
        return pickups.pick_up(ctx, h.property.id, block.id, _pickup_body(h))

    changes: dict[str, Any] = {"pause_after_check": pause}
    if control:
        changes["locking_enabled"] = False
    with wiring.installed(**changes):
        results = _threads(3, act)
    assert not any(isinstance(r, str) for r in results), results
    with read_scope(ctx):
        ref = room_block_inventory.held_counts(h.property.id, [h.room_type.id], ARR, DEP)
    stored_held = [held for _, held in _inventory(ctx, h)]
    if control:
        assert stored_held != [ref[(h.room_type.id, n)] for n in NIGHTS], (stored_held, ref)
        assert min(stored_held) < 2  # the other block's rooms are no longer held
        return
    assert stored_held == [ref[(h.room_type.id, n)] for n in NIGHTS] == [2, 2]
    assert _inventory(ctx, h) == [(2, 2)] * 2
    out = room_blocks.get_block(ctx, h.property.id, block.id)
    # the pick in the window converted a held room before the cut-off (which waited for it);
    # the rest of the allocation was released, and nothing both picked and released
    assert out.picked == 4
    assert all(1 <= n.allotted - n.released <= n.picked for n in out.allocation), out
