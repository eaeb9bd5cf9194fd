"""Dramatiq actors. Importing this module binds the global broker (the one sanctioned import-time
side effect: `dramatiq workers.actors` imports it, and `@actor` binds at decoration time).

Every actor takes ids and `env_id` (JSON primitives), is safe to run twice, sets its retries and
time limit, names its permanent errors in `throws=`, and calls one service.
"""

from __future__ import annotations

import uuid
from datetime import date
from functools import lru_cache
from typing import Any

import dramatiq

from pms.config import load_settings
from pms.errors import InvalidTransition, NotFound, ValidationFailed
from workers.broker import build_broker
from workers.middleware import current_ctx

SETTINGS = load_settings()
broker = build_broker(SETTINGS)
dramatiq.set_broker(broker)

PERMANENT = (NotFound, InvalidTransition, ValidationFailed)
MINUTE_MS = 60_000


@lru_cache(maxsize=1)
def _platform() -> Any:
    from pms.platform import build_platform

    return build_platform(SETTINGS)


@lru_cache(maxsize=1)
def _relay() -> Any:
    from workers.publisher import build_publisher
    from workers.relay import OutboxRelay
    from workers.subscriptions import default_subscribers

    return OutboxRelay(build_publisher(SETTINGS), subscribers=default_subscribers(),
                       retention=_retention())


def _retention() -> Any:
    from datetime import timedelta

    return timedelta(days=SETTINGS.outbox_retention_days)


# -- outbox --------------------------------------------------------------------------------------

@dramatiq.actor(queue_name="pms-relay", max_retries=0, time_limit=2 * MINUTE_MS)
def relay_outbox() -> None:
    """Nudge: publish what is due now (the periodic sweep catches up if this is lost)."""
    _relay().run_once()


@dramatiq.actor(queue_name="pms-relay", max_retries=3, time_limit=10 * MINUTE_MS)
def purge_outbox() -> None:
    """Periodic: delete published rows past retention and expired Idempotency-Key records."""
    _relay().purge()


# -- housekeeping --------------------------------------------------------------------------------

@dramatiq.actor(max_retries=10, time_limit=MINUTE_MS, throws=PERMANENT)
def housekeeping_departure(env_id: str, reservation_id: str, event_id: str | None = None) -> None:
    """After check-out: departure-clean task, room dirty (deduplicated per reservation)."""
    from pms.services.housekeeping import record_departure

    record_departure(current_ctx(), uuid.UUID(reservation_id), source_event_id=event_id)


@dramatiq.actor(max_retries=10, time_limit=2 * MINUTE_MS, throws=PERMANENT)
def housekeeping_stayovers(env_id: str, property_id: str, business_date: str,
                           event_id: str | None = None) -> None:
    """Night audit: one housekeeping_stayover_room message per occupied room."""
    from pms.services.housekeeping import fan_out_stayovers

    fan_out_stayovers(uuid.UUID(env_id), uuid.UUID(property_id),
                      date.fromisoformat(business_date), source_event_id=event_id,
                      dispatch=dispatch_stayover)


@dramatiq.actor(max_retries=10, time_limit=MINUTE_MS, throws=PERMANENT)
def housekeeping_stayover_room(env_id: str, property_id: str, room_id: str, business_date: str,
                               event_id: str | None = None) -> None:
    """One room: stayover task for the date, room dirty (deduplicated per room and date)."""
    from pms.services.housekeeping import create_stayover

    create_stayover(current_ctx(), uuid.UUID(room_id), date.fromisoformat(business_date),
                    source_event_id=event_id)


def dispatch_stayover(env_id: uuid.UUID, property_id: uuid.UUID, room_id: uuid.UUID,
                      business_date: date, event_id: str | None) -> None:
    """The room dispatcher of pms.services.housekeeping.fan_out_stayovers."""
    housekeeping_stayover_room.send(str(env_id), str(property_id), str(room_id),
                                    business_date.isoformat(), event_id)


# -- notifications -------------------------------------------------------------------------------

@dramatiq.actor(max_retries=8, min_backoff=1000, max_backoff=10 * MINUTE_MS,
                time_limit=MINUTE_MS, throws=PERMANENT)
def send_reservation_email(env_id: str, reservation_id: str, kind: str, event_id: str) -> None:
    """Booking confirmation, pre-arrival or check-out receipt (idempotent by event id)."""
    from pms.services.notifications import send_reservation_email as send

    send(current_ctx(), uuid.UUID(reservation_id), kind, email=_platform().email, cause=event_id)


@dramatiq.actor(max_retries=8, min_backoff=1000, max_backoff=10 * MINUTE_MS,
                time_limit=MINUTE_MS, throws=PERMANENT)
def deliver_reservation_message(env_id: str, message_id: str) -> None:
    """Deliver an outgoing reservation message by email and mark it SENT."""
    from pms.services.notifications import deliver_message

    deliver_message(current_ctx(), uuid.UUID(message_id), email=_platform().email)


# -- async jobs ----------------------------------------------------------------------------------

@dramatiq.actor(queue_name="pms-jobs", max_retries=3, time_limit=30 * MINUTE_MS, throws=PERMANENT)
def run_job(env_id: str, job_id: str) -> None:
    """Run a queued job (the night audit started over HTTP); a job not QUEUED is left alone."""
    from pms.context import system_ctx
    from pms.services.jobs import run_job as run

    run(system_ctx(uuid.UUID(env_id), sub="job-worker"), uuid.UUID(job_id), platform=_platform())


# -- platform ------------------------------------------------------------------------------------

@dramatiq.actor(max_retries=5, min_backoff=2000, time_limit=2 * MINUTE_MS, throws=PERMANENT)
def initialize_environment(env_id: str, event_id: str | None = None) -> None:
    """Defaults and ledger settlement accounts for an env (idempotent)."""
    from pms.services.environments import initialize_environment as init

    init(uuid.UUID(env_id), ledger=getattr(_platform(), "ledger", None), source_event_id=event_id)
