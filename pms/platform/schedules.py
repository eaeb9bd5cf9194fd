"""Client of the platform's schedule service (SPEC: schedules are delegated to it).

Three parts with one contract, as the payments client: the `SchedulesClient` protocol, the
embedded in-process sandbox (`PMS_PLATFORM_URL=embedded`) and the HTTP client for the gateway
(`/proxy/schedules/v1/...`). `register` declares one recurring task of the service (its name,
interval and what it does) with an idempotent PUT, so every host may register at start-up.

The service's own processes run the same schedules themselves (pms.scheduling), claimed tick by
tick in the database, so a trigger from the schedule service and a host's own loop never run one
tick twice; a deployment without the schedule service still sweeps.
"""

from __future__ import annotations

import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Protocol

from pms.config import Settings
from pms.errors import DependencyUnavailable

SCHEDULE_SCOPES = ("platform:schedules:write",)


class SchedulesUnavailable(DependencyUnavailable):
    """Raised when the schedule service cannot be reached or fails."""

    code = "schedules_unavailable"


class SchedulesClient(Protocol):
    def register(self, name: str, *, every_seconds: int, description: str,
                 command: str) -> None: ...


@dataclass
class EmbeddedSchedules:
    """In-process sandbox: keeps what was registered (a repeat replaces it)."""

    outage: bool = False
    registered: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def register(self, name: str, *, every_seconds: int, description: str,
                 command: str) -> None:
        if self.outage:
            raise SchedulesUnavailable("sandbox: schedule service unavailable")
        with self._lock:
            self.registered[name] = {"every_seconds": every_seconds,
                                     "description": description, "command": command}


class HttpSchedules:
    """The schedule service through the gateway (`/proxy/schedules/v1/...`)."""

    def __init__(self, http: Any) -> None:
        self.http = http

    def register(self, name: str, *, every_seconds: int, description: str,
                 command: str) -> None:
        self.http.call("PUT", "/schedules/" + urllib.parse.quote(f"hotel-pms.{name}", safe=""), {
            "service": "hotel-pms", "name": name, "interval_seconds": every_seconds,
            "description": description, "target": {"kind": "command", "command": command}})


def build(settings: Settings) -> SchedulesClient:
    """The embedded sandbox, or the gateway client for a real `PMS_PLATFORM_URL`."""
    if settings.embedded_platform:
        return EmbeddedSchedules()
    from pms.platform.payments import GatewayHttp, machine_token

    return HttpSchedules(GatewayHttp(settings.platform_url, "schedules",
                                     machine_token(settings, SCHEDULE_SCOPES),
                                     unavailable=SchedulesUnavailable))
