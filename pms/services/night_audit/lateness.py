"""The night audit may be at most one day late (NF525 and KassenSichV both ask a register's day
to be closed in time): a property whose business date is more than one day behind its local
calendar date is not closed one day at a time without saying so. The audit of such a date is
refused (409 `night_audit_overdue`, naming the business date, the local date and the days
missed) unless the caller asks for the catch-up, which closes every missed day in order, each
its own run, audited with the catch-up as its reason.
"""

from __future__ import annotations

from datetime import date, timedelta

from pms.errors import Conflict

MAX_DAYS_LATE = 1


class NightAuditOverdue(Conflict):
    """Raised when a night audit would close a business date more than a day behind the
    property's local date without `catch_up`."""

    code = "night_audit_overdue"


def missed_days(business_date: date, local: date) -> list[date]:
    """The business dates still to close before the property is on its local date."""
    return [business_date + timedelta(days=n) for n in range((local - business_date).days)]


def check_on_time(business_date: date, local: date, *, catch_up: bool) -> None:
    """Raises NightAuditOverdue (409) when `business_date` is more than MAX_DAYS_LATE behind
    `local` and no catch-up was asked for."""
    if catch_up or (local - business_date).days <= MAX_DAYS_LATE:
        return
    days = missed_days(business_date, local)
    raise NightAuditOverdue(
        f"the night audit is {len(days)} days late: the business date is {business_date} and "
        f"the property's local date is {local}; ask for the catch-up (catch_up true, "
        f"pms-cli end-of-day --catch-up) to close {days[0]} to {days[-1]} in order",
        business_date=business_date.isoformat(), local_date=local.isoformat(),
        missed_dates=[d.isoformat() for d in days])


def reason(day: date, local: date) -> str:
    """The audited reason of a run the catch-up starts."""
    return f"catch-up: {day} closed late (the property's local date was {local})"


def late_reason(prop: object, day: date, now: object) -> str | None:
    """The catch-up reason of closing `day` now, when the property's local date is more than a
    day past it; None when it is on time."""
    from pms.clock import local_today

    local = local_today(now, prop.timezone)
    return reason(day, local) if (local - day).days > MAX_DAYS_LATE else None
