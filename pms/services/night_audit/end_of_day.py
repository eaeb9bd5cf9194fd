"""The night audit of one property for one business date: observable, resumable, idempotent.

One `NightAuditRun` row per (env, property, business date) (unique): a second run answers with the
first's result. Steps run in order, each in its own unit of work that also writes its
`NightAuditStep` row, one outbox event and one audit row, so a crash rolls back only the step in
progress and a re-run resumes after the last finished step. Room charges are set-based (a few
queries plus batched inserts for all in-house stays), so the cost grows with in-house stays, not
with the history; a partial unique index keeps one room charge per stay and night regardless.
Platform calls (ledger, housekeeping fan-out) happen after commit.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import peewee

from pms.clock import local_today
from pms.context import Ctx
from pms.db.database import db
from pms.db.locking import for_update, lock_errors
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.states import (
    AUDIT_RUN_INITIAL,
    AUDIT_RUN_MACHINE,
    HK_MACHINE,
    AuditRunStatus,
    HkStatus,
    ReservationStatus,
)
from pms.errors import Conflict, NotFound
from pms.failures import public_error
from pms.models import Property, Reservation, Room
from pms.models.end_of_day import NightAuditRun, NightAuditStep
from pms.schemas.common import to_data
from pms.schemas.end_of_day import NightAuditRunOut, NightAuditStepOut, run_out
from pms.services.cashiering import folios as night_charges
from pms.services.cashiering.ledger_postings import send_postings
from pms.services.inventory import allotments, inventory_calendar
from pms.services.night_audit import lateness, reports
from pms.services.reservations.reservations import business_date as current_business_date

log = logging.getLogger("pms.night_audit")

STEPS = ("no_shows", "room_charges", "housekeeping", "figures", "block_cut_offs", "roll_date")
Progress = Callable[[str, str, int], None]  # (step, "start" | "done" | "skip", count)


class NightAuditUnderWay(Conflict):
    """Raised when a second start of the night audit of one property and business date races
    the first one's start (409: the run is already under way; its id is in `run_id`)."""

    code = "end_of_day_in_progress"


class SimulatedCrash(BaseException):
    """Test-only: the process 'dies' inside a step (BaseException, so nothing marks it FAILED)."""


@dataclass
class Hooks:
    """Injected collaborators and test hooks (no monkeypatching)."""

    ledger: Any = None
    # Housekeeping's stayover fan-out is driven by the relay from the housekeeping_done event;
    # a caller may also pass fan_out_stayovers here to run it right after the step commits.
    fan_out: Callable[[uuid.UUID, uuid.UUID, date], int] | None = None
    crash_in: str | None = None  # raise SimulatedCrash inside this step, before it commits
    progress: Progress | None = None
    # Test-only: step name -> exceptions raised inside that step, one per attempt, before it
    # commits (e.g. SQLite's "database is locked"), to prove the retry and the FAILED mark.
    fail_in: dict[str, list[BaseException]] = field(default_factory=dict)


def steps_of(run: NightAuditRun) -> list[NightAuditStep]:
    return list(NightAuditStep.select().where(NightAuditStep.run == run.id))


def _out(run: NightAuditRun) -> NightAuditRunOut:
    return run_out(run, steps_of(run))


def in_house(property_id: uuid.UUID, night: date) -> peewee.ModelSelect:
    """Stays occupying `night` (CHECKED_IN, arrival <= night < departure)."""
    return Reservation.select().where(
        (Reservation.property == property_id)
        & (Reservation.status == ReservationStatus.CHECKED_IN.value)
        & (Reservation.arrival_date <= night) & (Reservation.departure_date > night))


def due_no_shows(property_id: uuid.UUID, night: date) -> peewee.ModelSelect:
    return Reservation.select().where(
        (Reservation.property == property_id)
        & (Reservation.status == ReservationStatus.CONFIRMED.value)
        & (Reservation.arrival_date <= night))


# -- steps: each runs inside its unit of work and returns (count, detail) ----------------------

