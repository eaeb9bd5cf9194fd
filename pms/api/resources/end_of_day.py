"""The night audit over HTTP: `POST .../end-of-day` queues it as an async job (202 with the job;
200 with the result when that date's run is finished, or with the plan for a dry run) and
`GET .../end-of-day` lists the end-of-day log."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.resources.jobs import started_or_done
from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.common import Page
from pms.schemas.end_of_day import EndOfDayIn, EndOfDayQuery, NightAuditRunOut
from pms.schemas.jobs import JobOut
from pms.services import jobs
from pms.services.night_audit import end_of_day


class EndOfDay:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("eod:write", body=EndOfDayIn, response=JobOut, status=202, errors=(503,),
              responses={200: NightAuditRunOut},
              summary="Run the night audit as an async job",
              description="202 with the job (poll /v1/jobs/{id}; its result is the run). A date "
                          "whose run finished answers 200 with that run; dry_run=true answers "
                          "200 with what each step would do and writes nothing.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: EndOfDayIn) -> None:
        started_or_done(resp, *jobs.start_end_of_day(req.context.ctx, property_id, body,
                                                     platform=self.deps.platform))

    @endpoint("eod:read", query=EndOfDayQuery, response=Page[NightAuditRunOut],
              summary="The end-of-day log (one run per business date, with the day's figures)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: EndOfDayQuery) -> None:
        rows, cursor = end_of_day.list_runs(req.context.ctx, property_id, limit=query.limit,
                                            cursor=query.cursor)
        resp.media = Page(data=rows, next_cursor=cursor)


ROUTES = [Route("/v1/properties/{property_id:uuid}/end-of-day", EndOfDay)]
