"""Every lifecycle's states and its transition table. A status value only ever comes from
`<MACHINE>.transition()`; code review rejects status assignments from literals.

Each table is data: (from, trigger) -> to. Add new lifecycles below, one block each.
"""

from __future__ import annotations

from enum import StrEnum

from pms.domain.machine import Machine


class RoomStatus(StrEnum):
    VACANT = "VACANT"
    OCCUPIED = "OCCUPIED"


ROOM_MACHINE = Machine(RoomStatus, {
    (RoomStatus.VACANT, "occupy"): RoomStatus.OCCUPIED,
    (RoomStatus.OCCUPIED, "vacate"): RoomStatus.VACANT,
})
