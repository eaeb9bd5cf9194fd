"""ARI that heals (issue 35): the digest per room type and month, and the re-push as a job.

A channel that suspects drift asks for `digest` (one hash per room type and calendar month),
compares it with the hash of what it holds, and asks for a re-push of only the months that
differ (`start_push` with `months`); a channel that lost its state asks for the full push (365
days from the property's business date). A push is a job (`pms.services.jobs.start_ari_push`
queues it, `run_job` runs `run_push`): per room type one unit of work whose events (`hotel:pms:ari:updated`, one per month,
`full: true`) carry every night's sellable, every rate plan's amount and restrictions.

Canonical form of a month (the README gives it to consumers): one line per night of the month,
in date order, `YYYY-MM-DD|<sellable>|<rate_plan_id>=<amount>,...` with the plans that have an
amount that night sorted by their id (lower-case UUID text) and the amounts in canonical text
(`pms.services.distribution.ari_events.amount_text`: "120.00" is "120", "99.50" is "99.5"); the rates part
is empty when no plan has an amount. A night where some rate plan has an allotment (issue 35)
gets a fourth part, `|<rate_plan_id>=<rooms left>,...`, sorted by plan id the same way (a night
without one keeps three parts). Lines are joined by "\\n" (none after the last); the hash is
the lower-case hex SHA-256 of that text in UTF-8. Restrictions are not in the digest.
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


def canonical(nights: Iterable[dict[str, Any]]) -> str:
    """The canonical text of a month's nights as an ARI consumer holds them (see above)."""
    lines = []
    for night in nights:
        rates = ",".join(f"{plan}={amount}" for plan, amount in sorted(night["rates"].items()))
        line = f"{night['date']}|{night['sellable']}|{rates}"
        if night.get("allotments"):
            line += "|" + ",".join(f"{plan}={n}"
                                   for plan, n in sorted(night["allotments"].items()))
        lines.append(line)
    return "\n".join(lines)


def digest_hash(nights: Iterable[dict[str, Any]]) -> str:
    return hashlib.sha256(canonical(nights).encode()).hexdigest()


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


def digest(ctx: Ctx, property_id: uuid.UUID, first: str | None,
           last: str | None) -> dict[str, Any]:
    """One hash per room type and month of first..last ("YYYY-MM", both included; by default
    the business date's month and the 11 after it: the 365 days channels certify).

    Raises: NotFound (property), ValidationFailed (bad months, over 18, last before first).
    """
    with read_scope(ctx):
        prop = _property(property_id)
        today = prop.business_date or local_today(ctx.now, prop.timezone)
        start = month_of(first, "from") if first else today.replace(day=1)
        if last:
            end = month_of(last, "to")
        else:
            end = start
            for _ in range(11):
                end = next_month(end)
        if end < start:
            raise ValidationFailed("to is before from",
                                   errors=[{"field": "to", "message": "before from"}])
        months = months_between(start, end)
        _check_months(months, "to")
        out = []
        for rt in _room_types(property_id):
            for month in months:
                days = month_days(month)
                nights = ari_events.night_states(
                    property_id, rt, days, rates=dict.fromkeys(days, ari_events.ALL),
                    allotments=set(days))
                out.append({"room_type_id": str(rt), "month": month.strftime("%Y-%m"),
                            "nights": len(nights), "hash": digest_hash(nights)})
    return {"property_id": str(property_id), "from": start.strftime("%Y-%m"),
            "to": end.strftime("%Y-%m"), "algorithm": "sha256", "data": out}


def check_push(ctx: Ctx, property_id: uuid.UUID, months: list[str] | None) -> list[str] | None:
    """The months of a push, validated ("YYYY-MM", sorted, at most 18; None: 365 days).

    Raises: NotFound (property), ValidationFailed (bad months). The job is queued by
    `pms.services.jobs.start_ari_push`."""
    wanted = sorted({month_of(m, "months") for m in months}) if months else None
    if wanted is not None:
        _check_months(wanted, "months")
    with read_scope(ctx):
        _property(property_id)
    return [m.strftime("%Y-%m") for m in wanted] if wanted else None


def push_days(prop: Property, months: list[str] | None, now: dt.datetime) -> list[dt.date]:
    if months:
        return [d for m in months for d in month_days(month_of(m, "months"))]
    today = prop.business_date or local_today(now, prop.timezone)
    return [today + dt.timedelta(days=i) for i in range(FULL_PUSH_DAYS)]


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
