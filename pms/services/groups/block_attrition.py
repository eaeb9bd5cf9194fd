"""A block's pick-up and attrition view: contracted (the grid before washes), current,
picked, percentages, the room revenue of its stays and its wash history (read from the audit
journal, where every wash records the grid before and after). A read, no writes."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.uow import read_scope
from pms.domain.states import ReservationStatus
from pms.models import Reservation
from pms.models.catalog import RatePlan
from pms.models.platform import AuditEntry
from pms.schemas import room_blocks as s
from pms.services.groups.room_block_inventory import _nights_of, load_block

_NOT_STAYING = (ReservationStatus.CANCELLED.value, ReservationStatus.NO_SHOW.value)


def percent(part: int, whole: int) -> Decimal:
    """`part` of `whole` in percent, two places (0 of nothing is 0)."""
    if whole <= 0:
        return Decimal("0.00")
    return (Decimal(part) * 100 / Decimal(whole)).quantize(Decimal("0.01"))


def _washed(snapshot: dict[str, Any] | None) -> int:
    return sum(int(c.get("washed") or 0) for c in (snapshot or {}).get("allocation") or [])


def attrition(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID) -> s.AttritionOut:
    """Raises NotFound (no such block)."""
    with read_scope(ctx):
        block = load_block(property_id, block_id)
        nights = [s.AttritionNightOut(
            room_type_id=n.room_type_id, date=n.date, contracted=n.allotted + n.washed,
            current=n.allotted, picked=n.picked, washed=n.washed, released=n.released,
            pickup_percent=percent(n.picked, n.allotted + n.washed))
            for n in _nights_of(block)]
        stays = (Reservation.select(Reservation.room_total)
                 .where((Reservation.property == property_id)
                        & (Reservation.block_id == block.id)
                        & Reservation.status.not_in(_NOT_STAYING)))
        totals = [Decimal(str(r.room_total)) for r in stays]
        currency = RatePlan.select(RatePlan.currency).where(
            RatePlan.id == block.rate_plan_id).scalar()
        washes = [s.WashOut(at=a.created_at, actor_sub=a.actor_sub,
                            rooms=_washed(a.after) - _washed(a.before), reason=a.reason)
                  for a in AuditEntry.select().where(
                      (AuditEntry.target_id == str(block.id))
                      & (AuditEntry.action == "block.washed"))
                  .order_by(AuditEntry.created_at, AuditEntry.id)]
    contracted = sum(n.contracted for n in nights)
    current = sum(n.current for n in nights)
    picked = sum(n.picked for n in nights)
    return s.AttritionOut(
        block_id=block.id, code=block.code, status=block.status, contracted=contracted,
        current=current, picked=picked, washed=sum(n.washed for n in nights),
        released=sum(n.released for n in nights), pickup_percent=percent(picked, contracted),
        current_pickup_percent=percent(picked, current), currency=currency or "",
        room_revenue=sum(totals, Decimal("0")), reservations=len(totals), by_night=nights,
        washes=washes)