def _step_no_shows(uow: UnitOfWork, prop: Property, day: date, hooks: Hooks
                   ) -> tuple[int, dict[str, Any]]:
    from pms.schemas import reservations as rs
    from pms.services.cashiering.folios import close_settled_folios
    from pms.services.reservations.reservations import record
    from pms.services.reservations.stays import apply_no_show

    rows = list(for_update(due_no_shows(prop.id, day).order_by(Reservation.id)))
    fees = []
    for row in rows:
        before = to_data(rs.reservation_out(row))
        apply_no_show(row, day)
        fee_line = night_charges.post_no_show_fee(row, day)
        if fee_line is not None:
            fees.append(str(fee_line.amount))
        close_settled_folios(row, now=uow.ctx.now)
        record(uow, row, "no_show", before=before)
    return len(rows), {"fees": fees}


def _step_room_charges(uow: UnitOfWork, prop: Property, day: date, hooks: Hooks,
                       run: NightAuditRun) -> tuple[int, dict[str, Any]]:
    posted = night_charges.post_night(prop, day, run_id=run.id)
    if posted.posting_id is not None:
        ledger, ctx = hooks.ledger, uow.ctx
        uow.after_commit(lambda: send_postings(ctx, ledger, [posted.posting_id]))
    return posted.stays, {"lines": posted.lines, "total": str(posted.total),
                          "already_posted": posted.skipped}


def _step_housekeeping(uow: UnitOfWork, prop: Property, day: date, hooks: Hooks
                       ) -> tuple[int, dict[str, Any]]:
    dirty_from = [s.value for s in HkStatus if HK_MACHINE.can(s, "dirty")
                  and HK_MACHINE.transition(s, "dirty") == HkStatus.DIRTY and s != HkStatus.DIRTY]
    # The occupied rooms' ids first, then the UPDATE by that list: two statements that stay
    # linear whatever the planner believes. The single UPDATE ... WHERE id IN (<in-house
    # subquery>) ran past the 5 s statement timeout in `make bench` (5,000 stays, 5,264 rooms)
    # when the statistics had been taken while the tables were nearly empty: a join it
    # believes tiny may be planned as a nested loop.
    rooms = [room for (room,) in in_house(prop.id, day).select(Reservation.room)
             .where(Reservation.room.is_null(False)).tuples()]
    changed = 0
    if rooms:
        changed = (Room.update(hk_status=HkStatus.DIRTY.value)
                   .where(Room.id.in_(rooms) & Room.hk_status.in_(dirty_from)).execute())
    occupied = len(rooms)
    if hooks.fan_out is not None:
        fan_out, env_id = hooks.fan_out, uow.ctx.env_id
        uow.after_commit(lambda: fan_out(env_id, prop.id, day))
    return occupied, {"set_dirty": changed}


def _step_figures(uow: UnitOfWork, prop: Property, day: date, hooks: Hooks,
                  run: NightAuditRun) -> tuple[int, dict[str, Any]]:
    no_show_step = NightAuditStep.get_or_none((NightAuditStep.run == run.id)
                                              & (NightAuditStep.name == "no_shows"))
    figures = reports.day_figures(prop, day, no_shows=no_show_step.count if no_show_step else None)
    figures["next_business_date"] = (day + timedelta(days=1)).isoformat()
    run.figures = figures
    run.save()
    return figures["rooms_sold"], {}


def overstays(property_id: uuid.UUID, day: date) -> list[dict[str, Any]]:
    """Guests still CHECKED_IN on or after their departure date `day` (call inside a scope)."""
    rows = (Reservation.select(Reservation.id, Reservation.confirmation_number,
                               Reservation.departure_date, Room.room_number)
            .join(Room, peewee.JOIN.LEFT_OUTER, on=(Reservation.room == Room.id))
            .where((Reservation.property == property_id)
                   & (Reservation.status == ReservationStatus.CHECKED_IN.value)
                   & (Reservation.departure_date <= day))
            .order_by(Reservation.departure_date, Reservation.confirmation_number).dicts())
    return [{"reservation_id": str(r["id"]), "confirmation_number": r["confirmation_number"],
             "room_number": r["room_number"], "departure_date": r["departure_date"].isoformat()}
            for r in rows]


