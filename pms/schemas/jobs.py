"""Async job shapes (`/v1/jobs/{id}`)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

import msgspec

from pms.domain.states import JobStatus
from pms.schemas.common import Cursor, Limit, Out, Strict
from pms.schemas.end_of_day import EndOfDayIn


class JobIn(Strict):
    """Async job input: the kind and its input (the night audit is the one kind so far)."""

    kind: Literal["end_of_day", "ari_push"]
    property_id: uuid.UUID
    input: EndOfDayIn = msgspec.field(default_factory=EndOfDayIn)


class JobQuery(msgspec.Struct, kw_only=True):
    limit: Limit = 50
    cursor: Cursor | None = None


class JobOut(Out):
    id: uuid.UUID
    kind: Literal["end_of_day", "ari_push", "rooming_list", "block_bulk_cancel",
                  "block_bulk_date_change"]
    status: JobStatus
    property_id: uuid.UUID | None
    input: dict[str, Any] | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    result_url: str
    # rows done of rows to do, while a job with progress (a rooming list) runs and after
    progress: dict[str, int] | None = None


class JobResultOut(Out):
    job_id: uuid.UUID
    status: JobStatus
    result: dict[str, Any] | None
    error: str | None


def job_out(j: object) -> JobOut:
    return JobOut(id=j.id, kind=j.kind, status=j.status, property_id=j.property_id,
                  input=j.input, error=j.error, created_at=j.created_at,
                  started_at=j.started_at, finished_at=j.finished_at,
                  result_url=f"/v1/jobs/{j.id}/result",
                  progress=(j.result or {}).get("progress") if isinstance(j.result, dict)
                  else None)
