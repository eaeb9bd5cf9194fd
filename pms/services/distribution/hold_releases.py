"""Channel holds released by the clock, announced on the bus.

An allotment with `release_days` holds its plan's unsold rooms until N days before the night,
judged against the property's business date (`pms.domain.availability.channel_hold`). Where the
night audit moves that date, the audit's date roll announces the nights it releases
(`pms.services.inventory.allotments.touch_released`). A property that runs no night audit has
no stored business date: its day is its local calendar date, so its holds go back to the house
at local midnight with no request to carry the news. The `allotments.releases` schedule
(pms.scheduling) does: for each such property, every room type whose holds some day since the
last announcement released gets its ARI event (`hotel:pms:ari:updated`, with the house's
sellable and what each channel may still sell), once per day, through the room type's stream
(`ari_stream.released_through`, moved under the stream's row lock in the same transaction as
the event, so two ticks never announce one day twice).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import date, timedelta
from typing import Any

from pms.clock import local_today
from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.uow import read_scope, unit_of_work
from pms.models.ari import AriStream
from pms.models.property import Property
from pms.models.rates import RatePlanAllotment
from pms.services.distribution import ari_events


def _as_date(value: Any) -> date:
    return date.fromisoformat(value) if isinstance(value, str) else value


def _as_uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def clock_properties(ctx: Ctx) -> list[tuple[uuid.UUID, str]]:
    """(id, timezone) of the env's properties whose day follows the clock and that hold rooms
    for a channel with a release period."""
    with read_scope(ctx):
        holding = (RatePlanAllotment.select(RatePlanAllotment.property)
                   .where(RatePlanAllotment.release_days.is_null(False)))
        rows = (Property.select(Property.id, Property.timezone)
                .where(Property.business_date.is_null() & Property.id.in_(holding))
                .order_by(Property.id).tuples())
        return [(_as_uuid(pid), tz) for pid, tz in rows]


def _announced(ctx: Ctx, property_id: uuid.UUID, today: date) -> bool:
    """Whether every room type holding rooms for a channel on `property_id` has announced its
    releases through `today` already: one unlocked read, so the ticks after the first of a day
    take no stream's lock (a stale answer only sends the tick on to the locked check)."""
    with read_scope(ctx):
        done = AriStream.select(AriStream.id).where(AriStream.released_through >= today)
        return not (RatePlanAllotment.select(RatePlanAllotment.id)
                    .where((RatePlanAllotment.property == property_id)
                           & RatePlanAllotment.release_days.is_null(False)
                           & (RatePlanAllotment.date >= today)
                           & RatePlanAllotment.room_type.not_in(done))
                    .exists())


def announce_releases(ctx: Ctx, property_id: uuid.UUID, today: date) -> int:
    """Announce the holds of `property_id` released since each room type's last announcement,
    through `today` (the property's local date): one unit of work, the room types' streams
    locked in id order first. Returns the nights announced."""
    if _announced(ctx, property_id, today):
        return 0
    with unit_of_work(ctx):
        rows = list(RatePlanAllotment.select(RatePlanAllotment.room_type, RatePlanAllotment.date,
                                             RatePlanAllotment.release_days)
                    .where((RatePlanAllotment.property == property_id)
                           & RatePlanAllotment.release_days.is_null(False)
                           & (RatePlanAllotment.date >= today)).tuples())
        by_type: dict[uuid.UUID, list[tuple[date, int]]] = defaultdict(list)
        for room_type, night, release in rows:
            by_type[_as_uuid(room_type)].append((_as_date(night), max(int(release), 0)))
        if not by_type:
            return 0
        streams = {_as_uuid(s.id): s for s in for_update(
            AriStream.select().where(AriStream.id.in_(list(by_type))).order_by(AriStream.id))}
        announced = 0
        for room_type in sorted(by_type, key=str):
            stream = streams.get(room_type)
            through = stream.released_through if stream is not None else None
            after = _as_date(through) if through is not None else today - timedelta(days=1)
            if after >= today:
                continue
            nights = sorted({night for night, release in by_type[room_type]
                             if after < night - timedelta(days=release) <= today})
            if nights:
                ari_events.touch(property_id, room_type, nights, allotments=True)
                announced += len(nights)
            if stream is not None:
                (AriStream.update({AriStream.released_through: today})
                 .where(AriStream.id == room_type).execute())
            else:  # no event yet: the stream starts here (its first event, if any, follows)
                now = ctx.now
                (AriStream.insert(id=room_type, property=property_id, version=0,
                                  released_through=today, created_at=now, updated_at=now)
                 .on_conflict(conflict_target=AriStream.key_target(),
                              update={AriStream.released_through: today}).execute())
        return announced


def announce_clock_releases(ctx: Ctx) -> dict[str, int]:
    """The schedule's tick for one env: every clock-driven property's releases up to its local
    date now."""
    properties = clock_properties(ctx)
    nights = 0
    for property_id, tz in properties:
        nights += announce_releases(ctx, property_id, local_today(ctx.now, tz))
    return {"properties": len(properties), "nights_released": nights}
