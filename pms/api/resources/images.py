"""Property images: `POST|GET /v1/properties/{property_id}/images` (upload as
multipart/form-data, up to 10 MiB on this route alone) and `DELETE .../images/{id}`."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.multipart import MULTIPART
from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.common import ListQuery, Page
from pms.schemas.settings import ImageOut, ImageUpload, image_out
from pms.services.catalog import images

# the form around a 10 MiB file (boundaries, part headers, caption) fits in the extra 64 KiB
UPLOAD_LIMIT = images.MAX_IMAGE_BYTES + 64 * 1024


class PropertyImages:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("properties:read", query=ListQuery, response=Page[ImageOut], guest="open",
              summary="A property's images")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: ListQuery) -> None:
        page = images.list_images(req.context.ctx, property_id, limit=query.limit,
                                  cursor=query.cursor)
        resp.media = Page(data=[image_out(r) for r in page.items], next_cursor=page.next_cursor)

    @endpoint("properties:write", body=ImageUpload, body_media=MULTIPART, max_body=UPLOAD_LIMIT,
              response=ImageOut, status=201, errors=(409,),
              summary="Upload an image (JPEG, PNG or WebP by content; at most 10 MiB)",
              description="multipart/form-data with `file`, optional `caption` and `primary`; "
              "a primary image replaces the property's previous primary one.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: ImageUpload) -> None:
        row = images.upload_image(req.context.ctx, property_id, body,
                                  store=self.deps.platform.storage)
        resp.media = image_out(row)
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/images/{row.id}"

    @endpoint("properties:write", status=204, summary="Delete an image (and its object)")
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       id: Any) -> None:  # noqa: A002
        images.delete_image(req.context.ctx, property_id, id, store=self.deps.platform.storage)
        resp.status = 204


ROUTES = [Route("/v1/properties/{property_id:uuid}/images", PropertyImages),
          Route("/v1/properties/{property_id:uuid}/images/{id:uuid}", PropertyImages, "item")]
