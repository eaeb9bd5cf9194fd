"""How a job is written down, for every package that queues one: its requester (kept in its
input, so its writes are audited as the caller who asked, not as the worker that runs it) and
its `hotel:pms:job:queued` event. Imports no use case: `pms.services.jobs` runs the jobs of
packages that queue through this module."""

from __future__ import annotations

from typing import Any

from pms.context import Ctx
from pms.db.uow import UnitOfWork
from pms.errors import Conflict
from pms.models.platform import Job, OutboxEvent
from pms.schemas.common import to_data
from pms.schemas.jobs import job_out

JOB_QUEUED = "hotel:pms:job:queued"
ROOMING_LIST = "rooming_list"  # pms.services.groups.room_blocks
PRIVACY_EXPORT = "privacy_export"  # pms.services.privacy.export_jobs


class JobNotFinished(Conflict):
    """Raised when the result of a job that has not finished is asked for."""

    code = "job_not_finished"


def requested_by(ctx: Ctx) -> dict[str, Any]:
    """Who asked for a job, kept in its input: the job's writes are audited as that caller
    (`as_requester`), not as the worker that happens to run it."""
    return {"requested_by": {"sub": ctx.sub, "client_kind": ctx.client_kind,
                             "request_id": ctx.request_id}}


def as_requester(ctx: Ctx, job: Job) -> Ctx:
    """The worker's context acting for the job's requester (the worker's own without one)."""
    who = (job.input or {}).get("requested_by") if isinstance(job.input, dict) else None
    if not who:
        return ctx
    return ctx.with_(sub=who["sub"], client_kind=who["client_kind"],
                     request_id=who.get("request_id") or ctx.request_id)


def record_queued(uow: UnitOfWork, job: Job) -> None:
    """The job's audit row and its `hotel:pms:job:queued` event, in the caller's transaction.

    NOTE: written here rather than through `uow.emit`, which bumps a `version` column: a job's
    stream has two versions, queued (1) and finished (2, `pms.services.jobs`).
    """
    data = to_data(job_out(job))
    uow.audit("job.queued", job, after=data)
    uow.events.append(OutboxEvent.create(
        type=JOB_QUEUED, subject=str(job.id), aggregate_type="job", aggregate_version=1,
        property_id=job.property_id, idempotency_key=f"{JOB_QUEUED}:{job.id}:1", data=data,
        traceparent=uow.ctx.traceparent, request_id=uow.ctx.request_id, time=uow.ctx.now))
