"""Property children with plain CRUD: room types, rooms, rate plans, items, packages.

One resource class per kind, built from `child_resource(kind, ...)` so every kind gets the same
five responders with its own scope and schemas.
"""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.queries import catalog as q
from pms.schemas import catalog as s
from pms.schemas.common import ListQuery, Page
from pms.services.catalog import catalog
from pms.services.catalog.catalog import Kind


def child_resource(kind: Kind, path: str, scope: str, body_in: type, body_patch: type,
                   out: type, *, guest_reads: bool = False) -> tuple[type, list[Route]]:
    """A resource class serving list/create and get/update/delete for one kind.

    `guest_reads` opens the two reads to guest sessions (the booking funnel shows room types
    and packages); writes are always staff-only.
    """
    read, write = f"{scope}:read", f"{scope}:write"
    reads_for_guests = "open" if guest_reads else "deny"
    label = kind.label

    class Resource:
        def __init__(self, deps: Any) -> None:
            self.deps = deps

        @endpoint(read, query=ListQuery, response=Page[out], summary=f"List {label}s",
                  guest=reads_for_guests,
                  kiosk=reads_for_guests, anonymous=reads_for_guests)
        def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                   query: ListQuery) -> None:
            page = q.list_children(req.context.ctx, kind, property_id, limit=query.limit,
                                   cursor=query.cursor)
            resp.media = Page(data=[kind.out(r) for r in page.items], next_cursor=page.next_cursor)

        @endpoint(write, body=body_in, response=out, status=201, summary=f"Create a {label}",
                  errors=(409,))
        def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    body: Any) -> None:
            row = catalog.create_child(req.context.ctx, kind, property_id, body)
            resp.media = kind.out(row)
            resp.status = 201
            resp.location = f"/v1/properties/{property_id}/{path}/{row.id}"

        @endpoint(read, response=out, summary=f"One {label}", guest=reads_for_guests,
                  kiosk=reads_for_guests, anonymous=reads_for_guests)
        def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                        id: Any) -> None:  # noqa: A002
            resp.media = kind.out(q.get_child(req.context.ctx, kind, property_id, id))

        @endpoint(write, body=body_patch, response=out, errors=(409,),
                  summary=f"Change a {label} (fields left out keep their values)")
        def on_put_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                        id: Any, body: Any) -> None:  # noqa: A002
            resp.media = kind.out(catalog.update_child(req.context.ctx, kind, property_id, id, body))

        on_patch_item = on_put_item

        @endpoint(write, status=204, errors=(409,), summary=f"Delete a {label} nothing refers to")
        def on_delete_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                           id: Any) -> None:  # noqa: A002
            catalog.delete_child(req.context.ctx, kind, property_id, id)
            resp.status = 204

    Resource.__name__ = Resource.__qualname__ = "".join(
        w.capitalize() for w in kind.aggregate.split("_")) + "Resource"
    base = f"/v1/properties/{{property_id:uuid}}/{path}"
    return Resource, [Route(base, Resource), Route(base + "/{id:uuid}", Resource, "item")]


RoomTypes, _rt = child_resource(catalog.ROOM_TYPE, "room-types", "properties",
                                s.RoomTypeIn, s.RoomTypePatch, s.RoomTypeOut, guest_reads=True)
Rooms, _rooms = child_resource(catalog.ROOM, "rooms", "properties",
                               s.RoomIn, s.RoomPatch, s.RoomOut)
RatePlans, _rp = child_resource(catalog.RATE_PLAN, "rate-plans", "rates",
                                s.RatePlanIn, s.RatePlanPatch, s.RatePlanOut)
Items, _items = child_resource(catalog.ITEM, "items", "properties", s.ItemIn, s.ItemPatch, s.ItemOut)
Packages, _pk = child_resource(catalog.PACKAGE, "packages", "properties",
                               s.PackageIn, s.PackagePatch, s.PackageOut, guest_reads=True)

ROUTES = [*_rt, *_rooms, *_rp, *_items, *_pk]
