"""Use cases for the catalog: properties, room types, rooms, rate plans, items and packages.

Each function is one transaction (unit of work) writing the row, one outbox event and one audit
row. The property-child kinds share one create/update/delete path; their differences (which
fields, which references to check) are data in `KINDS`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec
import peewee

from pms.context import Ctx
from pms.db.base import AggregateModel
from pms.db.uow import UnitOfWork, unit_of_work
from pms.domain.money import exact
from pms.errors import AlreadyExists, StillReferenced, ValidationFailed
from pms.models import Item, Package, Property, RatePlan, Room, RoomType
from pms.models.ari import AriStream
from pms.queries.lookups import load_child, load_property
from pms.schemas import catalog as s
from pms.schemas.common import to_data
from pms.services.distribution import ari_events, ari_push
from pms.services.inventory import inventory_calendar

PROPERTY_FIELDS = {
    "property_code": "code", "name": "name", "timezone": "timezone",
    "currency_code": "currency_code", "languages": "languages",
    "display_address": "display_address", "contacts": "contacts",
    "check_out_time": "check_out_time",
    "max_guest_bookings": "max_guest_bookings", "booking_horizon_days": "booking_horizon_days",
}


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value) if isinstance(value, (msgspec.Struct, list)) else value


def _check_timezone(name: str) -> None:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValidationFailed(f"{name!r} is not an IANA time zone",
                               errors=[{"field": "timezone", "message": "unknown time zone"}]) from exc


def _changes(body: msgspec.Struct, mapping: dict[str, str]) -> dict[str, Any]:
    """Model column -> value for every field the request set (UNSET fields are left alone)."""
    out: dict[str, Any] = {}
    for attr, column in mapping.items():
        value = getattr(body, attr, msgspec.UNSET)
        if value is not msgspec.UNSET:
            out[column] = _builtins(value)
    return out


def _apply(row: peewee.Model, changes: dict[str, Any]) -> None:
    for column, value in changes.items():
        setattr(row, column, value)


def _save_unique(row: peewee.Model, *, create: bool, what: str) -> None:
    """Save, turning the (env, parent, code) unique index into a clear 409."""
    try:
        with row._meta.database.atomic():  # savepoint: keep the transaction usable
            if create:
                row.save(force_insert=True)
            else:
                row.save()
    except peewee.IntegrityError as exc:
        raise AlreadyExists(f"{what} already exists") from exc


def _delete(row: AggregateModel, what: str) -> None:
    try:
        with row._meta.database.atomic():
            row.delete_instance()
    except peewee.IntegrityError as exc:
        raise StillReferenced(f"{what} is still referenced and cannot be deleted") from exc


def _record(uow: UnitOfWork, row: AggregateModel, aggregate: str, action: str,
            out: msgspec.Struct, *, before: dict[str, Any] | None = None) -> None:
    uow.record(aggregate, action, row, to_data(out), before=before,
               property_id=row.id if isinstance(row, Property) else row.property_id)


# -- properties ---------------------------------------------------------------------------------

def create_property(ctx: Ctx, body: s.PropertyIn) -> Property:
    """Create a property.

    Raises:
        ValidationFailed: unknown time zone.
        AlreadyExists: the propertyCode is taken in this env (409 already_exists).
    """
    _check_timezone(body.timezone)
    with unit_of_work(ctx) as uow:
        values = _changes(body, PROPERTY_FIELDS)
        values["name"] = values.get("name") or body.property_code
        row = Property(env_id=ctx.env_id, **values)
        _save_unique(row, create=True, what=f"a property with code {body.property_code}")
        _record(uow, row, "property", "created", s.property_out(row))
    return row


def update_property(ctx: Ctx, property_id: uuid.UUID, body: s.PropertyPatch) -> Property:
    """Change the fields given. Raises NotFound, ValidationFailed, AlreadyExists."""
    if body.timezone is not msgspec.UNSET:
        _check_timezone(body.timezone)
    with unit_of_work(ctx) as uow:
        row = load_property(property_id, for_update=True)
        before = to_data(s.property_out(row))
        _apply(row, _changes(body, PROPERTY_FIELDS))
        _save_unique(row, create=False, what=f"a property with code {row.code}")
        _record(uow, row, "property", "updated", s.property_out(row), before=before)
    return row


def delete_property(ctx: Ctx, property_id: uuid.UUID) -> None:
    """Delete a property with nothing left in it. Raises NotFound, StillReferenced (409)."""
    with unit_of_work(ctx) as uow:
        row = load_property(property_id, for_update=True)
        out = s.property_out(row)
        _record(uow, row, "property", "deleted", out, before=to_data(out))
        _delete(row, "the property")


# -- property children: one path, described by data ---------------------------------------------

@dataclass(frozen=True)
class Kind:
    model: type[AggregateModel]
    aggregate: str
    label: str
    out: Callable[[Any], msgspec.Struct]
    fields: dict[str, str]
    prepare: Callable[[Property, dict[str, Any], AggregateModel | None], None] = \
        field(default=lambda prop, values, row: None)
    # run after the new row is inserted, in the same unit of work
    created: Callable[[Ctx, Property, AggregateModel], None] = \
        field(default=lambda ctx, prop, row: None)
    # a row of this kind counts in a room type's physical rooms (a room): creating,
    # deleting or moving it to another type changes what the room type can sell
    sells: bool = False
    # run after a change with {column: value before} of the columns whose value changed (before
    # a delete: {"deleted": True}): a change of what the quote adds to the rates re-emits those
    # plans' ARI prices
    changed: Callable[[Ctx, Property, AggregateModel, dict[str, Any]], None] = \
        field(default=lambda ctx, prop, row, before: None)


MAX_NIGHTS_NAMED = 31


def _rate_plan_repriced(ctx: Ctx, prop: Property, row: AggregateModel,
                        before: dict[str, Any]) -> None:
    if before.keys() & {"package_codes", "currency"}:
        ari_push.repriced(ctx, prop, rate_plans=[row.id])


def _package_repriced(ctx: Ctx, prop: Property, row: AggregateModel,
                      before: dict[str, Any]) -> None:
    """Every plan that names the package (its code before or after the change)."""
    if not before.keys() & {"price", "calculation", "currency", "code", "deleted"}:
        return
    codes = {row.code, before.get("code")}
    plans = [pid for pid, named in RatePlan.select(RatePlan.id, RatePlan.package_codes)
             .where(RatePlan.property == prop.id).tuples() if codes & set(named or [])]
    ari_push.repriced(ctx, prop, rate_plans=plans)


def _room_type_repriced(ctx: Ctx, prop: Property, row: AggregateModel,
                        before: dict[str, Any]) -> None:
    if "max_occupancy" in before:  # the prices' occupancies
        ari_push.repriced(ctx, prop, rate_plans=ari_events.ALL, room_type_ids=[row.id])


def _rooms_changed(ctx: Ctx, prop: Property, room_types: set[uuid.UUID], *,
                   shrinking: frozenset[uuid.UUID] = frozenset()) -> None:
    """A room was created, deleted or moved to another type (its row already changed in this
    unit of work): take the nights' locks of the room types concerned, in (room type, date)
    order as every booking does, so no booking's count straddles the change and the ARI events
    follow it: the nights with rooms sold or held from the business date, and, for a room type
    with an ARI stream, every night channels hold (the full push's window from the business
    date, `ari_push.push_days`; a room type with no stream yet is one no channel holds a night
    of: PERF, a hotel's rooms made before its rates lock nothing). A room type that loses
    a room (`shrinking`) must keep at least as many rooms as it has sold and held on each of
    those nights: 409 room_type_oversold naming the nights otherwise."""
    from pms.db.locking import lock_errors
    from pms.errors import Conflict
    from pms.models.inventory import InventoryDay
    from pms.services.inventory.night_locks import lock_days

    window = ari_push.push_days(prop, None, ctx.now)
    streamed = {rt for (rt,) in AriStream.select(AriStream.id).where(
        AriStream.id.in_(list(room_types))).order_by(AriStream.id).tuples()}
    with lock_errors():
        for room_type_id in sorted(room_types, key=str):
            booked = {d for (d,) in InventoryDay.select(InventoryDay.date).where(
                (InventoryDay.room_type == room_type_id) & (InventoryDay.date >= window[0])
                & ((InventoryDay.sold + InventoryDay.held) > 0)).tuples()}
            days = sorted(booked | (set(window) if room_type_id in streamed else set()))
            if not days:
                continue
            rows = lock_days(prop.id, room_type_id, days, capacity=True)
            if room_type_id not in shrinking:
                continue
            rooms = Room.select(Room.id).where(Room.room_type == room_type_id).count()
            short = [r.date.isoformat() for r in rows if r.sold + r.held > rooms]
            if short:
                raise Conflict(
                    f"the room type would keep {rooms} rooms for more rooms sold and held by "
                    f"blocks on {', '.join(short[:MAX_NIGHTS_NAMED])}",
                    code="room_type_oversold", nights=short[:MAX_NIGHTS_NAMED])


def _room_refs(prop: Property, values: dict[str, Any], row: AggregateModel | None) -> None:
    room_type_id = values.get("room_type_id")
    if room_type_id is None:
        return
    found = RoomType.select(RoomType.id).where(
        (RoomType.id == room_type_id) & (RoomType.property == prop.id)).exists()
    if not found:
        raise ValidationFailed("room_type_id is not a room type of this property",
                               errors=[{"field": "room_type_id",
                                        "message": "unknown room type for this property"}])
    values["room_type"] = values.pop("room_type_id")


def _currency_default(prop: Property, values: dict[str, Any], row: AggregateModel | None) -> None:
    if row is None and not values.get("currency"):
        values["currency"] = prop.currency_code
    price = values.get("price")
    if price is not None and price < 0:
        raise ValidationFailed("price must not be negative",
                               errors=[{"field": "price", "message": "must be >= 0"}])
    if price is not None:  # "0.004" is refused, never rounded (pms.domain.money.exact)
        values["price"] = exact(price, values.get("currency") or getattr(row, "currency", None)
                                or prop.currency_code, "price")


def _rate_plan_refs(prop: Property, values: dict[str, Any], row: AggregateModel | None) -> None:
    _currency_default(prop, values, row)
    for policy in ("cancellation_policy", "no_show_policy"):
        fee = (values.get(policy) or {}).get("fee_value")
        if fee is not None and Decimal(str(fee)) < 0:
            raise ValidationFailed(f"{policy}.fee_value must not be negative",
                                   errors=[{"field": f"{policy}.fee_value", "message": "must be >= 0"}])
    codes = values.get("package_codes")
    if codes:
        known = {p.code for p in Package.select(Package.code).where(
            (Package.property == prop.id) & (Package.code.in_(codes)))}
        missing = sorted(set(codes) - known)
        if missing:
            raise ValidationFailed(f"unknown package codes: {', '.join(missing)}",
                                   errors=[{"field": "package_codes",
                                            "message": f"unknown: {', '.join(missing)}"}])


def _room_type_calendar(ctx: Ctx, prop: Property, row: AggregateModel) -> None:
    """A new room type's calendar rows for the horizon, in one statement (a booking
    inside the horizon finds its nights' rows and takes them in one statement)."""
    inventory_calendar.fill_horizon(prop, ctx.now, room_type_id=row.id)


ROOM_TYPE = Kind(RoomType, "room_type", "room type", s.room_type_out,
                 {"code": "code", "name": "name", "description": "description",
                  "max_occupancy": "max_occupancy", "sort_order": "sort_order"},
                 created=_room_type_calendar, changed=_room_type_repriced)
ROOM = Kind(Room, "room", "room", s.room_out,
            {"room_number": "room_number", "room_type_id": "room_type_id", "floor": "floor"},
            _room_refs, sells=True)
RATE_PLAN = Kind(RatePlan, "rate_plan", "rate plan", s.rate_plan_out,
                 {"code": "code", "name": "name", "description": "description",
                  "negotiated": "negotiated", "currency": "currency",
                  "cancellation_policy": "cancellation_policy",
                  "no_show_policy": "no_show_policy", "package_codes": "package_codes",
                  "active": "active"},
                 _rate_plan_refs, changed=_rate_plan_repriced)
ITEM = Kind(Item, "item", "item", s.item_out,
            {"code": "code", "name": "name", "category": "category", "price": "price",
             "currency": "currency"}, _currency_default)
PACKAGE = Kind(Package, "package", "package", s.package_out,
               {"code": "code", "name": "name", "price": "price", "description": "description",
                "currency": "currency", "calculation": "calculation", "category": "category"},
               _currency_default, changed=_package_repriced)
KINDS = {k.aggregate: k for k in (ROOM_TYPE, ROOM, RATE_PLAN, ITEM, PACKAGE)}


def _identity(kind: Kind, row: AggregateModel) -> str:
    ident = getattr(row, "code", None) or getattr(row, "room_number", None)
    return f"a {kind.label} {ident} in this property"


def create_child(ctx: Ctx, kind: Kind, property_id: uuid.UUID, body: msgspec.Struct) -> AggregateModel:
    """Create a room type, room, rate plan, item or package of a property.

    Raises:
        NotFound: no such property in this env.
        ValidationFailed: a reference (room type, package code) is not of this property.
        AlreadyExists: the code or room number is taken in this property.
    """
    with unit_of_work(ctx) as uow:
        prop = load_property(property_id)
        values = _changes(body, kind.fields)
        kind.prepare(prop, values, None)
        # born at version 1: its "created" event needs no version UPDATE
        row = kind.model(env_id=ctx.env_id, property=prop.id, version=1, **values)
        _save_unique(row, create=True, what=_identity(kind, row))
        kind.created(ctx, prop, row)
        if kind.sells:
            _rooms_changed(ctx, prop, {row.room_type_id})
        _record(uow, row, kind.aggregate, "created", kind.out(row))
    return row


def update_child(ctx: Ctx, kind: Kind, property_id: uuid.UUID, id_: uuid.UUID,
                 body: msgspec.Struct) -> AggregateModel:
    """Change the given fields of a property child. Raises NotFound, ValidationFailed, AlreadyExists."""
    with unit_of_work(ctx) as uow:
        prop = load_property(property_id)
        row = load_child(kind, property_id, id_, for_update=True)
        before = to_data(kind.out(row))
        values = _changes(body, kind.fields)
        kind.prepare(prop, values, row)
        was = getattr(row, "room_type_id", None)
        old = {column: getattr(row, column, None) for column in values}
        _apply(row, values)
        _save_unique(row, create=False, what=_identity(kind, row))
        kind.changed(ctx, prop, row, {c: v for c, v in old.items() if getattr(row, c, None) != v})
        if kind.sells and row.room_type_id != was:  # moved to another room type
            _rooms_changed(ctx, prop, {was, row.room_type_id}, shrinking=frozenset({was}))
        _record(uow, row, kind.aggregate, "updated", kind.out(row), before=before)
    return row


def delete_child(ctx: Ctx, kind: Kind, property_id: uuid.UUID, id_: uuid.UUID) -> None:
    """Delete a property child nothing references. Raises NotFound, StillReferenced (409)."""
    with unit_of_work(ctx) as uow:
        row = load_child(kind, property_id, id_, for_update=True)
        out = kind.out(row)
        _record(uow, row, kind.aggregate, "deleted", out, before=to_data(out))
        kind.changed(ctx, load_property(property_id), row, {"deleted": True})
        _delete(row, f"the {kind.label}")
        if kind.sells:
            _rooms_changed(ctx, load_property(property_id), {row.room_type_id},
                           shrinking=frozenset({row.room_type_id}))
