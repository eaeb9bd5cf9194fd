"""Dramatiq actors. Importing this module binds the global broker (the one sanctioned import-time
side effect: `dramatiq workers.actors` imports it, and `@actor` binds at decoration time).

Every actor is a `@tenant_actor` (workers.middleware): it is sent with the env id first, and its
body gets the `ctx` of that env, with the tenant scope and one database connection open around
it. Actors take ids (JSON primitives), are safe to run twice, set their retries and time limit,
name their permanent errors in `throws=`, and call one service.

The outbox relay does not run here: it is the `relay` process type (`pms-cli outbox relay
--follow`), which also purges, or a thread of the embedded runtime (workers.runtime).
"""

from __future__ import annotations

import logging
import uuid
from datetime import date
from functools import lru_cache
from typing import Any

import dramatiq
from dramatiq.middleware import CurrentMessage

from pms.config import load_settings
from pms.context import Ctx
from pms.errors import InvalidTransition, NotFound, ValidationFailed
from pms.failures import public_error
from pms.startup import PLATFORM_ONLY, refuse_development_fallbacks
from workers.broker import build_broker
from workers.middleware import tenant_actor

log = logging.getLogger("workers.actors")

SETTINGS = load_settings()
# the worker calls the platform; no sandbox fallback outside the embedded default
refuse_development_fallbacks(SETTINGS, "worker", PLATFORM_ONLY)
broker = build_broker(SETTINGS)
dramatiq.set_broker(broker)

PERMANENT = (NotFound, InvalidTransition, ValidationFailed)
MINUTE_MS = 60_000


@lru_cache(maxsize=1)
def _platform() -> Any:
    from pms.platform import build_platform

    return build_platform(SETTINGS)


# -- housekeeping --------------------------------------------------------------------------------

@tenant_actor(max_retries=10, time_limit=MINUTE_MS, throws=PERMANENT)
def housekeeping_departure(ctx: Ctx, reservation_id: str, event_id: str | None = None) -> None:
    """After check-out: departure-clean task, room dirty (deduplicated per reservation)."""
    from pms.services.housekeeping.housekeeping import record_departure

    record_departure(ctx, uuid.UUID(reservation_id), source_event_id=event_id)


@tenant_actor(max_retries=10, time_limit=2 * MINUTE_MS, throws=PERMANENT)
def housekeeping_stayovers(ctx: Ctx, property_id: str, business_date: str,
                           event_id: str | None = None) -> None:
    """Night audit: one housekeeping_stayover_room message per occupied room."""
    from pms.services.housekeeping.housekeeping import fan_out_stayovers

    fan_out_stayovers(ctx.env_id, uuid.UUID(property_id), date.fromisoformat(business_date),
                      source_event_id=event_id, dispatch=dispatch_stayover)


@tenant_actor(max_retries=10, time_limit=MINUTE_MS, throws=PERMANENT)
def housekeeping_stayover_room(ctx: Ctx, property_id: str, room_id: str, business_date: str,
                               event_id: str | None = None) -> None:
    """One room: stayover task for the date, room dirty (deduplicated per room and date)."""
    from pms.services.housekeeping.housekeeping import create_stayover

    create_stayover(ctx, uuid.UUID(room_id), date.fromisoformat(business_date),
                    source_event_id=event_id)


def dispatch_stayover(env_id: uuid.UUID, property_id: uuid.UUID, room_id: uuid.UUID,
                      business_date: date, event_id: str | None) -> None:
    """The room dispatcher `housekeeping_stayovers` passes to fan_out_stayovers."""
    housekeeping_stayover_room.send(str(env_id), str(property_id), str(room_id),
                                    business_date.isoformat(), event_id)


# -- notifications -------------------------------------------------------------------------------

@tenant_actor(max_retries=8, min_backoff=1000, max_backoff=10 * MINUTE_MS,
              time_limit=MINUTE_MS, throws=PERMANENT)