def _step_roll_date(uow: UnitOfWork, prop: Property, day: date, hooks: Hooks,
                    run: NightAuditRun) -> tuple[int, dict[str, Any]]:
    # Decision (docs/guides/cashiering-and-night-audit.md): guests in house past their
    # departure do not block the date roll, since one late guest must not stop a hotel's
    # business date, but they are never rolled over silently: they are listed in the step's
    # detail and the run's figures (so in the night_audit events), and logged as a warning.
    late = overstays(prop.id, day)
    if late:
        log.warning("night audit: %d guest(s) in house past departure", len(late),
                    extra={"property_id": str(prop.id), "business_date": day.isoformat(),
                           "reservations": [r["reservation_id"] for r in late]})
        run.figures = {**(run.figures or {}), "overstays": late}
        run.save()
    target = day + timedelta(days=1)
    rolled = (Property.update(business_date=target)
              .where((Property.id == prop.id)
                     & (Property.business_date.is_null() | (Property.business_date < target)))
              .execute())
    # The calendar keeps its horizon from the new business date (pms.services.inventory.inventory_calendar):
    # one statement, ON CONFLICT DO NOTHING, so in steady state it adds the night that entered
    # the window for each room type, and a room type that lacked rows gets them all.
    added = inventory_calendar.fill(prop.id, target, inventory_calendar.horizon_days())
    # allotments whose release period ends on the new date give their held rooms back to the
    # house: their nights' ARI events say so (pms.services.inventory.allotments)
    allotments.touch_released(prop.id, target)
    return rolled, {"business_date": target.isoformat(), "overstays": late,
                    "calendar_rows_added": added}


def _step_block_cut_offs(uow: UnitOfWork, prop: Property, day: date, hooks: Hooks
                         ) -> tuple[int, dict[str, Any]]:
    """blocks whose cut-off date is the business date the audit rolls to (or
    earlier) give their unpicked rooms back to the house."""
    from pms.services.groups.block_changes import cut_off_due_in

    codes = cut_off_due_in(uow, prop.id, day + timedelta(days=1))
    return len(codes), {"blocks": codes}


STEP_FUNCS: dict[str, Callable[..., tuple[int, dict[str, Any]]]] = {
    "no_shows": _step_no_shows, "room_charges": _step_room_charges,
    "housekeeping": _step_housekeeping, "figures": _step_figures,
    "block_cut_offs": _step_block_cut_offs, "roll_date": _step_roll_date,
}
NEEDS_RUN = {"room_charges", "figures", "roll_date"}


def _record(uow: UnitOfWork, run: NightAuditRun, action: str, *, reason: str | None = None
            ) -> None:
    uow.record("night_audit", action, run, to_data(_out(run)), property_id=run.property_id,
               reason=reason)


def claim_in(uow: UnitOfWork, ctx: Ctx, prop_id: uuid.UUID, day: date, *,
             override_reason: str | None = None) -> tuple[NightAuditRun, bool]:
    """Inside a unit of work: the run row of (property, day), created RUNNING or resumed;
    (run, True) when it is DONE already (then nothing is written). `override_reason` (a
    business date closed before the property's local date passed it) is the `reason` of the
    run's `night_audit.started` audit row.

    Raises:
        NightAuditUnderWay (409 end_of_day_in_progress): a concurrent start created the row
            first (PostgreSQL; SQLite writers are serialized). The caller's transaction stays
            usable, so the API answers 409 instead of a 500 IntegrityError.
    """
    run = for_update(NightAuditRun.select().where(
        (NightAuditRun.property == prop_id) & (NightAuditRun.business_date == day))).first()
    done = run is not None and run.status == AuditRunStatus.DONE
    if run is None:
        run = NightAuditRun(env_id=ctx.env_id, property=prop_id, business_date=day,
                            status=AUDIT_RUN_INITIAL.value, started_at=ctx.now)
        try:
            # A savepoint: on PostgreSQL a concurrent first start's insert makes this one wait
            # for it and then fail on the run's unique key; the savepoint keeps the caller's
            # transaction usable so the answer is a clear 409, not an IntegrityError (500).
            with db.atomic():
                run.save(force_insert=True)
        except peewee.IntegrityError:
            other = NightAuditRun.get_or_none((NightAuditRun.property == prop_id)
                                              & (NightAuditRun.business_date == day))
            raise NightAuditUnderWay(
                f"the night audit of {day} is already under way", retry_after=5,
                run_id=str(other.id) if other else None, business_date=day.isoformat()) from None
        _record(uow, run, "started", reason=override_reason)
    elif not done:
        run.status = AUDIT_RUN_MACHINE.transition(run.status, "resume").value
        run.attempts += 1
        run.error = None
        run.save()
        _record(uow, run, "resumed")
    return run, done


