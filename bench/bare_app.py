"""The bare-Falcon baseline: a constant JSON document, served under the same gunicorn settings
(`pms.gunicorn_conf`) as the service, so the ratio isolates what the service adds per request."""

from __future__ import annotations

import falcon

BODY = b'{"id":"00000000-0000-4000-8000-000000000001","propertyCode":"BARE1","name":"Bare"}'


class Constant:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.data = BODY
        resp.content_type = falcon.MEDIA_JSON


app = falcon.App()
app.add_route("/", Constant())
