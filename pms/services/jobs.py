"""Asynchronous jobs (`/v1/jobs/{id}`): the night audit started from the API runs as a job.

`start_end_of_day` claims the night-audit run and queues the job in one unit of work (the run's
event and audit row are the request's); after commit the job is handed to the dispatcher: a
registered one (a worker actor) or, by default, a thread of this process. `run_job` is safe to
call twice: only a QUEUED job starts. Job bookkeeping (status, result) is infrastructure and
writes no events of its own; the night audit's steps write theirs.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

from pms.context import Ctx
from pms.db.database import db
from pms.db.locking import for_update, lock_errors
from pms.db.scope import tenant_scope
from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import JOB_INITIAL, JOB_MACHINE, JobStatus
from pms.errors import Conflict, NotFound
from pms.models import Property
from pms.models.platform import Job
from pms.schemas.common import to_data
from pms.schemas.end_of_day import EndOfDayIn, NightAuditRunOut
from pms.services.reservations import business_date as current_business_date

log = logging.getLogger("pms.jobs")
END_OF_DAY = "end_of_day"

Dispatcher = Callable[[uuid.UUID, uuid.UUID], None]  # (env_id, job_id)
_dispatcher: list[Dispatcher] = []


def set_dispatcher(fn: Dispatcher | None) -> None:
    """Register how queued jobs run (a worker actor's `.send`); None restores the thread."""
    _dispatcher.clear()
    if fn is not None:
        _dispatcher.append(fn)


class JobNotFinished(Conflict):
    """Raised when the result of a job that has not finished is asked for."""

    code = "job_not_finished"


def start_end_of_day(ctx: Ctx, property_id: uuid.UUID, body: EndOfDayIn, *, platform: Any = None
                     ) -> tuple[Job | None, NightAuditRunOut | None]:
    """Queue the night audit of a property as a job; a finished run or a dry run answers at once.

    Returns (job, None) when queued, (None, run) when the answer is immediate.

    Raises:
        NotFound: no such property.
    """
    from pms.services import end_of_day as eod

    if body.dry_run:
        return None, eod.run_night_audit(ctx, property_id, business_date=body.business_date,
                                         dry_run=True)
    with read_scope(ctx):
        prop = Property.get_or_none(Property.id == property_id)
        if prop is None:
            raise NotFound("no such property")
        day = body.business_date or current_business_date(prop, ctx.now)
    with lock_errors(), unit_of_work(ctx) as uow:
        run, done = eod.claim_in(uow, ctx, property_id, day)
        job = None
        if not done:
            job = Job.create(kind=END_OF_DAY, status=JOB_INITIAL.value, property_id=property_id,
                             input={"business_date": day.isoformat(), "run_id": str(run.id)})
            uow.after_commit(lambda: dispatch(ctx, job.id, platform))
    if job is None:
        with read_scope(ctx):
            return None, eod.run_out(run, eod._steps_of(run))
    return job, None


def dispatch(ctx: Ctx, job_id: uuid.UUID, platform: Any = None) -> None:
    if _dispatcher:
        _dispatcher[0](ctx.env_id, job_id)
        return
    thread = threading.Thread(target=_run_in_thread, args=(ctx, job_id, platform),
                              name=f"job-{job_id}", daemon=True)
    thread.start()


def _run_in_thread(ctx: Ctx, job_id: uuid.UUID, platform: Any) -> None:
    try:
        run_job(ctx, job_id, platform=platform)
    finally:
        if not db.is_closed():
            db.close()


def _set(ctx: Ctx, job_id: uuid.UUID, trigger: str, **values: Any) -> bool:
    with tenant_scope(ctx.env_id):
        db.connect(reuse_if_open=True)
        with db.atomic():
            job = for_update(Job.select().where(Job.id == job_id)).first()
            if job is None or not JOB_MACHINE.can(job.status, trigger):
                return False
            values["status"] = JOB_MACHINE.transition(job.status, trigger).value
            Job.update(**values).where(Job.id == job_id).execute()
            return True


def run_job(ctx: Ctx, job_id: uuid.UUID, *, platform: Any = None) -> None:
    """Run a queued job to its end (idempotent: a job that is not QUEUED is left alone)."""
    import datetime as dt

    from pms.services import end_of_day as eod

    if not _set(ctx, job_id, "start", started_at=dt.datetime.now(dt.UTC)):
        return
    with read_scope(ctx):
        job = Job.get_by_id(job_id)
    try:
        hooks = eod.Hooks(ledger=getattr(platform, "ledger", None) if platform else None)
        result = eod.run_night_audit(ctx, job.property_id, hooks=hooks,
                                     business_date=dt.date.fromisoformat(job.input["business_date"]),
                                     run_id=uuid.UUID(job.input["run_id"]))
        trigger = "succeed" if result.status == "DONE" else "fail"
        _set(ctx, job_id, trigger, result=to_data(result), error=result.error,
             finished_at=dt.datetime.now(dt.UTC))
    except Exception as exc:  # noqa: BLE001 - recorded on the job, never lost
        log.exception("job failed", extra={"job_id": str(job_id)})
        _set(ctx, job_id, "fail", error=f"{type(exc).__name__}: {exc}"[:2000],
             finished_at=dt.datetime.now(dt.UTC))


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
        raise JobNotFinished(f"the job is {job.status}", status=job.status)
    return {"job_id": str(job.id), "status": job.status, "result": job.result, "error": job.error}
