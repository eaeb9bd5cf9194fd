"""A company's terms and what they produce: its contract routing (which folio lines it
pays), its negotiated rate links, its production and its bookings.

The routes are listed in `pms.api.resources.companies.ROUTES`.
"""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.spec import endpoint
from pms.schemas.common import Page
from pms.schemas.companies import (
    CompanyBookingOut,
    CompanyBookingQuery,
    ProductionOut,
    ProductionQuery,
    RateLinksIn,
    RateLinksOut,
    RoutingIn,
    RoutingOut,
)
from pms.services.corporate import (
    production,
    rate_links,
    routing,
)


class CompanyProduction:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", query=ProductionQuery, response=ProductionOut,
              summary="The company's production: room nights and room revenue by property "
                      "and month",
              description="Staff. The nights from from_date to to_date (both included, at "
                          "most 1096 days) of the stays booked for the company (its "
                          "reservations' company_profile_id, billed to it or not) that are "
                          "CONFIRMED, CHECKED_IN or CHECKED_OUT, each at its nightly room "
                          "price, in the property's currency; sums per currency. Env-level: "
                          "property_id narrows it to one property (and is decided for it).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, profile_id: Any,
               query: ProductionQuery) -> None:
        resp.media = production.production(req.context.ctx, profile_id, query)


class CompanyBookings:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("reservations:read", query=CompanyBookingQuery,
              response=Page[CompanyBookingOut], guest="own",
              summary="The company's bookings at the property (\"our bookings\")",
              description="Stays booked for the company, billed to it or not, in booking "
                          "order; filters status, arrival_from, arrival_to, "
                          "traveler_profile_id. A company ADMIN (or the company's own "
                          "token), BOOKER or VIEWER sees every one; a TRAVELER only its own "
                          "stays; staff all. A holder not bound to the company gets 404. No "
                          "prices (they are on the reservation).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, query: CompanyBookingQuery) -> None:
        page = production.list_bookings(req.context.ctx, property_id, profile_id, query)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)


class ContractRouting:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", response=RoutingOut,
              summary="The company's contract routing: which folio lines it pays",
              description="categories and transaction_codes name the lines the company pays "
                          "(a tax line goes with the line it taxes); all null: whole folios.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any) -> None:
        resp.media = routing.get_routing(req.context.ctx, property_id, profile_id)

    @endpoint("companies:write", body=RoutingIn, response=RoutingOut,
              summary="Set the company's contract routing (staff)",
              description="e.g. {\"categories\": [\"room\", \"tax\"]}: the company pays "
                          "room nights and their taxes, the guest the incidentals. Copied "
                          "onto every stay billed to the company from now on (booking, or a "
                          "routing naming no instructions of its own); booked stays keep "
                          "theirs.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, body: RoutingIn) -> None:
        resp.media = routing.set_routing(req.context.ctx, property_id, profile_id, body)


class RateLinks:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("rate_links:read", response=RateLinksOut,
              summary="The negotiated rate plans linked to the company",
              description="The company profile's preferences.negotiated_rate_plan_ids (what "
                          "the corporate search and the rate fence read), with each plan's "
                          "code and name and the link's valid_from / valid_to (null: open); "
                          "a deleted plan drops out. Staff only.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any) -> None:
        resp.media = rate_links.get_rate_links(req.context.ctx, property_id, profile_id)

    @endpoint("rate_links:write", body=RateLinksIn, response=RateLinksOut,
              summary="Link the company to negotiated rate plans (replaces the list)",
              description="Every id must be a negotiated plan of the environment (422 on "
                          "rate_plan_ids); [] unlinks all. Either rate_plan_ids (links valid on "
                          "every date) or links, each {rate_plan_id, valid_from, valid_to} "
                          "(inclusive dates, either optional; 422 invalid_rate_link when "
                          "valid_from is after valid_to). From the next request on, the "
                          "company's corporate search offers exactly these plans, a dated "
                          "link's only for stays whose every night falls within its dates, "
                          "and a booking outside them is refused (422 "
                          "rate_link_not_valid_for_stay). The same links again change "
                          "nothing. Staff only: a company never links itself to a price.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, body: RateLinksIn) -> None:
        resp.media = rate_links.set_rate_links(req.context.ctx, property_id, profile_id, body)

