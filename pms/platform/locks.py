"""Client of the door-lock service: digital keys' commands and the lock's own reports.

Three parts with one contract, as the payments client: the `LocksClient` protocol, the embedded
in-process sandbox (`PMS_PLATFORM_URL=embedded`) and the HTTP client for the gateway
(`/proxy/locks/v1/...`). No secret crosses into the PMS: the lock service answers a command with
its own `credential_ref` (the guest app fetches a mobile credential or PIN from the lock service
with it), never the credential itself.

A command's answer (`LockAck`) is only the lock *service's* acknowledgement: the key's
`lock_state` becomes `sent`. Only the lock's own report (`read_back`, or an event of the lock
service) proves the door knows: `confirmed`. The ack also says how the door learns of a
revocation (`revocation_path`): `online` (the lock is reachable: immediate and reportable),
`denylist` (spread by wall readers), `next_guest_key` (an offline lock forgets the old card when
the next guest's card is first used) or `expiry_only` (the key stops at its valid_until).

Sandbox: MOBILE and PIN keys sit on online locks (their reads report the state at once); CARD
keys are cut for offline locks (`next_guest_key`: their read-back never confirms a revocation, so
the desk sees until when an old card may still open the door). `outage = True` makes every call
fail as a lock-service outage (tests).
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from pms.config import Settings
from pms.errors import DependencyUnavailable

LOCK_SCOPES = ("platform:locks:keys:write", "platform:locks:keys:read")
COMMANDS = ("issue", "activate", "deactivate", "revoke", "modify")
REVOCATION_PATHS = ("online", "denylist", "next_guest_key", "expiry_only")
# what the lock holds for a credential after each command (a read-back compares with it)
EXPECTED = {"issue": "disabled", "activate": "enabled", "deactivate": "disabled",
            "revoke": "removed"}


class LocksUnavailable(DependencyUnavailable):
    """Raised when the lock service cannot be reached or fails (the outcome is unknown)."""

    code = "locks_unavailable"


@dataclass(frozen=True)
class LockAck:
    credential_ref: str
    revocation_path: str


@dataclass(frozen=True)
class LockReport:
    """What the lock itself reports of a credential (None: the lock cannot tell yet)."""

    state: str | None
    valid_until: datetime | None = None


class LocksClient(Protocol):
    def command(self, command: str, *, key_id: str, credential_ref: str | None,
                room_number: str, key_type: str, valid_from: datetime, valid_until: datetime,
                idempotency_key: str) -> LockAck: ...

    def read_back(self, credential_ref: str) -> LockReport: ...


# -- embedded sandbox ---------------------------------------------------------------------------

@dataclass
class EmbeddedLocks:
    """In-process sandbox with the service's contract; replays by idempotency key."""

    outage: bool = False
    credentials: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    _by_key: dict[str, LockAck] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def command(self, command: str, *, key_id: str, credential_ref: str | None,
                room_number: str, key_type: str, valid_from: datetime, valid_until: datetime,
                idempotency_key: str) -> LockAck:
        if self.outage:
            raise LocksUnavailable("sandbox: lock service unavailable")
        if command not in COMMANDS:
            raise ValueError(f"unknown lock command {command}")
        with self._lock:
            done = self._by_key.get(idempotency_key)
            if done is not None:
                return done
            self.calls.append((command, key_id))
            ref = credential_ref or f"lk_{uuid.uuid4().hex[:24]}"
            online = key_type != "CARD"
            cred = self.credentials.setdefault(ref, {"online": online, "room": room_number})
            cred["valid_until"] = valid_until
            if command in EXPECTED:
                cred["state"] = EXPECTED[command]
            ack = LockAck(credential_ref=ref,
                          revocation_path="online" if online else "next_guest_key")
            self._by_key[idempotency_key] = ack
            return ack

    def read_back(self, credential_ref: str) -> LockReport:
        if self.outage:
            raise LocksUnavailable("sandbox: lock service unavailable")
        with self._lock:
            cred = self.credentials.get(credential_ref)
            if cred is None or not cred["online"]:
                return LockReport(state=None)  # an offline door reports nothing
            return LockReport(state=cred.get("state"), valid_until=cred.get("valid_until"))


# -- HTTP client through the gateway ------------------------------------------------------------

class HttpLocks:
    """The lock service through the gateway (`/proxy/locks/v1/...`)."""

    def __init__(self, http: Any) -> None:
        self.http = http

    def command(self, command: str, *, key_id: str, credential_ref: str | None,
                room_number: str, key_type: str, valid_from: datetime, valid_until: datetime,
                idempotency_key: str) -> LockAck:
        body = self.http.call("POST", "/key-commands", {
            "command": command, "key_id": key_id, "credential_ref": credential_ref,
            "room_number": room_number, "key_type": key_type,
            "valid_from": valid_from.isoformat(), "valid_until": valid_until.isoformat()},
            idempotency_key=idempotency_key)
        path = str(body.get("revocation_path") or "expiry_only")
        return LockAck(credential_ref=str(body["credential_ref"]),
                       revocation_path=path if path in REVOCATION_PATHS else "expiry_only")

    def read_back(self, credential_ref: str) -> LockReport:
        import urllib.parse

        body = self.http.call("GET", "/credentials/" + urllib.parse.quote(credential_ref, safe=""),
                              None)
        until = body.get("valid_until")
        return LockReport(state=body.get("state"),
                          valid_until=datetime.fromisoformat(until) if until else None)


def build(settings: Settings) -> LocksClient:
    """The embedded sandbox, or the gateway client for a real `PMS_PLATFORM_URL`."""
    if settings.embedded_platform:
        return EmbeddedLocks()
    from pms.platform.payments import GatewayHttp, machine_token

    return HttpLocks(GatewayHttp(settings.platform_url, "locks",
                                 machine_token(settings, LOCK_SCOPES),
                                 unavailable=LocksUnavailable))
