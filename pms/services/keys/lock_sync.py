"""The digital keys' sweeper and their lock sync, outside the request path.

- The sweeper (`sweep`, run by the `digital_keys.sweep` schedule and `pms-cli keys sweep`)
  writes EXPIRED for live keys past valid_until (a `digital_key:expired` event each; the lock
  ends them itself) and re-drives the lock commands that are due again.
- The lock sync (`sync_lock`, the `sync_digital_key` actor's work on the key's events) calls
  the lock service outside any transaction, then records what it answered in one unit of work:
  its acknowledgement is `sent`, the lock's own read-back `confirmed`, and after
  MAX_LOCK_ATTEMPTS failures `failed` (event `digital_key:lock_failed`; the sweeper keeps
  retrying pending and failed rows). A lock's own report (`record_lock_report`) confirms too.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import (
    DIGITAL_KEY_MACHINE,
    LOCK_STATE_MACHINE,
    DigitalKeyStatus,
    LockState,
)
from pms.models import DigitalKey
from pms.schemas.common import to_data
from pms.services.keys.keys import LIVE, key_out, record_change

MAX_LOCK_ATTEMPTS = 5
# a lock command still unacknowledged after this long is sent again by the sweeper
RETRY_AFTER = timedelta(minutes=1)


def expire_keys(ctx: Ctx, *, limit: int = 500) -> int:
    """Write EXPIRED (with a `digital_key:expired` event each) for the env's live keys past
    valid_until; the lock enforces the end itself, so no lock command. Safe to run on several
    hosts at once (SKIP LOCKED on PostgreSQL). Returns how many it expired."""
    with lock_errors(), unit_of_work(ctx) as uow:
        query = (DigitalKey.select().where(DigitalKey.status.in_(LIVE)
                                           & (DigitalKey.valid_until <= ctx.now))
                 .order_by(DigitalKey.valid_until).limit(limit))
        rows = list(for_update(query, skip_locked=True))
        for row in rows:
            before = to_data(key_out(row, ctx.now))
            before["status"] = row.status
            row.status = DIGITAL_KEY_MACHINE.transition(row.status, "expire").value
            row.expired_at = ctx.now
            row.save()
            record_change(uow, row, "expired", before=before)
    return len(rows)


def keys_to_sync(ctx: Ctx, *, limit: int = 200) -> list[uuid.UUID]:
    """Keys whose lock command is due again: pending or failed for longer than RETRY_AFTER, or
    sent to an online lock and never confirmed (the sweeper re-drives them)."""
    due = ctx.now - RETRY_AFTER
    with read_scope(ctx):
        query = DigitalKey.select(DigitalKey.id).where(
            (DigitalKey.updated_at <= due)
            & (DigitalKey.lock_state.in_([LockState.PENDING.value, LockState.FAILED.value])
               | ((DigitalKey.lock_state == LockState.SENT.value)
                  & (DigitalKey.revocation_path == "online"))))
        return [r.id for r in query.order_by(DigitalKey.updated_at).limit(limit)]


def sweep(ctx: Ctx, locks: Any) -> dict[str, int]:
    """The sweeper's pass over one env: expire, then re-drive due lock commands."""
    expired = expire_keys(ctx)
    synced = 0
    for key_id in keys_to_sync(ctx):
        try:
            sync_lock(ctx, key_id, locks)
            synced += 1
        except Exception:  # noqa: BLE001 - recorded on the key; the next sweep retries
            continue
    return {"expired": expired, "synced": synced}


# -- the lock sync (outside any transaction: the lock call; then one unit of work) -------------

def _commands(row: DigitalKey) -> list[str]:
    """The lock commands that bring the lock to the key's intent."""
    if row.status == DigitalKeyStatus.REVOKED:
        return ["revoke"]
    if row.status == DigitalKeyStatus.EXPIRED:
        return []  # the lock ends the key at valid_until itself
    active = row.status == DigitalKeyStatus.ACTIVE
    if row.credential_ref is None:
        return ["issue", "activate"] if active else ["issue"]
    return ["activate" if active else "deactivate"]


