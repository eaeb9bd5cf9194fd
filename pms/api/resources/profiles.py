"""Guest and company profiles under a property."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.folds import hand_back_profile
from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.profiles import LoyaltyNumberIn, ProfileIn, ProfileOut, profile_out
from pms.services.privacy import access
from pms.services.profiles import profiles


class Profiles:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("profiles:write", body=ProfileIn, response=ProfileOut, status=201, guest="own",
              also_status=(200,), errors=(409,),
              summary="Create or ensure a profile",
              description="The same email (case-insensitive) or external_ref returns the "
                          "existing profile with 200 instead of creating another, to a caller "
                          "holding profiles:read; without it, 409 profile_exists.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: ProfileIn) -> None:
        row, created = profiles.ensure_profile(req.context.ctx, property_id, body)
        if not created:
            hand_back_profile(req.context.ctx)
        resp.media = profile_out(row)
        resp.status = 201 if created else 200
        resp.location = f"/v1/properties/{property_id}/profiles/{row.id}"

    @endpoint("profiles:read", response=ProfileOut, summary="One profile", guest="own",
              description="The read is counted in the person's access journal (GET "
                          ".../personal-data/accesses), unless the person reads their own.")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any) -> None:  # noqa: A002
        resp.media = profile_out(access.read_profile(req.context.ctx, property_id, id))


class LoyaltyNumber:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    # staff only: a loyalty number earns points and tier benefits, so it is set by those who
    # checked it (the front desk, the loyalty service's machine token), never by its holder
    @endpoint("profiles:write", body=LoyaltyNumberIn, response=ProfileOut,
              summary="Set the loyalty number",
              description="Staff and machine tokens only: a guest or traveler session gets 403 "
                          "guest_not_allowed, on its own profile as on any other.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
               body: LoyaltyNumberIn) -> None:  # noqa: A002
        resp.media = profile_out(profiles.set_loyalty_number(req.context.ctx, property_id, id, body))


ROUTES = [
    Route("/v1/properties/{property_id:uuid}/profiles", Profiles),
    Route("/v1/properties/{property_id:uuid}/profiles/{id:uuid}", Profiles, "item"),
    Route("/v1/properties/{property_id:uuid}/profiles/{id:uuid}/loyalty-number", LoyaltyNumber),
]
