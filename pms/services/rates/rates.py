"""Use cases for rates: nightly rate schedules, restrictions and promo codes (CRUD + pricing).

Bulk writes (a range of nights) are one unit of work with one outbox row and one audit row whose
subject is the rate plan (or the property, for restrictions of every plan). Nothing here prices a
stay; see `pms.services.rates.pricing`.
"""

from __future__ import annotations

import uuid
from datetime import date
from decimal import Decimal
from typing import Any

import msgspec
import peewee

from pms.context import Ctx
from pms.db.base import AggregateModel
from pms.db.locking import for_update
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.money import exact
from pms.domain.stay import date_span, stay_nights
from pms.errors import AlreadyExists, NotFound, ValidationFailed
from pms.models.catalog import RatePlan
from pms.models.property import Property, RoomType
from pms.models.rates import PromoCode, RateSchedule, Restriction
from pms.queries.availability import load_search_data
from pms.schemas import rates as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property
from pms.services.distribution import ari_events
from pms.services.rates.pricing import check_occupancy, quote_for
from pms.services.rates.rate_fence import negotiated_plan_open

MAX_WRITE_DAYS = 731   # a bulk write covers at most two years
MAX_WRITE_NIGHTS = 20000  # room-type nights per request: well inside the 5 s statement timeout
MAX_READ_DAYS = 366


def _field_error(field: str, message: str, detail: str | None = None) -> ValidationFailed:
    return ValidationFailed(detail or f"{field}: {message}",
                            errors=[{"field": field, "message": message}])


def load_rate_plan(property_id: uuid.UUID, rate_plan_id: uuid.UUID, *,
                   lock: bool = False) -> RatePlan:
    query = RatePlan.select().where((RatePlan.id == rate_plan_id)
                                    & (RatePlan.property == property_id))
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("no such rate plan")
    return row


def load_room_type(property_id: uuid.UUID, room_type_id: uuid.UUID, *,
                   field: str = "room_type_id") -> RoomType:
    """A room type of the property, or 422 (a reference in a body, not a path id)."""
    row = RoomType.get_or_none((RoomType.id == room_type_id) & (RoomType.property == property_id))
    if row is None:
        raise _field_error(field, "not a room type of this property",
                           "room_type_id is not a room type of this property")
    return row


def _record(uow: UnitOfWork, subject: AggregateModel, aggregate: str, action: str,
            data: dict[str, Any], property_id: uuid.UUID, *,
            before: dict[str, Any] | None = None) -> None:
    uow.record(aggregate, action, subject, data, before=before, property_id=property_id)


# -- rate schedules ----------------------------------------------------------------------------

def set_rates(ctx: Ctx, property_id: uuid.UUID, rate_plan_id: uuid.UUID,
              body: s.RatesIn) -> s.RatesWritten:
    """Set nightly amounts for room types and date ranges under a rate plan (upsert).

    Raises:
        NotFound: no such property or rate plan.
        ValidationFailed: a room type of another property, a bad range, a negative amount, or
            a currency other than the rate plan's.
    """
    total = 0
    for i, entry in enumerate(body.rates):
        if entry.amount < 0:
            raise _field_error(f"rates[{i}].amount", "must not be negative")
        total += len(date_span(entry.from_date, entry.to_date, weekdays=entry.weekdays,
                               max_days=MAX_WRITE_DAYS, prefix=f"rates[{i}]."))
    if total > MAX_WRITE_NIGHTS:
        raise _field_error("rates", f"at most {MAX_WRITE_NIGHTS} nights per request; split it",
                           f"the request sets {total} nights; at most {MAX_WRITE_NIGHTS} per request")
    with unit_of_work(ctx) as uow:
        load_property(property_id)
        plan = load_rate_plan(property_id, rate_plan_id, lock=True)
        if body.currency is not None and body.currency != plan.currency:
            raise _field_error("currency", f"the rate plan is priced in {plan.currency}")
        values: dict[tuple[uuid.UUID, date], Decimal] = {}
        for i, entry in enumerate(body.rates):
            load_room_type(property_id, entry.room_type_id, field=f"rates[{i}].room_type_id")
            amount = exact(entry.amount, plan.currency, f"rates[{i}].amount")
            for day in date_span(entry.from_date, entry.to_date, weekdays=entry.weekdays,
                                 max_days=MAX_WRITE_DAYS):
                values[(entry.room_type_id, day)] = amount
        rows = [{"id": uuid.uuid4(), "property": property_id, "rate_plan": plan.id,
                 "room_type": rt, "date": day, "amount": amount, "currency": plan.currency}
                for (rt, day), amount in sorted(values.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))]
        for start in range(0, len(rows), 500):
            (RateSchedule.insert_many(rows[start:start + 500])
             .on_conflict(conflict_target=[RateSchedule.env_id, RateSchedule.rate_plan,
                                           RateSchedule.room_type, RateSchedule.date],
                          update={RateSchedule.amount: peewee.EXCLUDED.amount,
                                  RateSchedule.currency: peewee.EXCLUDED.currency,
                                  RateSchedule.updated_at: peewee.EXCLUDED.updated_at})
             .execute())
        per_type: dict[uuid.UUID, list[date]] = {}
        for rt, day in values:
            per_type.setdefault(rt, []).append(day)
        for rt, days_of in per_type.items():  # the ARI events of the new rates
            ari_events.touch(property_id, rt, days_of, rate_plans=[plan.id])
        out = s.RatesWritten(rate_plan_id=plan.id, currency=plan.currency,
                             nights_written=len(rows))
        data = {**to_data(out), "rates": to_data(body.rates)}
        _record(uow, plan, "rate_schedule", "updated", data, property_id)
    return out


