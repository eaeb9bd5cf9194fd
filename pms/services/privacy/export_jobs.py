"""The export as an asynchronous job: for a person with a long history, or a caller that would
rather not wait. `start` queues a `privacy_export` job (its `job:queued` event through the
outbox, as every job); the worker's `run` collects the rows kind by kind (the job's progress is
the kinds done of all), stores the zip in object storage under the env and the job, and leaves
the manifest and the archive's key, size and sha256 on the job's result. The archive is read
back through the profile's route (holder-scoped like the export itself).

A stored archive is a copy of a person's data and is kept only as long as the person needs to
fetch it: `expire_archives` (the `privacy.exports.expire` schedule) deletes each archive from
object storage `PMS_PRIVACY_EXPORT_ARCHIVE_DAYS` (default 7) after its job finished and marks
the job's `archive.expired_at`; a download after that answers 410 `export_expired` (ask for a
new export). Export jobs are few (one per request of a person), so the sweep reads the env's
finished export jobs and skips those already expired."""

from __future__ import annotations

import hashlib
import os
import uuid
from datetime import timedelta
from typing import Any

from pms.context import Ctx
from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import JOB_INITIAL, JobStatus
from pms.errors import NotFound, PmsError
from pms.models.platform import Job
from pms.services.job_records import PRIVACY_EXPORT, JobNotFinished, record_queued
from pms.services.privacy import export
from pms.services.profiles.guest_payment_methods import own_profile


class ExportExpired(PmsError):
    """Raised when an export's stored archive was deleted past its retention."""

    status, code, title = 410, "export_expired", "Export expired"


def archive_days() -> int:
    return int(os.environ.get("PMS_PRIVACY_EXPORT_ARCHIVE_DAYS", "7"))


def start(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID) -> Job:
    """Queue the export. Raises NotFound (no such profile, or not the guest token's own)."""
    from pms.services.privacy import access

    with unit_of_work(ctx) as uow:
        own_profile(ctx, property_id, profile_id)
        access.note(ctx, profile_id, "export")
        job = Job.create(kind=PRIVACY_EXPORT, status=JOB_INITIAL.value, property_id=property_id,
                         input={"profile_id": str(profile_id),
                                "requested_by": {"sub": ctx.sub, "client_kind": ctx.client_kind,
                                                 "request_id": ctx.request_id}})
        record_queued(uow, job)
    return job


def archive_key(job: Job) -> str:
    return f"privacy-exports/{job.env_id}/{job.id}.zip"


def run(ctx: Ctx, job: Job, *, store: Any) -> dict[str, Any]:
    """Build and store the archive (inside the job runner's guard). Returns the job's result."""
    profile_id = uuid.UUID(job.input["profile_id"])
    head, kinds = export.export(ctx, job.property_id, profile_id, reader=False)
    with unit_of_work(ctx):
        Job.update(result={"progress": {"done": len(kinds), "total": len(kinds) + 1}}).where(
            Job.id == job.id).execute()
    data = export.archive(head, kinds)
    store.put(archive_key(job), data, content_type="application/zip",
              sha256=hashlib.sha256(data).hexdigest())
    total = len(kinds) + 1
    return {"progress": {"done": total, "total": total}, "manifest": head,
            "archive": {"key": archive_key(job), "bytes": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()}}


def load(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID, job_id: uuid.UUID) -> Job:
    """The profile's export job. Raises NotFound (another profile's, or not an export)."""
    with read_scope(ctx):
        own_profile(ctx, property_id, profile_id)
        job = Job.get_or_none(Job.id == job_id)
    if (job is None or job.kind != PRIVACY_EXPORT
            or (job.input or {}).get("profile_id") != str(profile_id)):
        raise NotFound("no such export")
    return job


def download(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID, job_id: uuid.UUID, *,
             store: Any) -> bytes:
    """The stored archive. Raises NotFound; JobNotFinished (409) before the job succeeded."""
    job = load(ctx, property_id, profile_id, job_id)
    if job.status != JobStatus.SUCCEEDED:
        raise JobNotFinished(f"the job is {job.status}", job_status=job.status)
    expired = ((job.result or {}).get("archive") or {}).get("expired_at")
    if expired:
        raise ExportExpired(f"the archive was deleted at {expired}, "
                            f"{archive_days()} days after the export: ask for a new export")
    data = store.get(archive_key(job))
    if data is None:
        raise NotFound("the archive is gone")
    return data


def expire_archives(ctx: Ctx, *, store: Any) -> int:
    """Delete the env's export archives past their days; returns how many were deleted."""
    cutoff = ctx.now - timedelta(days=archive_days())
    with read_scope(ctx):
        due = [job for job in Job.select().where(
            (Job.kind == PRIVACY_EXPORT) & (Job.status == JobStatus.SUCCEEDED.value)
            & (Job.finished_at < cutoff)).order_by(Job.finished_at)
            if not ((job.result or {}).get("archive") or {}).get("expired_at")]
    for job in due:
        store.delete(archive_key(job))  # first: a failure here leaves the job to the next run
        archive = {**((job.result or {}).get("archive") or {}), "expired_at": ctx.now.isoformat()}
        with unit_of_work(ctx) as uow:
            Job.update(result={**(job.result or {}), "archive": archive}).where(
                Job.id == job.id).execute()
            uow.audit("privacy_export.archive_expired", job,
                      after={"key": archive_key(job), "days": archive_days()})
    return len(due)
