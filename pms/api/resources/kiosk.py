"""Kiosk configuration (issue 29; scope `kiosk`): GET and PUT (If-Match / ETag).

A terminal reads its configuration (GET is `kiosk="open"`); PUT is refused to kiosk tokens
whatever their scopes (a terminal cannot change its own configuration, nor lift its own
lockdown): it leaves `kiosk=` at the route gate's default, deny (pms.api.spec.gate, 403
`kiosk_not_allowed` before anything else runs).
"""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas import kiosk as s
from pms.services import kiosk

BASE = "/v1/properties/{property_id:uuid}/kiosk-config"


class KioskConfig:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("kiosk:read", response=s.KioskConfigOut, kiosk="open",
              summary="The property's kiosk configuration (defaults while none is stored)",
              description="The ETag header carries the configuration's version (\"0\" while "
                          "none is stored), for If-Match on PUT.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any) -> None:
        found = kiosk.get_config(req.context.ctx, property_id)
        resp.media = found.config
        resp.etag = found.etag

    @endpoint("kiosk:write", body=s.KioskConfigIn, response=s.KioskConfigOut,
              errors=(412,),
              summary="Replace the property's kiosk configuration",
              description="enabled_modes: a subset of CHECK_IN, CHECK_OUT, COLLECT_KEY, "
                          "WALK_IN without duplicates; add_on_package_codes: packages of the "
                          "property (else 422); max_keys_per_stay 1..10. If-Match with the "
                          "ETag of GET: 412 precondition_failed when it changed meanwhile. "
                          "Refused to kiosk tokens whatever their scopes (403 "
                          "kiosk_not_allowed).")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               body: s.KioskConfigIn) -> None:
        saved = kiosk.put_config(req.context.ctx, property_id, body, if_match=req.get_header("If-Match"))
        resp.media = saved.config
        resp.etag = saved.etag


ROUTES = [Route(BASE, KioskConfig)]
