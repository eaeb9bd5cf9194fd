"""Check-in's writes (SPEC rule 5: an occupied room has an OPEN folio) at database speed write
what their reference writes, on PostgreSQL, on randomized stays.

`pms.services.frontdesk.desk_writes.occupy_room.postgres` (`occupy`: the stay's holds released, the
room occupied and held [start, departure), the guest folio opened or given the room number, all
queued with the COMMIT, an overlap refused by the exclusion constraint where the batch is sent)
against `occupy_room.reference` (the same through the models: `room.save`,
`release_room_holds`, `hold_room`, `open_folio`). Each case builds the same state
from its own seed, inside a unit of work rolled back after reading: holds of this and other
stays on every room (touching, overlapping or clear of the nights), the stay's folios (none, an
OPEN guest folio with no, this or another room number, a CLOSED one, a CLOSED and an OPEN one,
an OPEN folio of another type) and another stay's OPEN guest folio. Both must give the same
answer (done, or RoomUnavailable when another stay holds the room, the unit of work rolled
back) and, when done, leave the same rows:
every room's status and mark, every hold, every folio (rows made by the write named "new"),
with the routing a room block member's new folio opens with (stays outside a block, in blocks
routing nothing, room and tax, or packages too, and in one whose master folio is settled).
The seeds are fixed, so a failure is reproducible; each assertion names its case.
"""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from typing import Any

import pytest

from pms.db.uow import unit_of_work
from pms.errors import RoomUnavailable
from pms.models import Folio, Reservation, Room
from pms.models.reservations import RoomStay
from pms.services.frontdesk import desk_writes
from tests.factories import make_booking_hotel, make_reservation

pytestmark = [pytest.mark.postgres]

FOLIO_SETUPS = ["none", "open", "open here", "open elsewhere", "closed", "closed and open",
                "other type"]


class _Undo(Exception):
    """Raised to roll a unit of work back after reading what it wrote."""


def _id(rnd: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rnd.getrandbits(128), version=4)


def _build(rnd: random.Random, hotel: Any, stays: list[Any], subject: Any, room: Any) -> str:
    """The case's holds and folios (ids from the seed, so both runs make the same rows)."""
    for each in hotel.rooms:
        day = hotel.today + timedelta(days=rnd.randrange(-3, 3))
        for _ in range(rnd.randrange(3)):
            end = day + timedelta(days=rnd.randrange(1, 4))
            RoomStay.create(id=_id(rnd), reservation=rnd.choice(stays).id,
                            property=hotel.id, room=each.id, start_date=day, end_date=end)
            day = end + timedelta(days=rnd.randrange(0, 3))
    setup = rnd.choice(FOLIO_SETUPS)

    def folio(status: str, number: str | None, kind: str = "GUEST", stay: Any = subject) -> None:
        Folio.create(id=_id(rnd), reservation=stay.id, property=hotel.id, room_number=number,
                     status=status, folio_type=kind, currency=stay.currency, version=3)

    if setup == "open":
        folio("OPEN", None)
    elif setup == "open here":
        folio("OPEN", room.room_number)
    elif setup == "open elsewhere":
        folio("OPEN", "999")
    elif setup == "closed":
        folio("CLOSED", room.room_number)
    elif setup == "closed and open":
        folio("CLOSED", "998")
        folio("OPEN", "997")
    elif setup == "other type":
        folio("OPEN", None, kind="COMPANY")
    other = rnd.choice([s for s in stays if s.id != subject.id])
    folio("OPEN", "996", stay=other)
    return setup


def _rows(known: set[uuid.UUID], hotel: Any) -> dict[str, Any]:
    def named(row_id: uuid.UUID) -> Any:
        return row_id if row_id in known else "new"

    rooms = sorted((r.id, r.status, r.hk_status) for r in
                   Room.select().where(Room.property == hotel.id))
    holds = sorted((str(named(h.id)), h.reservation_id, h.room_id, h.start_date, h.end_date)
                   for h in RoomStay.select().where(RoomStay.property == hotel.id))
    folios = sorted((str(named(f.id)), f.reservation_id, f.status, f.folio_type, f.room_number,
                     f.currency, f.version, f.routing, f.routing_folio_id) for f in
                    Folio.select().where((Folio.property == hotel.id)
                                         & Folio.reservation.is_null(False)))
    return {"rooms": rooms, "holds": holds, "folios": folios}


def _known() -> set[uuid.UUID]:
    return ({h.id for h in RoomStay.select(RoomStay.id)}
            | {f.id for f in Folio.select(Folio.id)})


ROUTINGS = [None, ("NONE", "OPEN"), ("ROOM_AND_TAX", "OPEN"),
            ("ROOM_TAX_AND_PACKAGES", "OPEN"), ("ROOM_AND_TAX", "CLOSED")]


