"""Distribution: `GET .../ari/digest` (a hash per room type and month, to find the
months a channel holds differently) and `POST .../ari/push` (a re-push of those months, or of
365 days, as a job). The events themselves are `hotel:pms:ari:updated` on the bus."""

from __future__ import annotations

from typing import Any

import falcon
import msgspec

from pms.api.resources.jobs import started_or_done
from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas import ari as s
from pms.schemas.jobs import JobOut
from pms.services import jobs
from pms.services.distribution import ari_push


class AriDigest:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("inventory:read", query=s.AriDigestQuery, response=s.AriDigestOut,
              errors=(404, 422), summary="ARI digest per room type and month",
              description="One SHA-256 per room type and calendar month of from..to (YYYY-MM, at "
                          "most 18 months; by default the full push's 365 nights from the "
                          "business date) over the canonical form of the month's nights from "
                          "the business date on (from_date..to_date), restrictions included "
                          "(docs/guides/distribution.md), and a prices_hash over the month's prices "
                          "per occupancy and its plans' packages: a channel compares them with "
                          "its own and asks for a re-push of the months that differ.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: s.AriDigestQuery) -> None:
        out = ari_push.digest(req.context.ctx, property_id, query.from_, query.to)
        resp.media = msgspec.convert(out, s.AriDigestOut)


class AriPush:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("inventory:write", body=s.AriPushIn, response=JobOut, status=202,
              errors=(404, 422), summary="Push ARI again, as an async job",
              description="Re-emits hotel:pms:ari:updated (full: true) for every night of the "
                          "months given, or of 365 days from the business date without "
                          "months: sellable, every rate plan's amount and restrictions. 202 "
                          "with the job (poll /v1/jobs/{id}).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.AriPushIn) -> None:
        started_or_done(resp, jobs.start_ari_push(req.context.ctx, property_id, body.months),
                        None)


ROUTES = [Route("/v1/properties/{property_id:uuid}/ari/digest", AriDigest),
          Route("/v1/properties/{property_id:uuid}/ari/push", AriPush)]
