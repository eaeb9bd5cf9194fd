"""A company's stays: its production (the basis of a negotiated-rate renewal) and its users'
"our bookings" list. Both read `reservation.company_profile_id`, the company a stay is booked
for whether or not the company pays (`company_billing.booking_company`).

Production counts the nights of the company's CONFIRMED, CHECKED_IN and CHECKED_OUT stays (a
cancelled or no-show stay produced no room night), each night in the month it falls in, at the
nightly room price the stay was booked at (`nightly_prices`: the room rate, without packages,
discounts or incidentals), in the property's currency. It is an env-level report: it spans
the chain's properties (`?property_id=` narrows it to one, and the request is then decided for
that property).

Who sees which bookings of the company (a holder session bound to it, by its role):
- ADMIN (and the company's own profile token), BOOKER and VIEWER: every booking of the
  company at the property. A BOOKER books for any traveler of the company, so it sees the
  stays it manages; a VIEWER is the company's read-only role.
- TRAVELER: only its own stays (where it is the guest).
Staff see every booking. A holder not bound to the company gets 404 (`company_access`).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import date
from decimal import Decimal

from pms.context import Ctx
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope
from pms.domain.companies import CompanyRole
from pms.errors import ValidationFailed
from pms.models import Property, Reservation
from pms.schemas.companies import (
    CompanyBookingOut,
    CompanyBookingQuery,
    ProductionOut,
    ProductionQuery,
    ProductionRow,
    ProductionSum,
)
from pms.services.catalog.catalog import load_property
from pms.services.corporate.companies import company_access, load_company

PRODUCING = ("CONFIRMED", "CHECKED_IN", "CHECKED_OUT")
MAX_RANGE_DAYS = 1096  # three years: a renewal looks at the last contract period or two
SEE_ALL = frozenset({CompanyRole.ADMIN, CompanyRole.BOOKER, CompanyRole.VIEWER})


def _check_range(start: date, end: date) -> None:
    if end < start:
        raise ValidationFailed("to_date is before from_date",
                               errors=[{"field": "to_date", "message": "before from_date"}])
    if (end - start).days + 1 > MAX_RANGE_DAYS:
        raise ValidationFailed(f"a production report covers at most {MAX_RANGE_DAYS} days",
                               errors=[{"field": "to_date",
                                        "message": f"more than {MAX_RANGE_DAYS} days"}])


def production(ctx: Ctx, company_id: uuid.UUID, query: ProductionQuery) -> ProductionOut:
    """The company's room nights and room revenue by property and month for the nights from
    `from_date` to `to_date` (module docstring). Staff only (the route's gate).

    Raises: NotFound (no such company; `property_id` not a property of the env);
        ValidationFailed (422: the range reversed or longer than MAX_RANGE_DAYS).
    """
    start, end = query.from_date, query.to_date
    _check_range(start, end)
    with read_scope(ctx):
        load_company(company_id)
        stays = Reservation.select(
            Reservation.id, Reservation.property, Reservation.arrival_date,
            Reservation.departure_date, Reservation.currency, Reservation.nightly_prices,
        ).where(Reservation.company_profile_id == company_id,
                Reservation.arrival_date <= end, Reservation.departure_date > start,
                Reservation.status.in_(PRODUCING))
        if query.property_id is not None:
            load_property(query.property_id)
            stays = stays.where(Reservation.property == query.property_id)
        nights: dict[tuple[uuid.UUID, str, str], int] = defaultdict(int)
        revenue: dict[tuple[uuid.UUID, str, str], Decimal] = defaultdict(Decimal)
        counted: dict[tuple[uuid.UUID, str, str], set[uuid.UUID]] = defaultdict(set)
        for stay in stays.tuples().iterator():
            stay_id, property_id, arrival, departure, currency, prices = stay
            for night in prices or []:
                day = date.fromisoformat(str(night["date"]))
                if not (start <= day <= end and arrival <= day < departure):
                    continue
                key = (property_id, day.strftime("%Y-%m"), currency)
                nights[key] += 1
                revenue[key] += Decimal(str(night["amount"]))
                counted[key].add(stay_id)
        codes = dict(Property.select(Property.id, Property.code)
                     .where(Property.id.in_({k[0] for k in nights})).tuples()) if nights else {}
    rows = [ProductionRow(property_id=k[0], property_code=codes.get(k[0], ""), month=k[1],
                          currency=k[2], room_nights=nights[k], room_revenue=revenue[k],
                          stays=len(counted[k]))
            for k in sorted(nights, key=lambda k: (codes.get(k[0], ""), str(k[0]), k[1]))]
    sums: dict[str, list] = {}
    for row in rows:
        total = sums.setdefault(row.currency, [0, Decimal(0)])
        total[0] += row.room_nights
        total[1] += row.room_revenue
    return ProductionOut(company_profile_id=company_id, from_date=start, to_date=end, rows=rows,
                         sums=[ProductionSum(currency=c, room_nights=n, room_revenue=r)
                               for c, (n, r) in sorted(sums.items())])


def booking_out(row: Reservation) -> CompanyBookingOut:
    return CompanyBookingOut(
        id=row.id, confirmation_number=row.confirmation_number, property_id=row.property_id,
        status=row.status, arrival_date=row.arrival_date, departure_date=row.departure_date,
        nights=(row.departure_date - row.arrival_date).days, room_type_id=row.room_type_id,
        guest_profile_id=row.guest_profile_id, guest_first_name=row.guest_first_name,
        guest_last_name=row.guest_last_name, company_profile_id=row.company_profile_id,
        billed_to_company=bool(row.company_billed), created_at=row.created_at)


def list_bookings(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                  query: CompanyBookingQuery) -> Page[CompanyBookingOut]:
    """The company's bookings at the property, one keyset page (booking order), as the caller
    may see them (module docstring), filtered by status, arrival range and traveler.

    Raises: NotFound (property, company, a holder not bound to it); ValidationFailed (422:
        arrival_to before arrival_from, a malformed cursor).
    """
    if (query.arrival_from is not None and query.arrival_to is not None
            and query.arrival_to < query.arrival_from):
        raise ValidationFailed("arrival_to is before arrival_from",
                               errors=[{"field": "arrival_to", "message": "before arrival_from"}])
    with read_scope(ctx):
        access = company_access(ctx, property_id, company_id)
        rows = Reservation.select().where(Reservation.company_profile_id == company_id,
                                          Reservation.property == property_id)
        if access.role is not None and access.role not in SEE_ALL:
            rows = rows.where(Reservation.guest_profile == ctx.holder_id)
        if query.status is not None:
            rows = rows.where(Reservation.status == query.status)
        if query.arrival_from is not None:
            rows = rows.where(Reservation.arrival_date >= query.arrival_from)
        if query.arrival_to is not None:
            rows = rows.where(Reservation.arrival_date <= query.arrival_to)
        if query.traveler_profile_id is not None:
            rows = rows.where(Reservation.guest_profile == query.traveler_profile_id)
        page = paginate(rows, Reservation, limit=query.limit, cursor=query.cursor)
    return Page(items=[booking_out(r) for r in page.items], next_cursor=page.next_cursor)

