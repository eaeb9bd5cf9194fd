"""A fiscal document's state at its fiscal provider (pms.services.cashiering.fiscalization)."""

from __future__ import annotations

import uuid
from typing import Literal

from pms.schemas.common import Out


class FiscalizationOut(Out):
    """PENDING until the provider answered (`attempts`, `last_error` while it cannot be
    reached), then ACCEPTED with the provider's `signature`, `signature_counter` and
    `signed_at`, or REJECTED / CORRECTION_NEEDED with the reason in `last_error`."""

    document_id: uuid.UUID
    kind: str
    number: str
    state: Literal["PENDING", "SUBMITTED", "ACCEPTED", "REJECTED", "CORRECTION_NEEDED"]
    provider: str
    attempts: int
    last_error: str | None = None
    submitted_at: str | None = None
    signature: str | None = None
    signature_counter: int | None = None
    signed_at: str | None = None
    transaction_ref: str | None = None