def send_reservation_email(ctx: Ctx, reservation_id: str, kind: str, event_id: str) -> None:
    """Booking confirmation, pre-arrival or check-out receipt (idempotent by event id)."""
    from pms.services.notifications import send_reservation_email as send

    send(ctx, uuid.UUID(reservation_id), kind, email=_platform().email, cause=event_id)


@tenant_actor(max_retries=8, min_backoff=1000, max_backoff=10 * MINUTE_MS,
              time_limit=MINUTE_MS, throws=PERMANENT)
def deliver_reservation_message(ctx: Ctx, message_id: str) -> None:
    """Deliver an outgoing reservation message by email and mark it SENT."""
    from pms.services.notifications import deliver_message

    deliver_message(ctx, uuid.UUID(message_id), email=_platform().email)


# -- async jobs ----------------------------------------------------------------------------------

JOB_RETRIES = 3


@tenant_actor(queue_name="pms-jobs", max_retries=JOB_RETRIES, time_limit=30 * MINUTE_MS,
              throws=PERMANENT)
def run_job(ctx: Ctx, job_id: str) -> None:
    """Run a queued job (the night audit started over HTTP); sent by the relay's subscriber of
    `hotel:pms:job:queued`. A broker redelivery (the previous worker died mid-run) resumes it;
    when the last retry fails to even take the job, the job is marked FAILED, never left QUEUED."""
    from pms.services import jobs

    message = CurrentMessage.get_current_message()
    try:
        jobs.run_job(ctx, uuid.UUID(job_id), platform=_platform(),
                     resume=bool(getattr(message, "redelivered", False)))
    except Exception as exc:
        retries = message.options.get("retries", 0) if message is not None else JOB_RETRIES
        if retries >= JOB_RETRIES or isinstance(exc, PERMANENT):
            jobs.fail_job(ctx, uuid.UUID(job_id), public_error(
                exc, log, "job (gave up)", prefix="gave up: ", job_id=job_id))
        raise


# -- digital keys -----------------------------------------------------------------------

@tenant_actor(max_retries=20, min_backoff=2000, max_backoff=10 * MINUTE_MS,
              time_limit=MINUTE_MS, throws=PERMANENT)
def sync_digital_key(ctx: Ctx, key_id: str) -> None:
    """Send a key's intent to its lock and record the answer (pending -> sent -> confirmed);
    a lock-service outage raises and is retried with backoff (idempotent by key and version)."""
    from pms.services.keys.lock_sync import sync_lock

    sync_lock(ctx, uuid.UUID(key_id), _platform().locks)

# The keys' sweeper is no actor: the `digital_keys.sweep` schedule runs it (pms.scheduling).


# -- platform ------------------------------------------------------------------------------------

@tenant_actor(max_retries=5, min_backoff=2000, time_limit=2 * MINUTE_MS, throws=PERMANENT)
def initialize_environment(ctx: Ctx, event_id: str | None = None) -> None:
    """Defaults and ledger settlement accounts for an env (idempotent)."""
    from pms.services.environments import initialize_environment as init

    init(ctx.env_id, ledger=getattr(_platform(), "ledger", None), source_event_id=event_id)


# -- fiscal documents ----------------------------------------------------------------------------

# its own queue: a provider outage's retries wait there, never ahead of other work
@tenant_actor(queue_name="pms-fiscal", max_retries=20, min_backoff=2000,
              max_backoff=10 * MINUTE_MS, time_limit=MINUTE_MS, throws=PERMANENT)
def fiscalize_document(ctx: Ctx, document_id: str) -> None:
    """Submit a fiscal document to its provider and record the answer; a provider outage raises
    and is retried with backoff (the document's id is the idempotency key: signed once)."""
    from pms.services.cashiering.fiscalization import fiscalize

    fiscalize(ctx, uuid.UUID(document_id), _platform().fiscal)
