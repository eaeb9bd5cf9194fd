"""Async job shapes (`/v1/jobs/{id}`)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pms.schemas.common import Out


class JobOut(Out):
    id: uuid.UUID
    kind: str
    status: str
    property_id: uuid.UUID | None
    input: dict[str, Any] | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    result_url: str


class JobResultOut(Out):
    job_id: uuid.UUID
    status: str
    result: dict[str, Any] | None
    error: str | None


def job_out(j: object) -> JobOut:
    return JobOut(id=j.id, kind=j.kind, status=j.status, property_id=j.property_id,
                  input=j.input, error=j.error, created_at=j.created_at,
                  started_at=j.started_at, finished_at=j.finished_at,
                  result_url=f"/v1/jobs/{j.id}/result")
