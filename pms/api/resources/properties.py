"""Properties: `/v1/properties` and `/v1/properties/{property_id}`."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.queries import catalog as q
from pms.schemas.catalog import PropertyIn, PropertyOut, PropertyPatch, property_out
from pms.schemas.common import ListQuery, Page
from pms.services.catalog import catalog


class Properties:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("properties:read", query=ListQuery, response=Page[PropertyOut], guest="open",
              kiosk="open", anonymous="open",
              summary="List the env's properties")
    def on_get(self, req: falcon.Request, resp: falcon.Response, query: ListQuery) -> None:
        page = q.list_properties(req.context.ctx, limit=query.limit, cursor=query.cursor)
        resp.media = Page(data=[property_out(p) for p in page.items], next_cursor=page.next_cursor)

    @endpoint("properties:write", body=PropertyIn, response=PropertyOut, status=201,
              summary="Create a property", errors=(409,))
    def on_post(self, req: falcon.Request, resp: falcon.Response, body: PropertyIn) -> None:
        prop = catalog.create_property(req.context.ctx, body)
        resp.media = property_out(prop)
        resp.status = 201
        resp.location = f"/v1/properties/{prop.id}"

    @endpoint("properties:read", response=PropertyOut, summary="One property", guest="open",
              kiosk="open", anonymous="open")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any) -> None:
        resp.media = property_out(q.get_property(req.context.ctx, property_id))

    @endpoint("properties:write", body=PropertyPatch, response=PropertyOut,
              summary="Change a property (fields left out keep their values)", errors=(409,))
    def on_put_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    body: PropertyPatch) -> None:
        resp.media = property_out(catalog.update_property(req.context.ctx, property_id, body))

    on_patch_item = on_put_item

    @endpoint("properties:write", status=204, summary="Delete a property with nothing in it",
              errors=(409,))
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any) -> None:
        catalog.delete_property(req.context.ctx, property_id)
        resp.status = 204


ROUTES = [
    Route("/v1/properties", Properties),
    Route("/v1/properties/{property_id:uuid}", Properties, "item"),
]
