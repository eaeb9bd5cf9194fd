"""Digital keys: request and response shapes."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec

from pms.schemas.common import ListQuery, Out, Strict

KeyType = Literal["MOBILE", "CARD", "PIN"]
Reason = Annotated[str, msgspec.Meta(min_length=3, max_length=500)]


class KeyIn(Strict):
    reservation_id: uuid.UUID
    key_type: KeyType
    override_reason: Reason | None = msgspec.field(default=None)
    # the profile the key is for (a companion sharing the room); the stay's guest when omitted
    holder_profile_id: uuid.UUID | None = None


class KeyQuery(ListQuery):
    reservation_id: uuid.UUID


class RoomKeyQuery(ListQuery):
    room_number: Annotated[str, msgspec.Meta(min_length=1, max_length=16)]


class LockStateOut(Out):
    state: str
    command: str
    attempts: int
    last_error: str | None
    sent_at: datetime | None
    confirmed_at: datetime | None


class RevocationOut(Out):
    reason: str
    revoked_at: datetime
    path: str | None
    effective_no_later_than: datetime | None
    confirmed_at: datetime | None


class KeyOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    reservation_id: uuid.UUID
    room_number: str
    key_type: str
    status: str
    valid_from: datetime
    valid_until: datetime
    credential_ref: str | None
    lock: LockStateOut
    revocation: RevocationOut | None
    pair_id: uuid.UUID | None
    replaces_key_id: uuid.UUID | None
    holder_profile_id: uuid.UUID | None
    issued_by: str
    override_reason: str | None
    created_at: datetime
    updated_at: datetime