def _claim(ctx: Ctx, prop_id: uuid.UUID, day: date, override_reason: str | None = None
           ) -> tuple[NightAuditRun, bool]:
    """Claim the run for a runner that runs it here and now (CLI, job): one that lost the
    race to create the row resumes it instead (its steps serialize on the run's lock)."""
    try:
        with lock_errors(), unit_of_work(ctx) as uow:
            run, done = claim_in(uow, ctx, prop_id, day, override_reason=override_reason)
    except NightAuditUnderWay:
        with lock_errors(), unit_of_work(ctx) as uow:
            run, done = claim_in(uow, ctx, prop_id, day, override_reason=override_reason)
    return run, done


def _run_step(ctx: Ctx, run_id: uuid.UUID, name: str, position: int, hooks: Hooks) -> bool:
    """Run one step unless it is done already (then write nothing). Returns whether it ran."""
    started = time.perf_counter()
    with lock_errors(), unit_of_work(ctx) as uow:
        run = for_update(NightAuditRun.select().where(NightAuditRun.id == run_id)).get()
        todo = not NightAuditStep.select().where((NightAuditStep.run == run.id)
                                                 & (NightAuditStep.name == name)).exists()
        if todo:
            prop = Property.get_by_id(run.property_id)
            args = (uow, prop, run.business_date, hooks) + ((run,) if name in NEEDS_RUN else ())
            count, detail = STEP_FUNCS[name](*args)
            if hooks.crash_in == name:
                raise SimulatedCrash(f"simulated crash inside step {name}")
            if hooks.fail_in.get(name):
                raise hooks.fail_in[name].pop(0)
            NightAuditStep.create(run=run.id, name=name, position=position, count=count,
                                  duration_ms=(time.perf_counter() - started) * 1000,
                                  detail=detail)
            _record(uow, run, f"{name}_done")
    return todo


def run_night_audit(ctx: Ctx, property_id: uuid.UUID, *, business_date: date | None = None,
                    dry_run: bool = False, hooks: Hooks | None = None,
                    run_id: uuid.UUID | None = None,
                    override_reason: str | None = None,
                    catch_up: bool = False) -> NightAuditRunOut:
    """Run (or resume, or answer the finished) night audit of a property; with `catch_up`,
    then every later business date the property's local date has passed, in order (each its
    own run, audited as a catch-up), answering the last run with `caught_up` listing them.

    Args:
        run_id: a run already claimed (the API claims it with the job; the job runs it).
        business_date: the day to close; the property's current business date by default.
        dry_run: report what would be done and write nothing (the calendar is not checked).
        override_reason: close a business date the property's local date has not passed yet
            (audited with this reason); without it such a date is 409 business_date_not_over.
        hooks: ledger client, housekeeping fan-out, progress callback, test crash hook.

    Raises:
        NotFound: no such property. Busy (503): another runner holds the run row too long.
        NightAuditUnderWay (409 end_of_day_in_progress): a concurrent first start won.
        NightAuditOverdue (409 night_audit_overdue): the business date is more than a day
            behind the local date and `catch_up` was not asked for.
    """
    out = _run_night_audit(ctx, property_id, business_date=business_date, dry_run=dry_run,
                           hooks=hooks, run_id=run_id, override_reason=override_reason,
                           catch_up=catch_up)
    caught_up = [out.business_date] if catch_up and not dry_run else []
    while caught_up and out.status == AuditRunStatus.DONE:
        with read_scope(ctx):
            prop = Property.get_by_id(property_id)
            day, local = current_business_date(prop, ctx.now), local_today(ctx.now, prop.timezone)
        if day >= local:
            break
        out = _run_night_audit(ctx, property_id, business_date=day, dry_run=False,
                               hooks=hooks, run_id=None,
                               override_reason=lateness.reason(day, local), catch_up=True)
        caught_up.append(out.business_date)
    if caught_up:
        out.caught_up = caught_up
    return out


