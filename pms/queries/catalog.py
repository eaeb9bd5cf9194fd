"""Read side of the catalog: one row or a page of rows. No writes, no transactions of their own
beyond the read scope."""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope
from pms.models import Property
from pms.services.catalog import Kind, load_child, load_property


def get_property(ctx: Ctx, property_id: uuid.UUID) -> Property:
    with read_scope(ctx):
        return load_property(property_id)


def list_properties(ctx: Ctx, *, limit: int, cursor: str | None) -> Page[Property]:
    with read_scope(ctx):
        return paginate(Property.select(), Property, limit=limit, cursor=cursor)


def get_child(ctx: Ctx, kind: Kind, property_id: uuid.UUID, id_: uuid.UUID):  # noqa: ANN201
    with read_scope(ctx):
        return load_child(kind, property_id, id_)


def list_children(ctx: Ctx, kind: Kind, property_id: uuid.UUID, *, limit: int,
                  cursor: str | None) -> Page:
    with read_scope(ctx):
        load_property(property_id)
        model = kind.model
        return paginate(model.select().where(model.property == property_id), model,
                        limit=limit, cursor=cursor)
