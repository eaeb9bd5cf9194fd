"""Asynchronous jobs (`/v1/jobs/{id}`): the night audit started from the API runs as a job.

`start_end_of_day` claims the night-audit run and queues the job in one unit of work: the job
row, its outbox event `hotel:pms:job:queued` and its audit row commit with the run's own pair,
so a job answered 202 is never lost. The relay hands the event to the internal subscriber that
sends the `run_job` actor (workers.subscriptions); nothing is sent to a broker after commit.

`run_job` is safe to call twice: a finished job is left alone, a QUEUED one starts, a RUNNING
one is resumed only when the caller says its previous runner died (a redelivered message; the
night audit resumes step by step). Whatever escapes the run (an error, a time limit) marks the
job FAILED, and `fail_job` does the same for a job whose message was given up on: a job never
stays QUEUED or RUNNING because its run crashed.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.states import JOB_INITIAL, JOB_MACHINE, JobStatus
from pms.errors import Forbidden, NotFound
from pms.failures import public_error
from pms.models import Property
from pms.models.platform import Job, OutboxEvent
from pms.schemas.common import to_data
from pms.schemas.end_of_day import EndOfDayIn, NightAuditRunOut
from pms.schemas.jobs import job_out
from pms.services.job_records import (
    PRIVACY_EXPORT,
    ROOMING_LIST,
    JobNotFinished,
    as_requester,
    record_queued,
)
from pms.services.reservations.reservations import business_date as current_business_date

log = logging.getLogger("pms.jobs")
END_OF_DAY = "end_of_day"
# a block's bulk cancel and date change (pms.services.groups.block_bulk)
BLOCK_JOBS = frozenset({ROOMING_LIST, "block_bulk_cancel", "block_bulk_date_change"})
ARI_PUSH = "ari_push"  # (pms.services.distribution.ari_push)
AUDIT_EXPORT = "fiscal_audit_export"  # (pms.services.cashiering.fiscal_export.AUDIT_EXPORT)


def start_end_of_day(ctx: Ctx, property_id: uuid.UUID, body: EndOfDayIn, *, platform: Any = None
                     ) -> tuple[Job | None, NightAuditRunOut | None]:
    """Queue the night audit of a property as a job; a finished run or a dry run answers at once.

    Returns (job, None) when queued, (None, run) when the answer is immediate.

    Raises:
        NotFound: no such property.
        Forbidden (403 override_not_allowed): `override_reason` from a caller that is not
            staff (a user token without a holder).
        Conflict (409 business_date_not_current, business_date_not_over,
            night_audit_overdue): see `end_of_day.check_closable`; `catch_up` closes the
            missed days in one job.
    """
    from pms.services.night_audit import end_of_day as eod
    from pms.services.night_audit import lateness

    if body.override_reason is not None and (ctx.client_kind != "user"
                                             or ctx.holder_id is not None):
        raise Forbidden("only staff (a user token) may override the night audit's calendar",
                        code="override_not_allowed")
    if body.dry_run:
        return None, eod.run_night_audit(ctx, property_id, business_date=body.business_date,
                                         dry_run=True)
    with read_scope(ctx):
        prop = Property.get_or_none(Property.id == property_id)
        if prop is None:
            raise NotFound("no such property")
        day = body.business_date or current_business_date(prop, ctx.now)
        eod.check_closable(prop, day, ctx.now, override_reason=body.override_reason,
                           catch_up=body.catch_up)
        late = lateness.late_reason(prop, day, ctx.now) if body.catch_up else None
    with lock_errors(), unit_of_work(ctx) as uow:
        run, done = eod.claim_in(uow, ctx, property_id, day,
                                 override_reason=body.override_reason or late)
        job = None
        if not done or late:
            job = Job.create(kind=END_OF_DAY, status=JOB_INITIAL.value, property_id=property_id,
                             input={"business_date": day.isoformat(), "run_id": str(run.id),
                                    **({"catch_up": True} if late else {})})
            record_queued(uow, job)
    if job is None:
        with read_scope(ctx):
            return None, eod.run_out(run, eod.steps_of(run))
    return job, None


JOB_FINISHED = {"succeed": "succeeded", "fail": "failed"}  # trigger -> the event's action


def _transition(ctx: Ctx, job_id: uuid.UUID, trigger: str, *, allowed: tuple[JobStatus, ...],
                **values: Any) -> bool:
    """Apply `trigger` to the job if its status is one of `allowed` (under its row lock).
    A job that finishes records `hotel:pms:job:succeeded` or `hotel:pms:job:failed` (the job
    as `GET /v1/jobs/{id}` answers it, its result included) in the same transaction, so a
    caller learns a push's, a rooming list's or a bulk change's outcome without polling."""
    with unit_of_work(ctx) as uow:
        job = for_update(Job.select().where(Job.id == job_id)).first()
        if job is None or job.status not in allowed or not JOB_MACHINE.can(job.status, trigger):
            return False
        values["status"] = JOB_MACHINE.transition(job.status, trigger).value
        Job.update(**values).where(Job.id == job_id).execute()
        if trigger in JOB_FINISHED:
            _record_finished(uow, Job.get_by_id(job_id), JOB_FINISHED[trigger])
        return True


