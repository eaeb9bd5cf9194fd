"""Async jobs: list and start (`/v1/jobs`), status (`/v1/jobs/{id}`) and result
(`/v1/jobs/{id}/result`, 409 until done)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.readroute import adopt_writes
from pms.api.route import Route
from pms.api.spec import endpoint
from pms.domain.states import JobStatus
from pms.schemas.common import Page
from pms.schemas.end_of_day import NightAuditRunOut
from pms.schemas.jobs import JobIn, JobOut, JobQuery, JobResultOut, job_out
from pms.services import jobs
from pms.services.references import body_reference

FINISHED = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED})


def started_or_done(resp: falcon.Response, job: Any, run: Any) -> None:
    """202 with the started job (and where to poll it), or 200 with the finished run."""
    if job is not None:
        resp.media = job_out(job)
        resp.status = 202
        resp.location = f"/v1/jobs/{job.id}"
    else:
        resp.media = run
        resp.status = 200


class JobList:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("jobs:read", query=JobQuery, response=Page[JobOut], summary="The env's jobs")
    def on_get(self, req: falcon.Request, resp: falcon.Response, query: JobQuery) -> None:
        page = jobs.list_jobs(req.context.ctx, limit=query.limit, cursor=query.cursor)
        resp.media = Page(data=[job_out(j) for j in page.items], next_cursor=page.next_cursor)

    @endpoint("jobs:write", body=JobIn, response=JobOut, status=202, also=("eod:write",),
              responses={200: NightAuditRunOut},
              summary="Start an async job (kind end_of_day: the night audit of a property)",
              description="Same as POST .../end-of-day: 202 with the job, or 200 with the run "
                          "when that date is finished or for a dry run.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, body: JobIn) -> None:
        with body_reference("property_id", "no such property"):  # the body names it
            started = jobs.start_end_of_day(req.context.ctx, body.property_id, body.input,
                                            platform=self.deps.platform)
        started_or_done(resp, *started)


class Jobs:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("jobs:read", response=JobOut, summary="One async job and its status")
    def on_get(self, req: falcon.Request, resp: falcon.Response, id: Any) -> None:  # noqa: A002
        job = jobs.get_job(req.context.ctx, id)
        if job.status in FINISHED:
            adopt_writes(req)  # the coordinator's next reads see what the worker wrote
        resp.media = job_out(job)

    @endpoint("jobs:read", response=JobResultOut, errors=(409,),
              summary="The result of a finished job (409 job_not_finished before)")
    def on_get_result(self, req: falcon.Request, resp: falcon.Response,
                      id: Any) -> None:  # noqa: A002
        resp.media = jobs.job_result(req.context.ctx, id)  # (409 before the job finished)
        adopt_writes(req)


ROUTES = [Route("/v1/jobs", JobList), Route("/v1/jobs/{id:uuid}", Jobs),
          Route("/v1/jobs/{id:uuid}/result", Jobs, "result")]
