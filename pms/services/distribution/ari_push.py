"""ARI that heals: the digest per room type and month, and the re-push as a job.

A channel that suspects drift asks for `digest` (one hash per room type and calendar month),
compares it with the hash of what it holds, and asks for a re-push of only the months that
differ (`start_push` with `months`); a channel that lost its state asks for the full push (365
days from the property's business date). A push is a job (`pms.services.jobs.start_ari_push`
queues it, `run_job` runs `run_push`): per room type one unit of work whose events
(`hotel:pms:ari:updated`, one per month, `full: true`) carry every night's sellable, every rate
plan's amount, restrictions and allotments.

The digest and the push cover the same nights: never one before the business date (a channel
is never told of a past night), and by default the 365 nights of the full push, so a channel
fresh from a full push finds every month equal, the first and last (partial) ones included.

Canonical form of a month (docs/guides/distribution.md gives it to consumers): one line per night hashed, in
date order, `YYYY-MM-DD|<sellable>|<rates>|<allotments>|<restrictions>`, trailing empty parts
left out (a night with neither allotments nor restrictions has three parts).
- rates: `<rate_plan_id>=<amount>` of the plans that have an amount that night, sorted by
  their id (lower-case UUID text), amounts in canonical text
  (`pms.services.distribution.ari_events.amount_text`: "120.00" is "120", "99.50" is "99.5");
- allotments: `<rate_plan_id>=<rooms left>` of the plans with an allotment that night;
- restrictions: `<rate_plan_id>=<closed>:<closed_to_arrival>:<closed_to_departure>:
  <min_stay_arrival>:<max_stay_arrival>:<min_stay_through>:<max_stay_through>` (flags 1 or 0,
  a missing number empty) of the plans whose restrictions that night are not all open (every
  flag false, every number null).
Entries of a part are joined by ",", lines by "\\n" (none after the last); the hash is the
lower-case hex SHA-256 of that text in UTF-8.

`prices_hash`, beside it (the `hash` above is left as it was, for the channels that compute
it): the same SHA-256 over the canonical form of the month's prices per occupancy, one line per
night `YYYY-MM-DD|<rate_plan_id>/<occupancy>=<amount>,...` (plans sorted by id, occupancies
ascending; `YYYY-MM-DD|` for a night without prices), then one line per plan those nights price,
sorted by id, `<rate_plan_id>|<occupancy>=<per_stay>,...|<code>:<calculation>:<price>:<currency>,...`
(its `per_stay` and its `packages` in their order, as the events' `rate_plans` name them).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from collections.abc import Iterable
from typing import Any

from pms.clock import local_today
from pms.context import Ctx
from pms.db.uow import read_scope, unit_of_work
from pms.domain.availability import month_days, months_between, next_month
from pms.domain.pricing import OPEN
from pms.errors import NotFound, ValidationFailed
from pms.models.property import Property, RoomType
from pms.services.distribution import ari_events

ARI_PUSH = "ari_push"
FULL_PUSH_DAYS = 365
MAX_MONTHS = 18  # a digest or a push covers at most 18 months (channels certify 365-500 days)


def month_of(text: str, field: str) -> dt.date:
    """A "YYYY-MM" month as its first day (422 otherwise)."""
    try:
        year, month = text.split("-")
        if len(year) != 4 or len(month) != 2:
            raise ValueError(text)
        return dt.date(int(year), int(month), 1)
    except ValueError as exc:
        raise ValidationFailed(f"{field} must be a month as YYYY-MM",
                               errors=[{"field": field, "message": "not a YYYY-MM month"}]
                               ) from exc


_OPEN = ari_events.rule_data(OPEN)


def _restriction_text(rule: dict[str, Any]) -> str:
    return ":".join(("1" if rule[k] else "0") if isinstance(_OPEN[k], bool)
                    else ("" if rule[k] is None else str(rule[k])) for k in _OPEN)


def canonical(nights: Iterable[dict[str, Any]]) -> str:
    """The canonical text of a month's nights as an ARI consumer holds them (see above)."""
    lines = []
    for night in nights:
        parts = [night["date"], str(night["sellable"]),
                 ",".join(f"{plan}={amount}" for plan, amount in sorted(night["rates"].items())),
                 ",".join(f"{plan}={n}"
                          for plan, n in sorted((night.get("allotments") or {}).items())),
                 ",".join(f"{plan}={_restriction_text(rule)}"
                          for plan, rule in sorted((night.get("restrictions") or {}).items())
                          if rule != _OPEN)]
        while len(parts) > 3 and not parts[-1]:
            parts.pop()
        lines.append("|".join(parts))
    return "\n".join(lines)