def _record_finished(uow: UnitOfWork, job: Job, action: str) -> None:
    """The finished job's audit row and event, with its result: its stream's second and last
    version (the first is `job:queued`; running is no change a subscriber acts on)."""
    event_type = f"hotel:pms:job:{action}"
    data = {**to_data(job_out(job)), "result": job.result}
    uow.audit(f"job.{action}", job, after=data)
    uow.events.append(OutboxEvent.create(
        type=event_type, subject=str(job.id), aggregate_type="job", aggregate_version=2,
        property_id=job.property_id, idempotency_key=f"{event_type}:{job.id}:2", data=data,
        traceparent=uow.ctx.traceparent, request_id=uow.ctx.request_id, time=uow.ctx.now))


def _take(ctx: Ctx, job_id: uuid.UUID, *, resume: bool) -> bool:
    """QUEUED -> RUNNING; or, with `resume`, a RUNNING job whose runner died is taken over."""
    if _transition(ctx, job_id, "start", allowed=(JobStatus.QUEUED,),
                   started_at=dt.datetime.now(dt.UTC)):
        return True
    if not resume:
        return False
    with read_scope(ctx):
        job = Job.get_or_none(Job.id == job_id)
    return job is not None and job.status == JobStatus.RUNNING


def run_job(ctx: Ctx, job_id: uuid.UUID, *, platform: Any = None, resume: bool = False) -> None:
    """Run a queued job to its end (idempotent: a finished job is left alone).

    Args:
        resume: the previous delivery of this job's message died mid-run (a broker
            redelivery): a RUNNING job is resumed (the night audit skips its finished steps).
            Without it a RUNNING job belongs to a live runner and is left alone.

    Raises:
        whatever the database raises while taking the job (the job stays QUEUED, the message
        is retried; `fail_job` ends it when retries run out).
    """
    from pms.services.night_audit import end_of_day as eod

    if not _take(ctx, job_id, resume=resume):
        return
    try:
        with read_scope(ctx):
            job = Job.get_by_id(job_id)
        if job.kind == ARI_PUSH:  # an ARI re-push (pms.services.distribution.ari_push)
            _run_ari_push(ctx, job)
            return
        if job.kind in BLOCK_JOBS:
            _run_block_job(ctx, job)
            return
        if job.kind == PRIVACY_EXPORT:  # a person's data (pms.services.privacy.export_jobs)
            _run_privacy_export(ctx, job, platform)
            return
        if job.kind == AUDIT_EXPORT:  # an auditor's export (pms.services.cashiering.fiscal_export)
            _run_audit_export(ctx, job, platform)
            return
        hooks = eod.Hooks(ledger=getattr(platform, "ledger", None) if platform else None)
        result = eod.run_night_audit(ctx, job.property_id, hooks=hooks,
                                     business_date=dt.date.fromisoformat(job.input["business_date"]),
                                     run_id=uuid.UUID(job.input["run_id"]),
                                     catch_up=bool(job.input.get("catch_up")))
    except BaseException as exc:
        # NOTE: BaseException on purpose: a time limit or a shutdown interrupt must not leave
        # the job RUNNING; the interrupt is re-raised after the job is marked.
        fail_job(ctx, job_id, public_error(exc, log, "job", job_id=str(job_id)))
        if not isinstance(exc, Exception):
            raise
        return
    trigger = "succeed" if result.status == "DONE" else "fail"
    _transition(ctx, job_id, trigger, allowed=(JobStatus.RUNNING,), result=to_data(result),
                error=result.error, finished_at=dt.datetime.now(dt.UTC))


