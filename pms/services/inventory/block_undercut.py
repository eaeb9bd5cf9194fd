"""The blocks a capacity cut undercuts: a sell limit or an out-of-order period that leaves a
night with more rooms sold and held by blocks than the capacity (min(physical - OOO - OOS,
sell limit)). The cut is accepted (the house may protect itself, a room may break), and its
answer names the blocks holding rooms on those nights, so revenue and sales see whom it hits.
A block's own picked-up guests can still cancel: a block taking its contracted room back is
never re-checked against house availability (`pms.services.groups.room_block_inventory`)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping
from datetime import date

from pms.domain.availability import NightCount
from pms.domain.states import BlockStatus
from pms.models.room_blocks import RoomBlock, RoomBlockNight
from pms.schemas.inventory import AffectedBlockOut

_HOLDING = [BlockStatus.TENTATIVE.value, BlockStatus.DEFINITE.value, BlockStatus.ACTUAL.value]


def undercut_blocks(property_id: uuid.UUID, counts: Mapping[tuple[uuid.UUID, date], NightCount]
                    ) -> list[AffectedBlockOut]:
    """The blocks holding rooms on the nights of `counts` (recounted after the change, under
    the night locks) where sold + held exceeds the capacity, each with those nights."""
    short: dict[uuid.UUID, list[date]] = defaultdict(list)
    for (room_type_id, day), c in counts.items():
        if c.held > 0 and c.sold + c.held > c.capacity:
            short[room_type_id].append(day)
    found: dict[uuid.UUID, tuple[RoomBlock, set[date]]] = {}
    for room_type_id, days in short.items():
        query = (RoomBlockNight.select(RoomBlockNight, RoomBlock)
                 .join(RoomBlock, on=(RoomBlockNight.block == RoomBlock.id))
                 .where((RoomBlock.property == property_id) & RoomBlock.deducts
                        & RoomBlock.cut_off_at.is_null() & RoomBlock.status.in_(_HOLDING)
                        & (RoomBlockNight.room_type_id == room_type_id)
                        & RoomBlockNight.date.in_(days)
                        & (RoomBlockNight.allotted > RoomBlockNight.picked)))
        for night in query:
            entry = found.setdefault(night.block.id, (night.block, set()))
            entry[1].add(night.date)
    return [AffectedBlockOut(block_id=b.id, code=b.code, name=b.name, status=b.status,
                             nights=sorted(days))
            for b, days in sorted(found.values(), key=lambda e: (e[0].code, str(e[0].id)))]