def _run_night_audit(ctx: Ctx, property_id: uuid.UUID, *, business_date: date | None,
                     dry_run: bool, hooks: Hooks | None, run_id: uuid.UUID | None,
                     override_reason: str | None, catch_up: bool) -> NightAuditRunOut:
    hooks = hooks or Hooks()
    with read_scope(ctx):
        prop = Property.get_or_none(Property.id == property_id)
        if prop is None:
            raise NotFound("no such property")
        day = business_date or current_business_date(prop, ctx.now)
        if catch_up and override_reason is None:  # each late day's run says why
            override_reason = lateness.late_reason(prop, day, ctx.now)
        if run_id is None:
            check_closable(prop, day, ctx.now, override_reason=override_reason,
                           dry_run=dry_run, catch_up=catch_up)
        if dry_run:
            return preview(prop, day)
        claimed = NightAuditRun.get_or_none(NightAuditRun.id == run_id) if run_id else None
    if claimed is not None and claimed.status != AuditRunStatus.FAILED:
        run, done = claimed, claimed.status == AuditRunStatus.DONE
    else:
        run, done = _claim(ctx, property_id, day, override_reason)
    if not done:
        try:
            for position, name in enumerate(STEPS):
                if hooks.progress:
                    hooks.progress(name, "start", 0)
                ran = _retrying(functools.partial(_run_step, ctx, run.id, name, position, hooks))
                if hooks.progress:
                    hooks.progress(name, "done" if ran else "skip", 0)
            with unit_of_work(ctx) as uow:
                run = for_update(NightAuditRun.select().where(NightAuditRun.id == run.id)).get()
                if run.status != AuditRunStatus.DONE:
                    run.status = AUDIT_RUN_MACHINE.transition(run.status, "finish").value
                    run.finished_at = ctx.now
                    run.save()
                    _record(uow, run, "completed")
        except SimulatedCrash:
            raise
        except BaseException as exc:
            # Any failure (a lock that outlasted the retries, a bug, a worker's time limit) ends
            # the run FAILED, so it is visibly re-runnable instead of RUNNING forever; an
            # interrupt is re-raised once the run is marked.
            _mark_failed(ctx, run.id, public_error(exc, log, "night audit",
                                                   property_id=str(property_id),
                                                   run_id=str(run.id)))
            if not isinstance(exc, Exception):
                raise
    with read_scope(ctx):
        return _out(NightAuditRun.get_by_id(run.id))


class BusinessDateNotOver(Conflict):
    """Raised when a run would close a business date the property's local calendar date has
    not passed yet (the audit would post room nights and no-show fees for nights not lived)."""

    code = "business_date_not_over"


def check_closable(prop: Property, day: date, now: datetime, *,
                   override_reason: str | None = None, dry_run: bool = False,
                   catch_up: bool = False) -> None:
    """Only the property's current business date can be closed (a date far ahead rolled the
    property there for good), and only once the property's local date has passed it. A date
    that already has a run is accepted as it is: a finished one answers with itself, an
    unfinished one resumes. A property never audited (no business date of its own: it is on
    its local date) may also close the day before its local date, named explicitly: its first
    audit then lands it on the calendar. Call inside a read scope.

    Raises:
        Conflict (409 business_date_not_current): another date, without a run; names the
            current date.
        BusinessDateNotOver (409 business_date_not_over): the local date at the property is
            the business date or earlier, and no `override_reason` was given (a dry run is
            not refused: it writes nothing).
        NightAuditOverdue (409 night_audit_overdue): the business date is more than a day
            behind the local date, without `catch_up` (`lateness`; a dry run is not refused).
    """
    current = current_business_date(prop, now)
    local = local_today(now, prop.timezone)
    if NightAuditRun.select(NightAuditRun.id).where(
            (NightAuditRun.property == prop.id) & (NightAuditRun.business_date == day)).exists():
        return
    if prop.business_date is None and day == local - timedelta(days=1):
        # A property never audited is on its local date; its first audit may close the day
        # before, named explicitly, and so land on the calendar (its business date becomes
        # the local date) instead of starting a day ahead of it.
        return
    if day != current:
        raise Conflict(f"only the property's current business date ({current}) can be closed, "
                       f"not {day}", code="business_date_not_current",
                       current_business_date=current.isoformat())
    if not dry_run:
        lateness.check_on_time(day, local, catch_up=catch_up)
    if day >= local and override_reason is None and not dry_run:
        first = (f"; a property never audited may close {local - timedelta(days=1)} "
                 "(name it as business_date)") if prop.business_date is None else ""
        raise BusinessDateNotOver(
            f"the business date {day} is not over at the property (its local date is "
            f"{local}): the night audit closes it once the local date has passed it, or "
            f"with an override that names its reason{first}", business_date=day.isoformat(),
            local_date=local.isoformat())