def list_rates(ctx: Ctx, property_id: uuid.UUID, rate_plan_id: uuid.UUID,
               query: s.RatesQuery) -> s.RatesOut:
    """The loaded nightly amounts of a rate plan in a date range (at most 366 days).

    Raises:
        NotFound: no such property or rate plan. ValidationFailed: bad range.
    """
    date_span(query.from_date, query.to_date, max_days=MAX_READ_DAYS)
    with read_scope(ctx):
        load_property(property_id)
        plan = load_rate_plan(property_id, rate_plan_id)
        q = RateSchedule.select().where(
            (RateSchedule.rate_plan == plan.id) & (RateSchedule.date >= query.from_date)
            & (RateSchedule.date <= query.to_date))
        if query.room_type_id is not None:
            q = q.where(RateSchedule.room_type == query.room_type_id)
        rows = list(q.order_by(RateSchedule.room_type, RateSchedule.date))
    return s.RatesOut(rate_plan_id=plan.id, data=[s.rate_out(r) for r in rows])


# -- restrictions ------------------------------------------------------------------------------

def set_restrictions(ctx: Ctx, property_id: uuid.UUID, rate_plan_id: uuid.UUID | None,
                     body: s.RestrictionIn) -> s.RestrictionsWritten:
    """Replace the restrictions of a date range, for one rate plan or (None) every plan, and one
    room type or (body.room_type_id None) every room type.

    Raises:
        NotFound: no such property or rate plan.
        ValidationFailed: a bad range, min_los above max_los, a room type of another property.
    """
    days = date_span(body.from_date, body.to_date, weekdays=body.weekdays,
                     max_days=MAX_WRITE_DAYS)
    min_arrival = _same("min_stay_arrival", body.min_stay_arrival, "min_los", body.min_los)
    max_arrival = _same("max_stay_arrival", body.max_stay_arrival, "max_los", body.max_los)
    if min_arrival is not None and max_arrival is not None and min_arrival > max_arrival:
        raise _field_error("min_los", "must not be above max_los")
    if (body.min_stay_through is not None and body.max_stay_through is not None
            and body.min_stay_through > body.max_stay_through):
        raise _field_error("min_stay_through", "must not be above max_stay_through")
    with unit_of_work(ctx) as uow:
        prop = load_property(property_id, for_update=rate_plan_id is None)
        plan = load_rate_plan(property_id, rate_plan_id, lock=True) if rate_plan_id else None
        if body.room_type_id is not None:
            load_room_type(property_id, body.room_type_id)
        match = ((Restriction.property == property_id) & Restriction.date.in_(days)
                 & (Restriction.rate_plan == plan.id if plan else Restriction.rate_plan.is_null())
                 & (Restriction.room_type == body.room_type_id if body.room_type_id
                    else Restriction.room_type.is_null()))
        Restriction.delete().where(match).execute()
        cleared = not (body.closed or body.closed_to_arrival or body.closed_to_departure
                       or min_arrival or max_arrival or body.min_stay_through
                       or body.max_stay_through)
        if not cleared:
            Restriction.insert_many([
                {"id": uuid.uuid4(), "property": property_id, "rate_plan": plan.id if plan else None,
                 "room_type": body.room_type_id, "date": day, "min_los": min_arrival,
                 "max_los": max_arrival, "min_stay_through": body.min_stay_through,
                 "max_stay_through": body.max_stay_through, "closed": body.closed,
                 "closed_to_arrival": body.closed_to_arrival,
                 "closed_to_departure": body.closed_to_departure} for day in days]).execute()
        room_types = ([body.room_type_id] if body.room_type_id is not None else
                      [rt for (rt,) in RoomType.select(RoomType.id)
                       .where(RoomType.property == property_id).tuples()])
        for rt in room_types:  # the ARI events of the new restrictions
            ari_events.touch(property_id, rt, days, restrictions=True)
        out = s.RestrictionsWritten(rate_plan_id=plan.id if plan else None,
                                    room_type_id=body.room_type_id, from_date=body.from_date,
                                    to_date=body.to_date, dates_written=len(days), cleared=cleared)
        data = {**to_data(out), "rule": {"min_los": min_arrival, "max_los": max_arrival,
                                         "min_stay_through": body.min_stay_through,
                                         "max_stay_through": body.max_stay_through,
                                         "closed": body.closed,
                                         "closed_to_arrival": body.closed_to_arrival,
                                         "closed_to_departure": body.closed_to_departure}}
        _record(uow, plan or prop, "restriction", "updated", data, property_id)
    return out


