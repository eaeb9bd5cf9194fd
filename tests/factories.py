"""Plain factory functions with sensible defaults; they go through the services (and so write
outbox and audit rows like any other change)."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import msgspec

from pms.context import Ctx
from pms.schemas import catalog as s
from pms.schemas.profiles import ProfileIn
from pms.services import catalog, profiles
from tests.helpers import random_ref


def make_property(ctx: Ctx, **over: Any) -> Any:
    body = {"propertyCode": random_ref("P").upper(), "timezone": "Europe/Berlin",
            "currencyCode": "EUR", "name": "Hotel Test", "languages": ["en", "de"]}
    body.update(over)
    return catalog.create_property(ctx, msgspec.convert(body, s.PropertyIn))


def make_room_type(ctx: Ctx, property_id: uuid.UUID, **over: Any) -> Any:
    body = {"code": random_ref("RT"), "name": "Double", "max_occupancy": 2}
    body.update(over)
    return catalog.create_child(ctx, catalog.ROOM_TYPE, property_id, msgspec.convert(body, s.RoomTypeIn))


def make_room(ctx: Ctx, property_id: uuid.UUID, room_type_id: uuid.UUID, **over: Any) -> Any:
    body = {"room_number": random_ref("R")[-6:], "room_type_id": str(room_type_id)}
    body.update(over)
    return catalog.create_child(ctx, catalog.ROOM, property_id, msgspec.convert(body, s.RoomIn))


def make_rate_plan(ctx: Ctx, property_id: uuid.UUID, **over: Any) -> Any:
    body = {"code": random_ref("BAR"), "name": "Best available"}
    body.update(over)
    return catalog.create_child(ctx, catalog.RATE_PLAN, property_id, msgspec.convert(body, s.RatePlanIn))


def make_item(ctx: Ctx, property_id: uuid.UUID, **over: Any) -> Any:
    body = {"code": random_ref("IT"), "name": "Water", "category": "mini bar", "price": "3.50"}
    body.update(over)
    return catalog.create_child(ctx, catalog.ITEM, property_id, msgspec.convert(body, s.ItemIn))


def make_package(ctx: Ctx, property_id: uuid.UUID, **over: Any) -> Any:
    body = {"code": random_ref("PK"), "name": "Breakfast", "price": str(Decimal("15.00")),
            "calculation": "PER_PERSON_PER_NIGHT"}
    body.update(over)
    return catalog.create_child(ctx, catalog.PACKAGE, property_id, msgspec.convert(body, s.PackageIn))


def make_profile(ctx: Ctx, property_id: uuid.UUID, **over: Any) -> Any:
    body = {"first_name": "Ada", "last_name": "Lovelace", "email": f"{random_ref('g')}@example.com"}
    body.update(over)
    row, _ = profiles.ensure_profile(ctx, property_id, msgspec.convert(body, ProfileIn))
    return row
