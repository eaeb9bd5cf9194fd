"""Internal subscribers: event type -> reactions, run by the relay after the broker confirmed
the event, on the outbox row's own reaction cursor (dispatched_at, dispatch_attempts,
dispatch_next_at; see pms.relay.sweep): a failed enqueue retries the reactions of that row
with backoff, never republishes the event, and is parked after too many attempts. Each reaction
only enqueues an actor message; actors are idempotent (keyed by the event id), so running a
row's reactions twice is harmless."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pms.relay.core import ReactionBatch, Reactions

Event = dict[str, Any]

NIGHT_AUDIT_TYPES = ("hotel:pms:night_audit:housekeeping_done", "hotel:pms:night_audit:completed")


def _on_created(event: Event) -> None:
    from workers import actors

    actors.send_reservation_email.send(event["envid"], event["subject"], "booking_confirmation",
                                       event["id"])


def _on_registration(event: Event) -> None:
    from workers import actors

    actors.send_reservation_email.send(event["envid"], event["subject"], "pre_arrival",
                                       event["id"])


def _on_checked_out(event: Event) -> None:
    from workers import actors

    actors.housekeeping_departure.send(event["envid"], event["subject"], event["id"])
    actors.send_reservation_email.send(event["envid"], event["subject"], "checkout_receipt",
                                       event["id"])


def _on_message(event: Event) -> None:
    from workers import actors

    if (event.get("data") or {}).get("direction") == "outgoing":
        actors.deliver_reservation_message.send(event["envid"], event["subject"])


def _on_night_audit(event: Event) -> None:
    from workers import actors

    data = event.get("data") or {}
    property_id = data.get("property_id") or event.get("propertyid")
    business_date = data.get("business_date")
    if property_id and business_date:
        actors.housekeeping_stayovers.send(event["envid"], str(property_id), str(business_date),
                                           event["id"])


def _on_job_queued(event: Event) -> None:
    from workers import actors

    actors.run_job.send(event["envid"], event["subject"])


# a digital key's change of intent is sent to its lock (at least once, retried)
KEY_COMMAND_TYPES = tuple(f"hotel:pms:digital_key:{action}" for action in (
    "issued", "activated", "deactivated", "revoked", "validity_changed"))


def _on_key_command(event: Event) -> None:
    from workers import actors

    actors.sync_digital_key.send(event["envid"], event["subject"])


def _on_fiscalization_requested(event: Event) -> None:
    from workers import actors

    actors.fiscalize_document.send(event["envid"], event["subject"])


def default_subscribers(*, batching: Callable[[], ReactionBatch] | None = None) -> Reactions:
    """The reactions by event type; `batching` gathers a pass's enqueues to send them together
    (the `--follow` relay on RabbitMQ: workers.enqueue)."""
    subs: dict[str, list[Callable[[Event], None]]] = {
        "hotel:pms:reservation:created": [_on_created],
        "hotel:pms:reservation:registration_stored": [_on_registration],
        "hotel:pms:reservation:checked_out": [_on_checked_out],
        "hotel:pms:reservation_message:created": [_on_message],
        "hotel:pms:job:queued": [_on_job_queued],
        "hotel:pms:fiscal_document:fiscalization_requested": [_on_fiscalization_requested],
    }
    for type_ in NIGHT_AUDIT_TYPES:
        subs[type_] = [_on_night_audit]
    for type_ in KEY_COMMAND_TYPES:
        subs[type_] = [_on_key_command]
    return Reactions(subs, batching=batching)