def month_label(month: dt.date) -> str:
    """A month as the digest names it, "YYYY-MM" with the year in four digits (the C library's
    %Y leaves a year below 1000 unpadded)."""
    return f"{month.year:04d}-{month.month:02d}"


def digest_hash(nights: Iterable[dict[str, Any]]) -> str:
    return hashlib.sha256(canonical(nights).encode()).hexdigest()


def canonical_prices(nights: Iterable[dict[str, Any]], rate_plans: dict[str, Any]) -> str:
    """The canonical text of a month's prices per occupancy and its plans' stay parts (above)."""
    lines, priced = [], set()
    for night in nights:
        entries = []
        for plan, per in sorted((night.get("prices") or {}).items()):
            priced.add(plan)
            entries += [f"{plan}/{n}={amount}"
                        for n, amount in sorted(per.items(), key=lambda kv: int(kv[0]))]
        lines.append(f"{night['date']}|{','.join(entries)}")
    for plan in sorted(priced):
        meta = rate_plans.get(plan) or {}
        stay = ",".join(f"{n}={amount}" for n, amount in
                        sorted((meta.get("per_stay") or {}).items(), key=lambda kv: int(kv[0])))
        packages = ",".join(f"{p['code']}:{p['calculation']}:{p['price']}:{p['currency']}"
                            for p in meta.get("packages") or [])
        lines.append(f"{plan}|{stay}|{packages}")
    return "\n".join(lines)


def prices_hash(nights: list[dict[str, Any]], rate_plans: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_prices(nights, rate_plans).encode()).hexdigest()


def _property(property_id: uuid.UUID) -> Property:
    prop = Property.get_or_none(Property.id == property_id)
    if prop is None:
        raise NotFound("no such property")
    return prop


def _room_types(property_id: uuid.UUID) -> list[uuid.UUID]:
    return sorted((rt for (rt,) in RoomType.select(RoomType.id)
                   .where(RoomType.property == property_id).tuples()), key=str)


def _check_months(months: list[dt.date], field: str) -> None:
    if not months:
        raise ValidationFailed(f"{field}: no month",
                               errors=[{"field": field, "message": "no month"}])
    if len(months) > MAX_MONTHS:
        raise ValidationFailed(f"at most {MAX_MONTHS} months at once",
                               errors=[{"field": field,
                                        "message": f"at most {MAX_MONTHS} months"}])


def first_night(prop: Property, now: dt.datetime) -> dt.date:
    """The first night a channel is told of: the property's business date."""
    return prop.business_date or local_today(now, prop.timezone)


