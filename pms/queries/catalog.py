"""Read side of the catalog: one row or a page of rows, and a property's catalog for the
availability searches (`property_catalog`, cached per catalog version). No writes, no
transactions of their own beyond the read scope."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol

from pms.context import Ctx
from pms.db.pagination import Page, paginate
from pms.db.scope import require_env, tenant_scope
from pms.db.statements import Statement, param
from pms.db.uow import read_scope
from pms.domain.pricing import PackageLine
from pms.errors import NotFound
from pms.models import Property
from pms.models.catalog import Package, RatePlan
from pms.models.property import RoomType
from pms.queries.lookups import load_child, load_property


class Kind(Protocol):
    """What a catalog kind (`pms.services.catalog.catalog.Kind`, the registry above this
    layer) offers a read: its model and its label."""

    model: Any
    label: str


def get_property(ctx: Ctx, property_id: uuid.UUID) -> Property:
    # PERF: one statement needs only the tenant scope (read_scope's SQLite transaction would
    # wrap it in a BEGIN and a COMMIT of its own; on PostgreSQL it is the same implicit one)
    with tenant_scope(ctx.env_id):
        return load_property(property_id)


def list_properties(ctx: Ctx, *, limit: int, cursor: str | None) -> Page[Property]:
    with read_scope(ctx):
        return paginate(Property.select(), Property, limit=limit, cursor=cursor)


def get_child(ctx: Ctx, kind: Kind, property_id: uuid.UUID, id_: uuid.UUID):  # noqa: ANN201
    with tenant_scope(ctx.env_id):  # one statement, as get_property
        return load_child(kind, property_id, id_)


def list_children(ctx: Ctx, kind: Kind, property_id: uuid.UUID, *, limit: int,
                  cursor: str | None) -> Page:
    with read_scope(ctx):
        load_property(property_id)
        model = kind.model
        return paginate(model.select().where(model.property == property_id), model,
                        limit=limit, cursor=cursor)


# -- a property's catalog for the searches, cached per version ------------------------------------
#
# PERF: a search needs the property's room types, rate plans and packages, which change
# rarely. They are kept per (env, property) in this process and used only while the property's
# catalog fingerprint, read in the same statement as the property itself on every search, is
# unchanged: the database stays the source of truth and a change is seen by the next search.
# The fingerprint of each table is (rows, sum of versions, latest updated_at) over the property's
# rows: a save stamps updated_at and an event bumps the version (one of them moves on every
# change), and a delete lowers the count.


@dataclass(frozen=True, slots=True)
class PropertyHead:
    """What a search needs of the property row itself."""

    id: uuid.UUID
    code: str
    timezone: str
    business_date: date | None


@dataclass(frozen=True, slots=True)
class RoomTypeRow:
    id: uuid.UUID
    code: str
    name: str
    max_occupancy: int


@dataclass(frozen=True, slots=True)
class RatePlanRow:
    id: uuid.UUID
    code: str
    name: str
    negotiated: bool
    currency: str
    package_codes: tuple[str, ...]
    active: bool


@dataclass(frozen=True, slots=True)
class Catalog:
    """Room types (by sort order, code), rate plans (by code) and packages (by code)."""

    room_types: tuple[RoomTypeRow, ...]
    rate_plans: tuple[RatePlanRow, ...]
    packages: dict[str, PackageLine]
    # the fingerprint this catalog was read under (room types, rate plans, packages): it moves
    # on every change of them and of the rates (a rate change is an event of its rate plan),
    # so the searches key their cached rates by it (pms.queries.availability)
    version: tuple[object, ...] = ()


def _fingerprint(table: str) -> str:
    return (f"(SELECT count(*) || '/' || coalesce(sum(version), 0) || '/' || "
            f"coalesce(CAST(max(updated_at) AS text), '') FROM {table} "
            f"WHERE env_id = %(env)s AND property_id = %(property_id)s)")


_HEAD = Statement.text("catalog.property_head", both=(
    "SELECT code, timezone, business_date, "
    + ", ".join(_fingerprint(t) for t in ("room_type", "rate_plan", "package"))
    + " FROM property WHERE env_id = %(env)s AND id = %(property_id)s"))

_ROOM_TYPES = Statement.build("catalog.room_types", lambda: (
    RoomType.select(RoomType.id, RoomType.code, RoomType.name, RoomType.max_occupancy)
    .where((RoomType.env_id == param.env) & (RoomType.property == param.property_id))
    .order_by(RoomType.sort_order, RoomType.code)))

_RATE_PLANS = Statement.build("catalog.rate_plans", lambda: (
    RatePlan.select(RatePlan.id, RatePlan.code, RatePlan.name, RatePlan.negotiated,
                    RatePlan.currency, RatePlan.package_codes, RatePlan.active)
    .where((RatePlan.env_id == param.env) & (RatePlan.property == param.property_id))
    .order_by(RatePlan.code)))

_PACKAGES = Statement.build("catalog.packages", lambda: (
    Package.select(Package.code, Package.calculation, Package.price, Package.currency)
    .where((Package.env_id == param.env) & (Package.property == param.property_id))))

CATALOG_CACHE_SIZE = 2048
_catalogs: dict[tuple[uuid.UUID, uuid.UUID], tuple[tuple[object, ...], Catalog]] = {}


def property_catalog(property_id: uuid.UUID) -> tuple[PropertyHead, Catalog]:
    """The property and its catalog, in one round trip while the cached catalog is current
    (four on a change). Call inside a read scope.

    Raises:
        NotFound: no such property in the active env.
    """
    row = _HEAD.one(property_id=property_id)
    if row is None:
        raise NotFound("no such property")
    code, timezone, business_date, *fingerprint = row
    if isinstance(business_date, str):  # SQLite
        business_date = date.fromisoformat(business_date)
    head = PropertyHead(id=property_id, code=code, timezone=timezone, business_date=business_date)
    key = (require_env(), property_id)
    cached = _catalogs.get(key)
    if cached is not None and cached[0] == tuple(fingerprint):
        return head, cached[1]
    catalog = _load_catalog(property_id, tuple(fingerprint))
    if len(_catalogs) >= CATALOG_CACHE_SIZE:
        _catalogs.clear()  # rare: more properties than the bound in one process
    _catalogs[key] = (tuple(fingerprint), catalog)
    return head, catalog


def _load_catalog(property_id: uuid.UUID, version: tuple[object, ...]) -> Catalog:
    room_types = tuple(RoomTypeRow(*r) for r in _ROOM_TYPES.typed_rows(property_id=property_id))
    plans = tuple(
        RatePlanRow(id=id_, code=code, name=name, negotiated=bool(negotiated), currency=currency,
                    package_codes=tuple(codes or ()), active=bool(active))
        for id_, code, name, negotiated, currency, codes, active
        in _RATE_PLANS.typed_rows(property_id=property_id))
    packages = {code: PackageLine(code=code, calculation=calculation, price=price,
                                  currency=currency)
                for code, calculation, price, currency
                in _PACKAGES.typed_rows(property_id=property_id)}
    return Catalog(room_types=room_types, rate_plans=plans, packages=packages, version=version)