def _same(name: str, value: int | None, old_name: str, old: int | None) -> int | None:
    """A length of stay given under its channel name or today's: both must agree."""
    if value is not None and old is not None and value != old:
        raise _field_error(name, f"differs from {old_name}; give one of them")
    return value if value is not None else old


def list_restrictions(ctx: Ctx, property_id: uuid.UUID, rate_plan_id: uuid.UUID | None,
                      query: s.RestrictionQuery) -> s.RestrictionsOut:
    """Stored restrictions of a date range: a plan's own and those of every plan (null).

    Raises:
        NotFound: no such property or rate plan. ValidationFailed: bad range.
    """
    date_span(query.from_date, query.to_date, max_days=MAX_READ_DAYS)
    with read_scope(ctx):
        load_property(property_id)
        q = Restriction.select().where(
            (Restriction.property == property_id) & (Restriction.date >= query.from_date)
            & (Restriction.date <= query.to_date))
        if rate_plan_id is not None:
            load_rate_plan(property_id, rate_plan_id)
            q = q.where(Restriction.rate_plan.is_null() | (Restriction.rate_plan == rate_plan_id))
        if query.room_type_id is not None:
            q = q.where(Restriction.room_type.is_null()
                        | (Restriction.room_type == query.room_type_id))
        rows = list(q.order_by(Restriction.date, Restriction.created_at))
    return s.RestrictionsOut(data=[s.restriction_out(r) for r in rows])


# -- promo codes -------------------------------------------------------------------------------

PROMO_FIELDS = ("description", "discount_type", "discount_value", "currency", "valid_from",
                "valid_to", "min_nights", "rate_plan_ids", "active")


def _check_promo(prop: Property, values: dict[str, Any]) -> None:
    kind, value = values.get("discount_type"), values.get("discount_value")
    if value is not None and value < 0:
        raise _field_error("discount_value", "must not be negative")
    if kind == "PERCENT" and value is not None and value > 100:
        raise _field_error("discount_value", "a percentage is at most 100")
    if kind == "PERCENT":
        values["currency"] = None
    elif kind == "FIXED" and not values.get("currency"):
        values["currency"] = prop.currency_code
    if kind == "FIXED" and value is not None:
        values["discount_value"] = exact(value, values["currency"], "discount_value")
    start, end = values.get("valid_from"), values.get("valid_to")
    if start is not None and end is not None and end < start:
        raise _field_error("valid_to", "must not be before valid_from")
    ids = values.get("rate_plan_ids") or []
    if ids:
        known = {r for (r,) in RatePlan.select(RatePlan.id).where(
            (RatePlan.property == prop.id) & RatePlan.id.in_(ids)).tuples()}
        missing = [str(i) for i in ids if i not in known]
        if missing:
            raise _field_error("rate_plan_ids", f"not rate plans of this property: {', '.join(missing)}")
        values["rate_plan_ids"] = [str(i) for i in ids]


def load_promo(property_id: uuid.UUID, promo_id: uuid.UUID, *, lock: bool = False) -> PromoCode:
    query = PromoCode.select().where((PromoCode.id == promo_id)
                                     & (PromoCode.property == property_id))
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("no such promo code")
    return row