def _mark_failed(ctx: Ctx, run_id: uuid.UUID, error: str) -> None:
    """Mark a RUNNING run FAILED (retried while the database is busy; never raises: a run left
    RUNNING is still resumed by the next start, it is only less visible)."""
    def mark() -> None:
        with unit_of_work(ctx) as uow:
            run = for_update(NightAuditRun.select().where(NightAuditRun.id == run_id)).get()
            if not AUDIT_RUN_MACHINE.can(run.status, "fail"):
                return
            run.status = AUDIT_RUN_MACHINE.transition(run.status, "fail").value
            run.error = error[:2000]
            run.save()
            _record(uow, run, "failed")

    try:
        _retrying(mark)
    except Exception:  # noqa: BLE001 - logged; the run stays RUNNING and resumable
        log.exception("could not mark the night audit run FAILED", extra={"run_id": str(run_id)})


# A step is one short transaction that rolls back whole, so repeating it is safe. On SQLite a
# writer that still finds the file locked after the busy timeout (another process's long write,
# or a read snapshot that cannot be upgraded) gets "database is locked"; on PostgreSQL a lock
# timeout or deadlock. Both are waited out a few times before the run is marked FAILED.
RETRY_DELAYS_S = (0.2, 0.5, 1.0, 2.0)


def is_busy(exc: BaseException) -> bool:
    """A lock failure worth retrying (PostgreSQL lock timeout/deadlock, SQLite busy/locked)."""
    from pms.db.locking import LockTimeout, is_lock_failure

    if isinstance(exc, LockTimeout):
        return True
    if isinstance(exc, peewee.OperationalError):
        text = str(exc).lower()
        return is_lock_failure(exc) or "database is locked" in text or "database is busy" in text
    return False


def _retrying(fn: Callable[[], Any]) -> Any:
    for delay in RETRY_DELAYS_S:
        try:
            return fn()
        except Exception as exc:
            if not is_busy(exc):
                raise
            log.warning("night audit: database busy, retrying in %.1f s (%s)", delay, exc)
            time.sleep(delay)
    return fn()


def preview(prop: Property, day: date) -> NightAuditRunOut:
    """The dry run: what each step would do (call inside a read scope). Writes nothing."""
    existing = NightAuditRun.get_or_none((NightAuditRun.property == prop.id)
                                         & (NightAuditRun.business_date == day))
    if existing is not None and existing.status == AuditRunStatus.DONE:
        out = _out(existing)
        out.dry_run = True
        return out
    pending = night_charges.preview_night(prop, day)
    occupied = in_house(prop.id, day).where(Reservation.room.is_null(False)).count()
    from pms.services.groups.block_changes import due_for_cut_off

    due_blocks = due_for_cut_off(prop.id, day + timedelta(days=1))
    steps = [
        NightAuditStepOut(name="no_shows", count=due_no_shows(prop.id, day).count(), duration_ms=0),
        NightAuditStepOut(name="room_charges", count=pending.stays, duration_ms=0,
                          detail={"lines": pending.lines, "total": str(pending.total),
                                  "already_posted": pending.skipped}),
        NightAuditStepOut(name="housekeeping", count=occupied, duration_ms=0),
        NightAuditStepOut(name="figures", count=0, duration_ms=0),
        NightAuditStepOut(name="block_cut_offs", count=len(due_blocks), duration_ms=0,
                          detail={"blocks": [str(b) for b in due_blocks]}),
        NightAuditStepOut(name="roll_date", count=1, duration_ms=0,
                          detail={"business_date": (day + timedelta(days=1)).isoformat(),
                                  "overstays": overstays(prop.id, day)}),
    ]
    return NightAuditRunOut(id=None, property_id=prop.id, business_date=day, status="PREVIEW",
                            dry_run=True, steps=steps, next_business_date=day + timedelta(days=1))


def list_runs(ctx: Ctx, property_id: uuid.UUID, *, limit: int, cursor: str | None
              ) -> tuple[list[NightAuditRunOut], str | None]:
    """The end-of-day log of a property, oldest first (cursor pages)."""
    from pms.db.pagination import paginate
    from pms.services.catalog.catalog import load_property

    with read_scope(ctx):
        load_property(property_id)
        page = paginate(NightAuditRun.select().where(NightAuditRun.property == property_id),
                        NightAuditRun, limit=limit, cursor=cursor)
        return [_out(r) for r in page.items], page.next_cursor
