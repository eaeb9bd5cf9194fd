"""Kiosk admission: what a kiosk token must show before a kiosk action runs.

Every kiosk action checks, on the server and per route, the property's kiosk config: lockdown
refuses it (409 kiosk_locked), a mode not in enabled_modes too (409 kiosk_mode_disabled). The
actions on a reservation (check-in, key issue, check-out) also need the terminal's live session
for that reservation (`admit`): the `X-Kiosk-Session` a lookup returned, of this terminal
(`sub`), this property and this reservation, not ended, used within the last IDLE_TIMEOUT (and
no older than MAX_AGE). A valid session for another reservation answers 404, as for a
reservation that does not exist; a missing, unknown, foreign, ended or idle session 403
kiosk_session_invalid (the terminal starts over with a lookup). Each admitted use moves the
session's idle clock. Callers are inside their own unit of work; nothing here runs for a token
that is not a kiosk's.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta

from pms.context import Ctx
from pms.db.locking import for_update
from pms.errors import KioskLocked, KioskModeDisabled, KioskSessionInvalid, NotFound
from pms.models import KioskConfig, KioskSession

# NEC's kiosks: 60 s idle plus a 10 s countdown (research capabilities-beyond §2, KI5)
IDLE_TIMEOUT = timedelta(seconds=70)
MAX_AGE = timedelta(minutes=15)
# how long a dead session's row is kept after it could last be used (MAX_AGE): a day, to
# answer "which terminal looked this guest up" beside the audit journal, which keeps the rest
SESSION_RETENTION = timedelta(days=1)
CHECK_IN, CHECK_OUT, COLLECT_KEY, WALK_IN = "CHECK_IN", "CHECK_OUT", "COLLECT_KEY", "WALK_IN"
LOOKUP_MODES = frozenset({CHECK_IN, CHECK_OUT, COLLECT_KEY})


def purge_dead_sessions(ctx: Ctx) -> int:
    """Delete the env's session rows that can no longer be used (older than MAX_AGE) and are
    past SESSION_RETENTION: every lookup writes one, so without this the table only grows
    (periodic housekeeping, run per env by the relay's purge). Returns how many."""
    from pms.db.database import db
    from pms.db.scope import tenant_scope

    cutoff = ctx.now - MAX_AGE - SESSION_RETENTION
    with tenant_scope(ctx.env_id), db.atomic():
        return int(KioskSession.delete().where(
            (KioskSession.env_id == ctx.env_id) & (KioskSession.created_at < cutoff)).execute())


def is_kiosk(ctx: Ctx) -> bool:
    return ctx.client_kind == "kiosk"


def digest(token: str) -> str:
    """What is stored of a session token (never the token itself)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def kiosk_modes(property_id: uuid.UUID) -> tuple[bool, frozenset[str]]:
    """(lockdown, enabled modes) of the property (no config: not locked, no mode enabled)."""
    row = (KioskConfig.select(KioskConfig.lockdown, KioskConfig.enabled_modes)
           .where(KioskConfig.property == property_id).first())
    if row is None:
        return False, frozenset()
    return bool(row.lockdown), frozenset(row.enabled_modes or ())


def require_modes(property_id: uuid.UUID, modes: frozenset[str] | str) -> frozenset[str]:
    """Refuse a kiosk action while locked down, or when none of `modes` is enabled. Returns the
    enabled modes. Call inside a scope.

    Raises:
        KioskLocked (409 kiosk_locked). KioskModeDisabled (409 kiosk_mode_disabled).
    """
    wanted = frozenset({modes}) if isinstance(modes, str) else modes
    lockdown, enabled = kiosk_modes(property_id)
    if lockdown:
        raise KioskLocked("the kiosk is locked down: please see the front desk")
    if not wanted & enabled:
        raise KioskModeDisabled(f"the kiosk mode {'/'.join(sorted(wanted))} is not enabled "
                                "at this property", modes=sorted(wanted))
    return enabled


def admit(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID, mode: str) -> None:
    """Let a kiosk token act on `reservation_id` in `mode` (a no-op for every other token).
    Inside the action's unit of work, before it loads the reservation.

    Raises:
        KioskLocked, KioskModeDisabled (409). KioskSessionInvalid (403): no live session of
            this terminal and property. NotFound: the session is for another reservation.
    """
    if not is_kiosk(ctx):
        return
    require_modes(property_id, mode)
    token = ctx.kiosk_session
    if not token:
        raise KioskSessionInvalid("a kiosk action needs the X-Kiosk-Session of a lookup")
    session = for_update(KioskSession.select().where(
        (KioskSession.token_digest == digest(token)) & (KioskSession.terminal == ctx.sub)
        & (KioskSession.property == property_id))).first()
    now = ctx.now
    if (session is None or session.ended_at is not None or session.reservation_id is None
            or now - session.last_seen_at > IDLE_TIMEOUT or now - session.created_at > MAX_AGE):
        raise KioskSessionInvalid("the kiosk session is unknown, ended or timed out: start "
                                  "again with a lookup")
    if session.reservation_id != reservation_id:
        raise NotFound("no such reservation")
    (KioskSession.update(last_seen_at=now)
     .where(KioskSession.id == session.id).execute())


def end_session(ctx: Ctx, property_id: uuid.UUID) -> None:
    """End the kiosk token's session (check-out: the stay is over). Inside the caller's unit
    of work, after `admit`; the session's token is refused from then on (403)."""
    token = ctx.kiosk_session
    if not is_kiosk(ctx) or not token:
        return
    (KioskSession.update(ended_at=ctx.now)
     .where((KioskSession.token_digest == digest(token)) & (KioskSession.terminal == ctx.sub)
            & (KioskSession.property == property_id) & KioskSession.ended_at.is_null())
     .execute())


def require_terminal_property(ctx: Ctx, property_id: uuid.UUID) -> None:
    """A kiosk action without a session (the walk-in): the terminal must serve this property
    (bound at its first lookup; a terminal that never looked anything up is not bound yet).
    Inside a scope. Raises Forbidden (403 terminal_other_property)."""
    from pms.errors import Forbidden
    from pms.models import KioskTerminal

    if not is_kiosk(ctx):
        return
    row = (KioskTerminal.select(KioskTerminal.property_id)
           .where(KioskTerminal.terminal == ctx.sub).first())
    if row is not None and row.property_id is not None and row.property_id != property_id:
        raise Forbidden("this kiosk terminal serves another property",
                        code="terminal_other_property")