def create_promo(ctx: Ctx, property_id: uuid.UUID, body: s.PromoCodeIn) -> PromoCode:
    """Create a promo code (codes are case-insensitive and stored upper-case).

    Raises:
        NotFound: no such property. ValidationFailed: bad values. AlreadyExists: code taken.
    """
    with unit_of_work(ctx) as uow:
        prop = load_property(property_id)
        values = {f: getattr(body, f) for f in PROMO_FIELDS}
        _check_promo(prop, values)
        row = PromoCode(env_id=ctx.env_id, property=prop.id, code=body.code.upper(), **values)
        try:
            with row._meta.database.atomic():
                row.save(force_insert=True)
        except peewee.IntegrityError as exc:
            raise AlreadyExists(f"promo code {row.code} already exists at this property") from exc
        _record(uow, row, "promo_code", "created", to_data(s.promo_code_out(row)), prop.id)
    return row


def update_promo(ctx: Ctx, property_id: uuid.UUID, promo_id: uuid.UUID,
                 body: s.PromoCodePatch) -> PromoCode:
    """Change the given fields of a promo code. Raises NotFound, ValidationFailed."""
    with unit_of_work(ctx) as uow:
        prop = load_property(property_id)
        row = load_promo(property_id, promo_id, lock=True)
        before = to_data(s.promo_code_out(row))
        values = {f: getattr(row, f) for f in PROMO_FIELDS}
        values.update({f: getattr(body, f) for f in PROMO_FIELDS
                       if getattr(body, f) is not msgspec.UNSET})
        values["rate_plan_ids"] = [uuid.UUID(str(i)) for i in values["rate_plan_ids"] or []]
        _check_promo(prop, values)
        for key, value in values.items():
            setattr(row, key, value)
        row.save()
        _record(uow, row, "promo_code", "updated", to_data(s.promo_code_out(row)), prop.id,
                before=before)
    return row


def delete_promo(ctx: Ctx, property_id: uuid.UUID, promo_id: uuid.UUID) -> None:
    """Delete a promo code. Raises NotFound."""
    with unit_of_work(ctx) as uow:
        row = load_promo(property_id, promo_id, lock=True)
        data = to_data(s.promo_code_out(row))
        _record(uow, row, "promo_code", "deleted", data, row.property_id, before=data)
        row.delete_instance()


def get_promo(ctx: Ctx, property_id: uuid.UUID, promo_id: uuid.UUID) -> PromoCode:
    """One promo code. Raises NotFound."""
    with read_scope(ctx):
        load_property(property_id)
        return load_promo(property_id, promo_id)


def list_promos(ctx: Ctx, property_id: uuid.UUID, *, limit: int, cursor: str | None) -> Any:
    """A page of the property's promo codes. Raises NotFound, ValidationFailed (cursor)."""
    from pms.db.pagination import paginate

    with read_scope(ctx):
        load_property(property_id)
        return paginate(PromoCode.select().where(PromoCode.property == property_id), PromoCode,
                        limit=limit, cursor=cursor)


def validate_promo(ctx: Ctx, property_id: uuid.UUID,
                   body: s.PromoValidateIn) -> s.PromoValidationOut:
    """Price a promo code for a stay without writing anything (no outbox, no audit).

    Raises:
        NotFound: no such property. ValidationFailed: bad stay dates or occupancy, a room type
            or rate plan of another property.
    """
    nights = stay_nights(body.arrival_date, body.departure_date)
    check_occupancy(body.adults, body.children)
    with read_scope(ctx):
        load_property(property_id)
        room_type = load_room_type(property_id, body.room_type_id)
        plan = RatePlan.get_or_none((RatePlan.id == body.rate_plan_id)
                                    & (RatePlan.property == property_id))
        # the rate fence: the body names no company, so a negotiated plan is open
        # only to the company's own token; anyone else (staff included: a quote naming no
        # company is a public one) gets the answer of an unknown plan
        if plan is None or not negotiated_plan_open(ctx, plan, None):
            raise _field_error("rate_plan_id", "not a rate plan of this property",
                               "rate_plan_id is not a rate plan of this property")
        data = load_search_data(property_id, [room_type], [plan], body.arrival_date,
                                body.departure_date, nights, promo_code=body.code)
    quote = quote_for(data, room_type, plan, adults=body.adults, children=body.children,
                      promo_code=body.code)
    promo_reasons = [r for r in quote.reasons if r.code.startswith("promo_")]
    return s.PromoValidationOut(
        code=body.code.upper(), valid=not promo_reasons,
        reasons=[s.ReasonOut(code=r.code, message=r.message, date=r.date) for r in quote.reasons],
        currency=quote.currency,
        nights=[s.NightPriceOut(date=n.date, amount=n.amount) for n in quote.nights],
        room_total=quote.room_total, packages_total=quote.packages_total,
        discount_total=quote.discount_total, total=quote.total,
        total_without_promo=quote.room_total + quote.packages_total, bookable=quote.bookable)
