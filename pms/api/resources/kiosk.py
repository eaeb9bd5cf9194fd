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
from pms.services.kiosk import kiosk, kiosk_lookup

BASE = "/v1/properties/{property_id:uuid}/kiosk-config"
LOOKUP = "/v1/properties/{property_id:uuid}/kiosk/lookup"


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


class KioskLookup:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("kiosk:write", body=s.KioskLookupIn, response=s.KioskLookupOut, kiosk="open",
              errors=(409, 422, 429),
              summary="Find a stay by two identifiers and open a kiosk session for it",
              description="last_name plus confirmation_number (today's arrivals and in-house "
                          "stays) or plus room_number (in-house stays only); names compare "
                          "case-folded without accents and spaces. Every miss is the same 404 "
                          "reservation_not_found and counts against the terminal's (the "
                          "token's sub) failure budget: at 5 misses in 15 minutes the terminal "
                          "is refused for 15 minutes (429 too_many_lookups with Retry-After). "
                          "A match answers the fields a kiosk needs, the reasons the guest "
                          "cannot proceed, and kiosk_session: send it as X-Kiosk-Session on "
                          "check-in, key issue and check-out of that reservation (it idles out "
                          "after 70 s). 409 kiosk_locked in lockdown; 409 kiosk_mode_disabled "
                          "when none of CHECK_IN, COLLECT_KEY, CHECK_OUT is enabled.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.KioskLookupIn) -> None:
        found = kiosk_lookup.lookup(req.context.ctx, property_id, body)
        resp.media = s.KioskLookupOut(reservation=found.reservation, kiosk_session=found.token,
                                      idle_timeout_seconds=int(
                                          kiosk_lookup.IDLE_TIMEOUT.total_seconds()),
                                      expires_at=found.expires_at)
        resp.cache_control = ["no-store"]


ROUTES = [Route(BASE, KioskConfig), Route(LOOKUP, KioskLookup)]
