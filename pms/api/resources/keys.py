"""Digital keys (scope `frontdesk`): issue, list, activate, deactivate.

Guest sessions act on the keys of their own stays only (`guest="own"`: another holder's keys and
stays answer 404).
"""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas import keys as s
from pms.schemas.common import Page
from pms.services.keys import keys

BASE = "/v1/properties/{property_id:uuid}/digital-keys"


class DigitalKeys:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:read", query=s.KeyQuery, response=Page[s.KeyOut], guest="own",
              summary="The digital keys of a stay",
              description="A key past its valid_until reads EXPIRED at once (the sweeper "
                          "writes it later). `lock` is the lock's side of the last command "
                          "(pending, sent, confirmed, failed); `revocation` says how and by "
                          "when a revocation takes effect.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: s.KeyQuery) -> None:
        page = keys.list_keys(req.context.ctx, property_id, query)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("frontdesk:write", body=s.KeyIn, response=s.KeyOut, status=201,
              errors=(409,), guest="own", kiosk="session",
              summary="Issue a key (INACTIVE; ACTIVE at a kiosk) for a checked-in stay",
              description="A kiosk session's key (COLLECT_KEY) is issued and activated in "
                          "one step: it opens the door when the guest walks away. "
                          "409 key_requires_checked_in unless the stay is CHECKED_IN with a "
                          "room; 409 key_limit_reached (with limit and count) when the stay "
                          "holds max_keys_per_stay live keys (kiosk config, default 2). Staff "
                          "may exceed the limit with override_reason (audited); guest and kiosk "
                          "tokens may not (403 override_not_allowed). No secret is returned or "
                          "stored: credential_ref is the lock service's reference.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.KeyIn) -> None:
        ctx = req.context.ctx
        row = keys.issue_key(ctx, property_id, body)
        resp.media = keys.key_out(row, ctx.now)
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/digital-keys/{row.id}"


class KeyTransition:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:write", response=s.KeyOut, errors=(409,), guest="own",
              summary="Activate a key (INACTIVE -> ACTIVE; an ACTIVE key is returned as it is)",
              description="409 key_not_active for a REVOKED or EXPIRED key; 409 "
                          "key_requires_checked_in when the stay is no longer in house.")
    def on_post_activate(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                         id: Any) -> None:  # noqa: A002
        ctx = req.context.ctx
        resp.media = keys.key_out(keys.activate(ctx, property_id, id), ctx.now)

    @endpoint("frontdesk:write", response=s.KeyOut, errors=(409,), guest="own",
              summary="Deactivate a key (ACTIVE -> INACTIVE, reversible by activate)",
              description="A suspension, not a revocation: activate brings the key back while "
                          "the stay is in house. REVOKED and EXPIRED are terminal (409 "
                          "key_not_active).")
    def on_post_deactivate(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                           id: Any) -> None:  # noqa: A002
        ctx = req.context.ctx
        resp.media = keys.key_out(keys.deactivate(ctx, property_id, id), ctx.now)


class RoomKeys:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:read", query=s.RoomKeyQuery, response=Page[s.KeyOut],
              summary="The live keys of a room (every stay), for staff",
              description="INACTIVE and ACTIVE keys still within their window, oldest first: "
                          "after a lost card, the keys to revoke or suspend. Staff only.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: s.RoomKeyQuery) -> None:
        page = keys.list_room_keys(req.context.ctx, property_id, query)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)


ROUTES = [
    Route(BASE, DigitalKeys),
    Route(BASE + "/live", RoomKeys),
    Route(BASE + "/{id:uuid}/activate", KeyTransition, "activate"),
    Route(BASE + "/{id:uuid}/deactivate", KeyTransition, "deactivate"),
]