def _members(ctx: Any, hotel: Any, stays: list[Any]) -> None:
    """Each stay but the first in a room block of its own, routing as ROUTINGS says."""
    from pms.models import RoomBlock
    from pms.services.cashiering.master_folios import open_master_folio

    with unit_of_work(ctx):
        for i, (stay, routing) in enumerate(zip(stays, ROUTINGS, strict=True)):
            if routing is None:
                continue
            block = RoomBlock.create(property=hotel.id, code=f"EQ{i}", name="Group",
                                     arrival_date=hotel.today, departure_date=hotel.today,
                                     cutoff_date=hotel.today, rate_plan_id=stay.rate_plan_id,
                                     status="DEFINITE", master_folio_routing=routing[0])
            master = open_master_folio(block)
            master.status = routing[1]
            master.save()
            Reservation.update(block_id=block.id).where(Reservation.id == stay.id).execute()


def test_the_checkin_writes_write_what_the_models_write(ctx, pg_db):
    hotel = make_booking_hotel(ctx, rooms=len(ROUTINGS))
    stays = [make_reservation(ctx, hotel) for _ in range(len(ROUTINGS))]
    _members(ctx, hotel, stays)
    seen = {"done": 0, "refused": 0, "folio opened": 0, "number given": 0, "routed": 0}
    setups: set[str] = set()
    for case in range(90):
        outcomes = []
        for write in (desk_writes.occupy_room.postgres, desk_writes.occupy_room.reference):
            rnd = random.Random(4900 + case)
            subject, room = rnd.choice(stays), rnd.choice(hotel.rooms)
            start = hotel.today + timedelta(days=rnd.randrange(0, 4))
            end = start + timedelta(days=rnd.randrange(1, 5))
            try:
                with unit_of_work(ctx) as uow:
                    setup = _build(rnd, hotel, stays, subject, room)
                    known = _known()
                    row = Reservation.get_by_id(subject.id)
                    row.departure_date = end
                    picked = Room.get_by_id(room.id)
                    picked.status = "OCCUPIED"
                    write(uow, row, picked, start)
                    uow.flush(commit=False)  # the queued writes sent (where the fast path refuses)
                    outcomes.append(("done", _rows(known, hotel)))
                    raise _Undo
            except _Undo:
                pass
            except RoomUnavailable:  # the unit of work rolled back: nothing written
                outcomes.append(("refused", None))
        fast, reference = outcomes
        assert fast == reference, f"case {case} ({setup}): {subject.id} in {room.room_number}" \
                                  f" from {start} to {end}"
        answer, rows = fast
        seen[answer] += 1
        setups.add(setup)
        if answer == "done":
            open_guest = [f for f in rows["folios"] if f[1] == subject.id and f[2] == "OPEN"
                          and f[3] == "GUEST"]
            assert [f[4] for f in open_guest] == [room.room_number], f"case {case}"  # rule 5
            seen["folio opened" if open_guest[0][0] == "new" else "number given"] += 1
            seen["routed"] += open_guest[0][0] == "new" and open_guest[0][7] is not None
    # the control: the data exercises both answers, a folio opened and one given the number,
    # and every folio setup
    assert seen["done"] > 30 and seen["refused"] > 10, seen
    assert seen["folio opened"] > 10 and seen["number given"] > 5, seen
    assert seen["routed"] > 3, seen  # new folios of block members opened routed
    assert setups == set(FOLIO_SETUPS)


def _check_in_past_its_check(ctx: Any, monkeypatch: Any) -> tuple[Any, Any, Any]:
    """A stay checked into a room another stay holds on its nights, the service's check of the
    room skipped (as if a writer had taken the hold without the room's lock): only the
    exclusion constraint stands in the way. Returns (hotel, the stay, the room)."""
    import msgspec

    from pms.schemas.reservations import CheckInIn
    from pms.services.frontdesk import checkin

    hotel = make_booking_hotel(ctx, rooms=2)
    holder, guest = make_reservation(ctx, hotel), make_reservation(ctx, hotel)
    room = hotel.rooms[0]
    with unit_of_work(ctx):
        RoomStay.create(reservation=holder.id, property=hotel.id, room=room.id,
                        start_date=hotel.today, end_date=holder.departure_date)
    monkeypatch.setattr(checkin, "check_room", lambda *args, **kwargs: None)
    body = msgspec.convert({"room_number": room.room_number}, CheckInIn)
    return hotel, guest, (room, lambda: checkin.check_in(ctx, hotel.id, guest.id, body))


def test_a_queued_hold_that_overlaps_is_a_409_and_writes_nothing(ctx, pg_db, monkeypatch):
    hotel, guest, (room, check_in) = _check_in_past_its_check(ctx, monkeypatch)
    with pytest.raises(RoomUnavailable, match="held by another stay"):
        check_in()
    from pms.db.uow import read_scope

    with read_scope(ctx):
        assert Reservation.get_by_id(guest.id).status == "CONFIRMED"
        assert Room.get_by_id(room.id).status == "VACANT"
        assert not RoomStay.select().where(RoomStay.reservation == guest.id).exists()
        assert not Folio.select().where(Folio.reservation == guest.id).exists()


def test_the_control_an_undeclared_constraint_stays_a_database_error(ctx, pg_db, monkeypatch):
    import peewee

    hotel, guest, (room, check_in) = _check_in_past_its_check(ctx, monkeypatch)
    monkeypatch.setattr(desk_writes, "NO_OVERLAP", "not_this_constraint")
    with pytest.raises(peewee.IntegrityError):
        check_in()
