"""Transactional email for reservations and delivery of outgoing reservation messages.

Called by the notifications actors after the relay published the triggering event (never inside
a request). Each send carries an idempotency key derived from what caused it, so a redelivered
event or a retried actor sends once. The email call happens outside any transaction; only the
outcome of a message delivery is recorded in a short unit of work afterwards.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import MESSAGE_MACHINE, MessageStatus
from pms.errors import NotFound, ValidationFailed
from pms.events import event_type
from pms.schemas.common import to_data

KINDS = ("booking_confirmation", "pre_arrival", "checkout_receipt")


@dataclass(frozen=True)
class Letter:
    to: str
    subject: str
    body: str


def _reservation_letter(kind: str, reservation: Any, prop: Any, email: str) -> Letter:
    name = " ".join(p for p in (reservation.guest_first_name, reservation.guest_last_name) if p)
    stay = f"{reservation.arrival_date.isoformat()} to {reservation.departure_date.isoformat()}"
    number = reservation.confirmation_number
    hotel = prop.name or prop.code
    if kind == "booking_confirmation":
        subject = f"{hotel}: your booking {number} is confirmed"
        body = (f"Dear {name or 'guest'},\n\nthank you for booking with {hotel}.\n"
                f"Confirmation number: {number}\nStay: {stay}\n"
                f"Total: {reservation.total_amount} {reservation.currency}\n")
    elif kind == "pre_arrival":
        subject = f"{hotel}: we look forward to your arrival"
        body = (f"Dear {name or 'guest'},\n\nyour stay {number} ({stay}) is coming up. "
                "You can register online before you arrive to skip the desk.\n")
    else:
        subject = f"{hotel}: your receipt for {number}"
        body = (f"Dear {name or 'guest'},\n\nthank you for staying with us ({stay}).\n"
                f"Stay total: {reservation.total_amount} {reservation.currency}\n"
                "Your detailed folio is available at the desk or in the guest app.\n")
    return Letter(to=email, subject=subject, body=body)


def send_reservation_email(ctx: Ctx, reservation_id: uuid.UUID, kind: str, *, email: Any,
                           cause: str) -> str | None:
    """Send one of KINDS for a reservation; returns the email id, or None (no guest email).

    Args:
        email: the platform email client.
        cause: what triggered it (the event id): part of the idempotency key.
    Raises:
        ValidationFailed: unknown kind. NotFound: no such reservation.
        DependencyUnavailable: the email service failed (the actor retries with backoff).
    """
    from pms.models import Property, Reservation

    if kind not in KINDS:
        raise ValidationFailed(f"unknown notification kind {kind}")
    with read_scope(ctx):
        reservation = Reservation.get_or_none(Reservation.id == reservation_id)
        if reservation is None:
            raise NotFound("no such reservation")
        prop = Property.get_by_id(reservation.property_id)
        address = _guest_email(reservation)
    if not address:
        return None
    letter = _reservation_letter(kind, reservation, prop, address)
    sent = email.send(ctx.env_id, to=letter.to, subject=letter.subject, body=letter.body,
                      idempotency_key=f"{kind}:{reservation_id}:{cause}", template=kind,
                      meta={"reservation_id": str(reservation_id), "kind": kind})
    return sent.id


def _guest_email(reservation: Any) -> str | None:
    """The email address of the reservation's guest profile, if it has one (inside a scope)."""
    from pms.models import Profile

    if not reservation.guest_profile_id:
        return None
    profile = Profile.get_or_none(Profile.id == reservation.guest_profile_id)
    return getattr(profile, "email", None)


def deliver_message(ctx: Ctx, message_id: uuid.UUID, *, email: Any) -> bool:
    """Deliver an outgoing reservation message by email and mark it SENT.

    Returns False when there is nothing to do (incoming, already sent, no guest email).

    Raises:
        NotFound: no such message. DependencyUnavailable: the email service failed.
    """
    from pms.models import Reservation, ReservationMessage
    from pms.schemas.reservations import message_out

    with read_scope(ctx):
        message = ReservationMessage.get_or_none(ReservationMessage.id == message_id)
        if message is None:
            raise NotFound("no such reservation message")
        reservation = Reservation.get_by_id(message.reservation_id)
        address = _guest_email(reservation)
    if message.direction != "outgoing" or message.status == MessageStatus.SENT:
        return False
    if not address:
        return False
    email.send(ctx.env_id, to=address, subject=message.subject or "A message from your hotel",
               body=message.body, idempotency_key=f"message:{message_id}",
               template="reservation_message", meta={"reservation_id": str(reservation.id)})
    with unit_of_work(ctx) as uow:
        row = for_update(ReservationMessage.select().where(
            ReservationMessage.id == message_id)).first()
        new = MESSAGE_MACHINE.transition(row.status, "send")
        changed = new != row.status
        if changed:
            before = to_data(message_out(row))
            row.status = new.value
            row.sent_at = ctx.now
            row.attempts = (row.attempts or 0) + 1
            row.save()
            data = to_data(message_out(row))
            uow.audit("reservation_message.sent", row, before=before, after=data)
            uow.emit(event_type("reservation_message", "sent"), row, data,
                     property_id=row.property_id)
    return changed
