"""What is attached to a reservation: comments, guest messages, service requests and the
pre-arrival registration. Each is one unit of work with its own outbox and audit row. Outgoing
messages start QUEUED; the notifications actor delivers them later (through MESSAGE_MACHINE).
"""

from __future__ import annotations

import uuid

import msgspec

from pms.context import Ctx
from pms.db.uow import unit_of_work
from pms.domain.states import MESSAGE_INITIAL, RESERVATION_MACHINE, SERVICE_REQUEST_INITIAL
from pms.errors import ValidationFailed
from pms.models import Reservation, ReservationComment, ReservationMessage, ServiceRequest
from pms.schemas import reservations as s
from pms.schemas.common import to_data
from pms.services.reservations.reservations import load_reservation, record


def add_comment(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
                body: s.CommentIn) -> ReservationComment:
    """Add a staff comment to a reservation. Raises NotFound."""
    with unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id)
        comment = ReservationComment.create(reservation=row.id, property=row.property_id,
                                            text=body.text, internal=body.internal,
                                            author_sub=ctx.sub)
        uow.record("reservation_comment", "created", comment, to_data(s.comment_out(comment)),
                   property_id=row.property_id)
    return comment


def add_message(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
                body: s.MessageIn) -> ReservationMessage:
    """Record an incoming guest message, or queue an outgoing one for delivery.

    Outgoing messages speak for the hotel, so a holder session (a guest) may only post incoming
    ones; refused before the reservation is loaded, the answer is the same for every
    reservation id.

    Raises:
        NotFound. ValidationFailed (422 field_not_allowed): `outgoing` from a holder session.
    """
    if ctx.holder_id is not None and body.direction == "outgoing":
        raise ValidationFailed("a guest session may only send incoming messages",
                               code="field_not_allowed",
                               errors=[{"field": "direction",
                                        "message": "a guest's messages are incoming"}])
    with unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id)
        message = ReservationMessage.create(
            reservation=row.id, property=row.property_id, direction=body.direction,
            status=MESSAGE_INITIAL[body.direction].value, channel=body.channel,
            subject=body.subject, body=body.body)
        uow.record("reservation_message", "created", message, to_data(s.message_out(message)),
                   property_id=row.property_id)
    return message


def add_service_request(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
                        body: s.ServiceRequestIn) -> ServiceRequest:
    """Open a service request (towels, late check-out...) on a reservation. Raises NotFound."""
    with unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id)
        request = ServiceRequest.create(reservation=row.id, property=row.property_id,
                                        kind=body.kind, description=body.description,
                                        status=SERVICE_REQUEST_INITIAL.value, due_at=body.due_at)
        uow.record("service_request", "created", request, to_data(s.service_request_out(request)),
                   property_id=row.property_id)
    return request


# -- pre-check-in -------------------------------------------------------------------------------

def pre_check_in(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
                 body: s.RegistrationIn) -> Reservation:
    """Store the pre-arrival registration card of a CONFIRMED reservation.

    Raises:
        NotFound. InvalidTransition (409): not CONFIRMED. ValidationFailed: terms not accepted.
    """
    if not body.terms_accepted:
        raise ValidationFailed("the guest must accept the terms to register", errors=[
            {"field": "terms_accepted", "message": "must be true"}])
    with unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id, lock=True)
        status = RESERVATION_MACHINE.transition(row.status, "pre_check_in")
        before = to_data(s.reservation_out(row))
        row.registration = msgspec.to_builtins(body)
        row.pre_checked_in_at = ctx.now
        row.status = status.value
        row.save()
        record(uow, row, "registration_stored", before=before)
    return row
