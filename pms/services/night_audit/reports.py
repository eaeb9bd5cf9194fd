"""Reports of a property: arrivals, departures, in-house, occupancy forecast, manager report (from
the end-of-day log) and open folios; plus the day's figures the night audit stores. Read-only:
every query is bounded by the property and a date (indexed), never by the whole history.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import peewee

from pms.context import Ctx
from pms.db.uow import read_scope
from pms.domain.money import quantize
from pms.domain.states import FolioStatus, ReservationStatus
from pms.errors import Forbidden, NotFound, ValidationFailed
from pms.models import Folio, FolioCharge, FolioPayment, Property, Reservation, Room
from pms.models.end_of_day import NightAuditRun
from pms.services.catalog.catalog import load_property
from pms.services.reservations.reservations import business_date as current_business_date

CHECKED_IN, CHECKED_OUT = ReservationStatus.CHECKED_IN.value, ReservationStatus.CHECKED_OUT.value
CONFIRMED = ReservationStatus.CONFIRMED.value
MAX_FORECAST_DAYS = 366


def _rooms_out_of_order(property_id: uuid.UUID, day: date) -> tuple[int, int]:
    from pms.models.inventory import Maintenance

    rows = (Maintenance.select(Maintenance.room, Maintenance.kind)
            .where((Maintenance.property == property_id) & Maintenance.active
                   & (Maintenance.from_date <= day) & (Maintenance.to_date >= day)).tuples())
    kinds: dict[Any, str] = {}
    for room_id, kind in rows:
        if kinds.get(room_id) != "OUT_OF_ORDER":
            kinds[room_id] = kind
    ooo = sum(1 for k in kinds.values() if k == "OUT_OF_ORDER")
    return ooo, len(kinds) - ooo


def _ratio(num: Decimal, den: int | Decimal, places: str = "0.01") -> str:
    if not den:
        return "0.00"
    return str((Decimal(num) / Decimal(den)).quantize(Decimal(places)))


def day_figures(prop: Property, day: date, *, no_shows: int | None = None) -> dict[str, Any]:
    """The end-of-day figures of one business date (call inside a scope)."""
    cur = prop.currency_code
    total_rooms = Room.select().where(Room.property == prop.id).count()
    ooo, oos = _rooms_out_of_order(prop.id, day)
    available = max(total_rooms - ooo - oos, 0)
    sold = Reservation.select().where(
        (Reservation.property == prop.id) & (Reservation.status.in_([CHECKED_IN, CHECKED_OUT]))
        & (Reservation.arrival_date <= day) & (Reservation.departure_date > day)).count()
    revenue: dict[str, str] = {}
    rows = (FolioCharge.select(FolioCharge.category, peewee.fn.SUM(FolioCharge.amount))
            .where((FolioCharge.property_id == prop.id) & (FolioCharge.business_date == day))
            .group_by(FolioCharge.category).tuples())
    for category, amount in rows:
        revenue[category] = str(quantize(Decimal(str(amount or 0)), cur))
    room_revenue = Decimal(revenue.get("room", "0"))
    arrivals = Reservation.select().where(
        (Reservation.property == prop.id) & (Reservation.arrival_date == day)
        & Reservation.status.in_([CHECKED_IN, CHECKED_OUT])).count()
    departures = Reservation.select().where(
        (Reservation.property == prop.id) & (Reservation.departure_date == day)
        & (Reservation.status == CHECKED_OUT)).count()
    if no_shows is None:
        no_shows = Reservation.select().where(
            (Reservation.property == prop.id) & (Reservation.arrival_date == day)
            & (Reservation.status == ReservationStatus.NO_SHOW.value)).count()
    return {
        "business_date": day.isoformat(), "currency": cur, "rooms_total": total_rooms,
        "rooms_out_of_order": ooo, "rooms_out_of_service": oos, "rooms_available": available,
        "rooms_sold": sold, "occupancy_percent": _ratio(Decimal(sold) * 100, available),
        "adr": _ratio(room_revenue, sold), "revpar": _ratio(room_revenue, available),
        "revenue_by_category": revenue,
        "revenue_total": str(quantize(sum((Decimal(v) for v in revenue.values()), Decimal(0)), cur)),
        "arrivals": arrivals, "departures": departures, "no_shows": no_shows,
    }


# -- named reports -----------------------------------------------------------------------------

def _stay(r: Reservation) -> dict[str, Any]:
    return {"reservation_id": str(r.id), "confirmation_number": r.confirmation_number,
            "status": r.status, "guest_last_name": r.guest_last_name,
            "guest_first_name": r.guest_first_name, "arrival_date": r.arrival_date.isoformat(),
            "departure_date": r.departure_date.isoformat(), "adults": r.adults,
            "children": r.children, "room_id": str(r.room_id) if r.room_id else None}


def _arrivals(prop: Property, day: date, days: int) -> list[dict[str, Any]]:
    return [_stay(r) for r in Reservation.select().where(
        (Reservation.property == prop.id) & (Reservation.arrival_date == day)
        & Reservation.status.in_([CONFIRMED, CHECKED_IN])).order_by(Reservation.guest_last_name)]


def _departures(prop: Property, day: date, days: int) -> list[dict[str, Any]]:
    return [_stay(r) for r in Reservation.select().where(
        (Reservation.property == prop.id) & (Reservation.departure_date == day)
        & Reservation.status.in_([CHECKED_IN, CHECKED_OUT])).order_by(Reservation.guest_last_name)]


def _in_house(prop: Property, day: date, days: int) -> list[dict[str, Any]]:
    return [_stay(r) for r in Reservation.select().where(
        (Reservation.property == prop.id) & (Reservation.status == CHECKED_IN))
        .order_by(Reservation.guest_last_name)]


def _forecast(prop: Property, day: date, days: int) -> list[dict[str, Any]]:
    end = day + timedelta(days=days)
    total = Room.select().where(Room.property == prop.id).count()
    counts = {d: 0 for d in (day + timedelta(days=i) for i in range(days))}
    for arrival, departure in Reservation.select(Reservation.arrival_date,
                                                 Reservation.departure_date).where(
            (Reservation.property == prop.id) & Reservation.status.in_([CONFIRMED, CHECKED_IN])
            & (Reservation.arrival_date < end) & (Reservation.departure_date > day)).tuples():
        night = max(arrival, day)
        while night < min(departure, end):
            counts[night] += 1
            night += timedelta(days=1)
    return [{"date": d.isoformat(), "rooms_sold": n, "rooms_total": total,
             "occupancy_percent": _ratio(Decimal(n) * 100, total)} for d, n in counts.items()]


def _manager(prop: Property, day: date, days: int) -> list[dict[str, Any]]:
    runs = (NightAuditRun.select().where((NightAuditRun.property == prop.id)
                                         & (NightAuditRun.business_date <= day)
                                         & (NightAuditRun.business_date > day - timedelta(days=days)))
            .order_by(NightAuditRun.business_date.desc()))
    return [dict(r.figures or {}, status=r.status) for r in runs]


def _open_folios(prop: Property, day: date, days: int) -> list[dict[str, Any]]:
    charges = (FolioCharge.select(FolioCharge.folio, peewee.fn.SUM(FolioCharge.amount).alias("t"))
               .group_by(FolioCharge.folio))
    out = []
    folios = list(Folio.select().where((Folio.property == prop.id)
                                       & (Folio.status == FolioStatus.OPEN.value)))
    ids = [f.id for f in folios]
    sums = {fid: Decimal(str(t or 0)) for fid, t in charges.where(
        FolioCharge.folio.in_(ids)).tuples()} if ids else {}
    paid = {fid: Decimal(str(t or 0)) for fid, t in FolioPayment.select(
        FolioPayment.folio, peewee.fn.SUM(FolioPayment.amount)).where(
        FolioPayment.folio.in_(ids) & (FolioPayment.status == "CAPTURED"))
        .group_by(FolioPayment.folio).tuples()} if ids else {}
    for f in folios:
        balance = quantize(sums.get(f.id, Decimal(0)) - paid.get(f.id, Decimal(0)), f.currency)
        out.append({"folio_id": str(f.id),
                    "reservation_id": str(f.reservation_id) if f.reservation_id else None,
                    "block_id": str(f.block_id) if f.block_id else None,
                    "room_number": f.room_number, "folio_type": f.folio_type,
                    "currency": f.currency, "balance": str(balance)})
    return out


REPORTS: dict[str, Callable[[Property, date, int], list[dict[str, Any]]]] = {
    "arrivals": _arrivals, "departures": _departures, "in-house": _in_house,
    "occupancy-forecast": _forecast, "manager": _manager, "open-folios": _open_folios,
}


def run_report(ctx: Ctx, property_id: uuid.UUID, name: str, *, day: date | None = None,
               days: int = 14) -> dict[str, Any]:
    """One named report for a business date (default: the property's current one).

    Reports list every guest of the property, so they are staff-only: a holder session is
    refused here as well as at the route (the route's guest class is "deny").

    Raises:
        Forbidden (403 guest_not_allowed): a holder session.
        NotFound: unknown property or report name. ValidationFailed: days out of 1..366.
    """
    if ctx.holder_id is not None:
        raise Forbidden("reports are for staff only", code="guest_not_allowed")
    if name not in REPORTS:
        raise NotFound(f"no report named {name}; known: {', '.join(sorted(REPORTS))}")
    if not 1 <= days <= MAX_FORECAST_DAYS:
        raise ValidationFailed(f"days must be 1..{MAX_FORECAST_DAYS}",
                               errors=[{"field": "days", "message": "out of range"}])
    with read_scope(ctx):
        prop = load_property(property_id)
        day = day or current_business_date(prop, ctx.now)
        rows = REPORTS[name](prop, day, days)
    return {"report": name, "property_id": str(property_id), "business_date": day.isoformat(),
            "rows": rows, "count": len(rows)}
