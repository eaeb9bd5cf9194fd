"""Async jobs: status (`/v1/jobs/{id}`) and result (`/v1/jobs/{id}/result`, 409 until done)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.spec import endpoint
from pms.routes import Route
from pms.schemas.jobs import JobOut, JobResultOut, job_out
from pms.services import jobs


class Jobs:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("jobs:read", response=JobOut, summary="One async job and its status")
    def on_get(self, req: falcon.Request, resp: falcon.Response, id: Any) -> None:  # noqa: A002
        resp.media = job_out(jobs.get_job(req.context.ctx, id))

    @endpoint("jobs:read", response=JobResultOut, errors=(409,),
              summary="The result of a finished job (409 job_not_finished before)")
    def on_get_result(self, req: falcon.Request, resp: falcon.Response,
                      id: Any) -> None:  # noqa: A002
        resp.media = jobs.job_result(req.context.ctx, id)


ROUTES = [Route("/v1/jobs/{id:uuid}", Jobs), Route("/v1/jobs/{id:uuid}/result", Jobs, "result")]
