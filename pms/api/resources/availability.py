"""Availability searches over HTTP: per property, env-wide, corporate. Scope `inventory:read`
(a search writes nothing, so POST here is a read)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas import availability as s
from pms.services.inventory import availability

SEARCH_DOC = (
    "Nights are arrival_date up to (not including) departure_date, at most 90. For each room "
    "type: `available` is the number of rooms sellable on every night (min(physical - "
    "out-of-order - out-of-service, sell limit) - sold), and one offer per rate plan with "
    "nightly prices, room_total, packages_total (the plan's packages priced by their "
    "calculation), discount_total (promo_code) and total. An offer that cannot be booked lists "
    "its reasons: no_rate, closed, closed_to_arrival, closed_to_departure, min_los, max_los, "
    "over_occupancy, sold_out, allotment_exhausted (the rate plan's allotment), "
    "promo_*. include_unavailable=false leaves those out.")


class PropertyAvailability:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("inventory:read", body=s.AvailabilityIn, response=s.AvailabilityOut, guest="open",
              kiosk="open", anonymous="open",
              errors=(404, 422), summary="Search availability of a property",
              description=SEARCH_DOC + " Public (non-negotiated, active) rate plans only.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.AvailabilityIn) -> None:
        resp.media = availability.search_property(req.context.ctx, property_id, body)


class CorporateAvailability:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("inventory:read", body=s.CorporateAvailabilityIn, response=s.AvailabilityOut,
              guest="own",
              errors=(404, 422), summary="Search availability for a company",
              description=SEARCH_DOC + " With company_profile_id, only the negotiated plans in "
                          "that company's preferences.negotiated_rate_plan_ids are offered; "
                          "public plans are withheld, with no fallback (an empty list of offers "
                          "when the company has none). Without it, the public search.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.CorporateAvailabilityIn) -> None:
        resp.media = availability.search_corporate(req.context.ctx, property_id, body)


class EnvAvailability:
    policy_rows = True  # the route gate hands it the policies' row filter (by property)

    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("inventory:read", query=s.AvailabilityQuery, response=s.EnvAvailabilityOut,
              guest="open", kiosk="open", anonymous="open",
              errors=(422,), summary="Search availability across every property of the env",
              description=SEARCH_DOC + " One entry per property (at most 200), ordered by "
                          "property code; properties whose local date is past arrival_date are "
                          "left out. include_unavailable defaults to false here.")
    def on_get(self, req: falcon.Request, resp: falcon.Response,
               query: s.AvailabilityQuery) -> None:
        rows = getattr(req.context, "policy_rows", None)
        resp.media = availability.search_env(req.context.ctx, query,
                                             rows.admits if rows is not None else None)


ROUTES = [
    Route("/v1/properties/{property_id:uuid}/availability", PropertyAvailability),
    Route("/v1/properties/{property_id:uuid}/corporate-availability", CorporateAvailability),
    Route("/v1/availability", EnvAvailability),
]