def digest(ctx: Ctx, property_id: uuid.UUID, first: str | None,
           last: str | None) -> dict[str, Any]:
    """One hash per room type and month of first..last ("YYYY-MM", both included), over the
    month's nights from the business date on; by default the full push's 365 nights. A month
    with no such night is left out.

    Raises: NotFound (property), ValidationFailed (bad months, over 18, last before first).
    """
    with read_scope(ctx):
        prop = _property(property_id)
        today = first_night(prop, ctx.now)
        start = month_of(first, "from") if first else today.replace(day=1)
        if last:
            end = month_of(last, "to")
            last_night = next_month(end) - dt.timedelta(days=1)
        elif first:
            end = start
            for _ in range(11):
                end = next_month(end)
            last_night = next_month(end) - dt.timedelta(days=1)
        else:
            last_night = push_days(prop, None, ctx.now)[-1]
            end = last_night.replace(day=1)
        if end < start:
            raise ValidationFailed("to is before from",
                                   errors=[{"field": "to", "message": "before from"}])
        months = months_between(start, end)
        _check_months(months, "to")
        out = []
        for rt in _room_types(property_id):
            for month in months:
                days = [d for d in month_days(month) if today <= d <= last_night]
                if not days:
                    continue
                nights = ari_events.night_states(
                    property_id, rt, days, rates=dict.fromkeys(days, ari_events.ALL),
                    restrictions=set(days), allotments=set(days), now=ctx.now)
                plans = ari_events.plans_named(property_id, nights, room_type_id=rt)
                out.append({"room_type_id": str(rt), "month": month_label(month),
                            "from_date": days[0].isoformat(), "to_date": days[-1].isoformat(),
                            "nights": len(nights), "hash": digest_hash(nights),
                            "prices_hash": prices_hash(nights, plans)})
    return {"property_id": str(property_id), "from": month_label(start),
            "to": month_label(end), "algorithm": "sha256", "data": out}


def check_push(ctx: Ctx, property_id: uuid.UUID, months: list[str] | None) -> list[str] | None:
    """The months of a push, validated ("YYYY-MM", sorted, at most 18; None: 365 days).

    Raises: NotFound (property), ValidationFailed (bad months). The job is queued by
    `pms.services.jobs.start_ari_push`."""
    wanted = sorted({month_of(m, "months") for m in months}) if months else None
    if wanted is not None:
        _check_months(wanted, "months")
    with read_scope(ctx):
        _property(property_id)
    return [month_label(m) for m in wanted] if wanted else None


def push_days(prop: Property, months: list[str] | None, now: dt.datetime) -> list[dt.date]:
    """The nights a push sends: those of `months` from the business date on (the digest's),
    or the 365 from the business date."""
    today = first_night(prop, now)
    if months:
        return [d for m in months for d in month_days(month_of(m, "months")) if d >= today]
    return [today + dt.timedelta(days=i) for i in range(FULL_PUSH_DAYS)]


def repriced(ctx: Ctx, prop: Property, *, rate_plans: list[uuid.UUID] | str,
             room_type_ids: Iterable[uuid.UUID] | None = None) -> None:
    """A change of what the quote adds to a plan's rates (its packages, a package's price or
    calculation, its currency, a room type's max_occupancy): inside its unit of work, touch the
    full push's nights of those plans' rates (`ari_events.ALL`: every plan) on every room type
    (or those given) that has an ARI stream, so their events carry the new `prices` and
    `per_stay`. A room type without a stream is one no channel holds a night of."""
    from pms.models.ari import AriStream

    if not rate_plans:
        return
    query = AriStream.select(AriStream.id).where(AriStream.property == prop.id)
    if room_type_ids is not None:
        query = query.where(AriStream.id.in_(list(room_type_ids)))
    days = push_days(prop, None, ctx.now)
    for (rt,) in sorted(query.tuples(), key=lambda r: str(r[0])):
        ari_events.touch(prop.id, rt, days, rate_plans=rate_plans)


def run_push(ctx: Ctx, property_id: uuid.UUID, months: list[str] | None) -> dict[str, Any]:
    """Emit the full state of the nights: per room type one unit of work (its stream locked
    first, then read: `pms.services.distribution.ari_events._flush`), one event per month."""
    with read_scope(ctx):
        prop = _property(property_id)
        room_types = _room_types(property_id)
    days = push_days(prop, months, ctx.now)
    events = 0
    for rt in room_types:
        with unit_of_work(ctx) as uow:
            ari_events.touch(property_id, rt, days, rate_plans=ari_events.ALL,
                             restrictions=True, allotments=True, full=True)
            before = len(uow.events)
            uow.run_before_commit()
            events += len(uow.events) - before
    return {"property_id": str(property_id), "room_types": len(room_types),
            "from_date": min(days).isoformat() if days else None,
            "to_date": max(days).isoformat() if days else None, "nights": len(days),
            "events": events}