def sync_lock(ctx: Ctx, key_id: uuid.UUID, locks: Any) -> DigitalKey | None:
    """Send the key's intent to the lock service and record what it answered: `sent` on its
    acknowledgement, `confirmed` when the lock's own read-back shows the intended state. Run by
    the `sync_digital_key` actor (the relay's reaction to the key's events) and the sweeper;
    safe to run twice. A lock-service failure counts an attempt (at MAX_LOCK_ATTEMPTS the state
    is `failed`, event `digital_key:lock_failed`) and is raised again for the actor's retry."""
    from pms.platform.locks import EXPECTED, LocksUnavailable

    with read_scope(ctx):
        row = DigitalKey.get_or_none(DigitalKey.id == key_id)
    if row is None:
        return None
    read_version = row.version
    if row.lock_state in (LockState.PENDING, LockState.FAILED):
        commands = _commands(row)
        if not commands:
            return row
        ref = row.credential_ref
        try:
            ack = None
            for command in commands:
                ack = locks.command(command, key_id=str(row.id), credential_ref=ref,
                                    room_number=row.room_number, key_type=row.key_type,
                                    valid_from=row.valid_from, valid_until=row.valid_until,
                                    idempotency_key=f"{row.id}:{command}:{read_version}")
                ref = ack.credential_ref
        except LocksUnavailable as exc:
            _failed_attempt(ctx, key_id, read_version, str(exc.detail))
            raise
        row = _acknowledged(ctx, key_id, read_version, commands[-1], ack)
        if row is None:
            return None  # a newer intent was recorded meanwhile: its own sync follows
        read_version = row.version
    if row.lock_state == LockState.SENT and row.credential_ref:
        report = locks.read_back(row.credential_ref)
        expected = EXPECTED.get(row.lock_command)
        if report.state is not None and report.state == expected and (
                row.lock_command == "revoke" or report.valid_until == row.valid_until):
            row = _confirmed(ctx, key_id, read_version) or row
    return row


def record_lock_report(ctx: Ctx, credential_ref: str, state: str,
                       valid_until: datetime | None = None) -> DigitalKey | None:
    """A lock's own report of a credential (an event of the lock service): confirms the key's
    last command when the lock holds what it asked for (its `sent` state only: a report of an
    older state confirms nothing). Returns the key, or None for an unknown credential."""
    from pms.platform.locks import EXPECTED

    with read_scope(ctx):
        row = DigitalKey.get_or_none(DigitalKey.credential_ref == credential_ref)
    if row is None or row.lock_state != LockState.SENT:
        return row
    if state != EXPECTED.get(row.lock_command) or (
            row.lock_command != "revoke" and valid_until != row.valid_until):
        return row
    return _confirmed(ctx, row.id, row.version) or row


def _locked_if_unchanged(ctx: Ctx, key_id: uuid.UUID, version: int) -> DigitalKey | None:
    row = for_update(DigitalKey.select().where(DigitalKey.id == key_id)).first()
    return row if row is not None and row.version == version else None


def _acknowledged(ctx: Ctx, key_id: uuid.UUID, version: int, command: str, ack: Any
                  ) -> DigitalKey | None:
    with lock_errors(), unit_of_work(ctx) as uow:
        row = _locked_if_unchanged(ctx, key_id, version)
        if row is not None:
            before = to_data(key_out(row, ctx.now))
            row.lock_state = LOCK_STATE_MACHINE.transition(row.lock_state, "ack").value
            row.lock_command = command
            row.lock_sent_at = ctx.now
            row.lock_last_error = None
            row.credential_ref = ack.credential_ref
            row.revocation_path = ack.revocation_path
            row.save()
            record_change(uow, row, "lock_sent", before=before)
    return row


def _confirmed(ctx: Ctx, key_id: uuid.UUID, version: int) -> DigitalKey | None:
    with lock_errors(), unit_of_work(ctx) as uow:
        row = _locked_if_unchanged(ctx, key_id, version)
        if row is not None:
            before = to_data(key_out(row, ctx.now))
            row.lock_state = LOCK_STATE_MACHINE.transition(row.lock_state, "confirm").value
            row.lock_confirmed_at = ctx.now
            revoked = row.lock_command == "revoke"
            if revoked:
                row.revocation_confirmed_at = ctx.now
            row.save()
            record_change(uow, row, "revocation_confirmed" if revoked else "lock_confirmed",
                    before=before)
    return row


def _failed_attempt(ctx: Ctx, key_id: uuid.UUID, version: int, error: str) -> None:
    with lock_errors(), unit_of_work(ctx) as uow:
        row = _locked_if_unchanged(ctx, key_id, version)
        if row is not None:
            before = to_data(key_out(row, ctx.now))
            row.lock_attempts += 1
            row.lock_last_error = error[:500]
            gave_up = row.lock_attempts == MAX_LOCK_ATTEMPTS  # (lock_failed once, when it fails)
            if row.lock_attempts >= MAX_LOCK_ATTEMPTS:
                row.lock_state = LOCK_STATE_MACHINE.transition(row.lock_state, "fail").value
            row.save()
            record_change(uow, row, "lock_failed" if gave_up else "lock_attempt_failed",
                    before=before)


__all__ = ["MAX_LOCK_ATTEMPTS", "RETRY_AFTER", "expire_keys", "keys_to_sync",
           "record_lock_report", "sweep", "sync_lock"]
