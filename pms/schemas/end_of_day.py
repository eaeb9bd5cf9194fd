"""Night audit shapes: the run (one per property and business date), its steps with counts and
timings, and the day's figures (the end-of-day log)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Any

import msgspec

from pms.domain.states import AuditRunStatus
from pms.schemas.common import Cursor, Limit, Out, Strict

OverrideReason = Annotated[str, msgspec.Meta(
    min_length=1, max_length=500, pattern=r"\S",
    description="Close a business date the property's local date has not passed yet (staff "
                "only); the reason is audited")]


class EndOfDayIn(Strict):
    business_date: date | None = None
    dry_run: bool = False
    override_reason: OverrideReason | None = None
    catch_up: Annotated[bool, msgspec.Meta(
        description="The business date is more than a day behind the property's local date: "
                    "close every missed day in order (each its own run, audited as a "
                    "catch-up); without it such a run is 409 night_audit_overdue")] = False


class EndOfDayQuery(msgspec.Struct, kw_only=True):
    limit: Limit = 50
    cursor: Cursor | None = None


class NightAuditStepOut(Out):
    name: str
    count: int
    duration_ms: float
    detail: dict[str, Any] | None = None


class NightAuditRunOut(Out):
    id: uuid.UUID | None
    property_id: uuid.UUID
    business_date: date
    status: AuditRunStatus
    dry_run: bool = False
    attempts: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    next_business_date: date | None = None
    steps: list[NightAuditStepOut] = []
    figures: dict[str, Any] | None = None
    error: str | None = None
    caught_up: list[date] | None = None  # the business dates a catch-up closed, in order


def step_out(s: object) -> NightAuditStepOut:
    return NightAuditStepOut(name=s.name, count=s.count, duration_ms=round(s.duration_ms, 2),
                             detail=s.detail)


def run_out(r: object, steps: list[Any]) -> NightAuditRunOut:
    figures = r.figures or None
    return NightAuditRunOut(
        id=r.id, property_id=r.property_id, business_date=r.business_date, status=r.status,
        attempts=r.attempts, started_at=r.started_at, finished_at=r.finished_at,
        next_business_date=(date.fromisoformat(figures["next_business_date"])
                            if figures and figures.get("next_business_date") else None),
        steps=[step_out(s) for s in sorted(steps, key=lambda s: s.position)],
        figures=figures, error=r.error)
