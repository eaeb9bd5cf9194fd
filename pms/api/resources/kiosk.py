"""Kiosk configuration (scope `kiosk`): GET and PUT (If-Match / ETag).

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
from pms.errors import Forbidden
from pms.schemas import kiosk as s
from pms.schemas import reservations as rs
from pms.services.frontdesk import checkout
from pms.services.kiosk import kiosk, kiosk_addons, kiosk_folio, kiosk_lookup, kiosk_sessions

BASE = "/v1/properties/{property_id:uuid}/kiosk-config"
LOOKUP = "/v1/properties/{property_id:uuid}/kiosk/lookup"
ADD_ONS = "/v1/properties/{property_id:uuid}/kiosk/add-ons"
STAY = "/v1/properties/{property_id:uuid}/kiosk/reservations/{id:uuid}"


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


class KioskAddOns:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("kiosk:read", response=s.KioskAddOnList, kiosk="open", errors=(409,),
              summary="The add-ons the property offers at its kiosks, with their prices",
              description="The catalog packages named in the kiosk config's "
                          "add_on_package_codes, in that order. 409 kiosk_locked in lockdown; "
                          "409 kiosk_mode_disabled when no lookup mode is enabled.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any) -> None:
        resp.media = s.KioskAddOnList(data=kiosk_addons.list_add_ons(req.context.ctx,
                                                                     property_id))


class KioskStayAddOns:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:write", body=s.KioskAddOnIn, response=s.KioskAddOnSoldOut,
              status=201, errors=(409, 422), kiosk="session",
              summary="Sell a kiosk add-on to a checked-in stay",
              description="Posts the add-on's price for the stay (its nights and persons) "
                          "to the stay's guest folio, audited with the folio's event. 422 for "
                          "a code not on the kiosk offer; 409 add_on_requires_checked_in.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,  # noqa: A002
                body: s.KioskAddOnIn) -> None:
        sold = kiosk_addons.add_on(req.context.ctx, property_id, id, body,
                                   ledger=getattr(self.deps.platform, "ledger", None))
        resp.media = s.KioskAddOnSoldOut(add_on=sold.add_on, folio_id=sold.folio_id,
                                         charge_id=sold.charge.id, amount=sold.charge.amount,
                                         currency=sold.charge.currency)
        resp.status = 201


class KioskStayFolio:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:read", response=s.KioskFolioOut, kiosk="session", errors=(409,),
              summary="The stay's guest folio and what it owes at a check-out now",
              description="For the terminal's own session's stay (a kiosk shows it before "
                          "check-out). `owed` is the rule check-out applies: balance_due less "
                          "the company's share, and the pre-authorization a kiosk check-out "
                          "captures.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        folio, owed = kiosk_folio.read_folio(req.context.ctx, property_id, id)
        resp.media = s.KioskFolioOut(folio=folio, owed=kiosk_folio.owed_out(owed))
        resp.cache_control = ["no-store"]


class KioskStayCheckOut:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:write", body=s.KioskCheckOutIn, response=rs.ReservationOut,
              errors=(402, 409, 503), kiosk="session",
              summary="Check out at a kiosk, paying what the stay owes",
              description="Kiosk tokens only (403 kiosk_only). What the guest owes is paid "
                          "first: an AUTHORIZED pre-authorization that covers it is captured, "
                          "else the card given as payment_method_id is charged; then the stay "
                          "checks out and the session ends. 402 payment_declined (the guest "
                          "stays in house: see the desk); 409 folio_not_closable when "
                          "something is owed and nothing pays it; 409 company_billed_stay when "
                          "a company-billed guest owes a part. The plain check-out route "
                          "does the same for a kiosk token, without a card.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.KioskCheckOutIn) -> None:  # noqa: A002
        ctx = req.context.ctx
        if not kiosk_sessions.is_kiosk(ctx):
            kiosk_folio.load_stay(ctx, property_id, id)  # another env's or property's: 404
            raise Forbidden("this check-out is a kiosk's; the desk uses .../check-out",
                            code="kiosk_only")
        resp.media = rs.reservation_out(checkout.check_out(
            ctx, property_id, id, payments=getattr(self.deps.platform, "payments", None),
            ledger=getattr(self.deps.platform, "ledger", None),
            payment_method_id=body.payment_method_id))


ROUTES = [Route(BASE, KioskConfig), Route(LOOKUP, KioskLookup), Route(ADD_ONS, KioskAddOns),
          Route(STAY + "/add-ons", KioskStayAddOns), Route(STAY + "/folio", KioskStayFolio),
          Route(STAY + "/check-out", KioskStayCheckOut)]