def start_ari_push(ctx: Ctx, property_id: uuid.UUID, months: list[str] | None) -> Job:
    """Queue an ARI re-push of `months` ("YYYY-MM"), or of 365 days from the
    business date, with its `job:queued` event. Raises NotFound, ValidationFailed."""
    from pms.services.distribution import ari_push

    wanted = ari_push.check_push(ctx, property_id, months)
    with unit_of_work(ctx) as uow:
        job = Job.create(kind=ARI_PUSH, status=JOB_INITIAL.value, property_id=property_id,
                         input={"months": wanted})
        record_queued(uow, job)
    return job


def _run_ari_push(ctx: Ctx, job: Job) -> None:
    """Run an ARI push job (inside `run_job`'s guard: what escapes marks it FAILED)."""
    from pms.services.distribution import ari_push

    result = ari_push.run_push(ctx, job.property_id, (job.input or {}).get("months"))
    _transition(ctx, job.id, "succeed", allowed=(JobStatus.RUNNING,), result=result,
                finished_at=dt.datetime.now(dt.UTC))


def _run_privacy_export(ctx: Ctx, job: Job, platform: Any) -> None:
    from pms.services.privacy import export_jobs

    store = getattr(platform, "storage", None)
    if store is None:
        raise RuntimeError("a privacy export needs the object storage")
    result = export_jobs.run(as_requester(ctx, job), job, store=store)
    _transition(ctx, job.id, "succeed", allowed=(JobStatus.RUNNING,), result=result,
                finished_at=dt.datetime.now(dt.UTC))


def _run_audit_export(ctx: Ctx, job: Job, platform: Any) -> None:
    from pms.services.cashiering import fiscal_export

    store = getattr(platform, "storage", None)
    if store is None:
        raise RuntimeError("an auditor's export needs the object storage")
    result = fiscal_export.run(ctx, job, store=store)
    _transition(ctx, job.id, "succeed", allowed=(JobStatus.RUNNING,), result=result,
                finished_at=dt.datetime.now(dt.UTC))


def _run_block_job(ctx: Ctx, job: Job) -> None:
    """a block's rooming list (pms.services.groups.room_blocks) or bulk cancel or
    date change (pms.services.groups.block_bulk), its progress kept on the job's result as it
    goes."""
    from pms.services.groups.block_bulk import run_bulk
    from pms.services.groups.rooming_lists import run_rooming_list

    def progress(done: int, total: int) -> None:
        with unit_of_work(ctx):
            Job.update(result={"progress": {"done": done, "total": total}}).where(
                Job.id == job.id).execute()

    run = run_rooming_list if job.kind == ROOMING_LIST else run_bulk
    result = run(as_requester(ctx, job), job, progress=progress)
    _transition(ctx, job.id, "succeed", allowed=(JobStatus.RUNNING,), result=result,
                finished_at=dt.datetime.now(dt.UTC))


def fail_job(ctx: Ctx, job_id: uuid.UUID, error: str) -> bool:
    """Mark a QUEUED or RUNNING job FAILED with `error` (a finished job is left alone).
    Returns whether the job changed."""
    return _transition(ctx, job_id, "fail", allowed=(JobStatus.QUEUED, JobStatus.RUNNING),
                       error=error[:2000], finished_at=dt.datetime.now(dt.UTC))


def list_jobs(ctx: Ctx, *, limit: int, cursor: str | None) -> Any:
    """The env's jobs, oldest first (cursor pages)."""
    from pms.db.pagination import paginate

    with read_scope(ctx):
        return paginate(Job.select(), Job, limit=limit, cursor=cursor)


def get_job(ctx: Ctx, job_id: uuid.UUID) -> Job:
    """One job of the env. Raises NotFound."""
    with read_scope(ctx):
        job = Job.get_or_none(Job.id == job_id)
        if job is None:
            raise NotFound("no such job")
        return job


def job_result(ctx: Ctx, job_id: uuid.UUID) -> dict[str, Any]:
    """The result of a finished job. Raises NotFound, JobNotFinished (409)."""
    job = get_job(ctx, job_id)
    if job.status not in (JobStatus.SUCCEEDED, JobStatus.FAILED):
        raise JobNotFinished(f"the job is {job.status}", job_status=job.status)
    return {"job_id": str(job.id), "status": job.status, "result": job.result, "error": job.error}
