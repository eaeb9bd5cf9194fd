"""A walk-in with its guarantee: the express booking (pms.services.frontdesk.checkin.walk_in),
then, when a payment_method_id is given (always at a kiosk), the stay's total pre-authorized on
its guest folio through the payments service before the answer: a payment intent with manual
confirmation (SPEC rule 8), the folio pre-authorization's own three steps
(pms.services.cashiering.payments.pre_authorize). A declined guarantee cancels the new reservation (its
nights go back to sale) and answers 402 payment_declined; a payments service that does not
answer leaves the guarantee PENDING (reconciled later) and the reservation stands.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import unit_of_work
from pms.errors import DependencyUnavailable, PaymentDeclined
from pms.models import FolioPayment, Reservation
from pms.queries.lookups import load_reservation
from pms.schemas import reservations as s
from pms.schemas.cashiering import PreAuthorizationIn
from pms.services.cashiering import payments
from pms.services.cashiering.cashiering import record_change
from pms.services.cashiering.folios import open_folio
from pms.services.frontdesk import checkin
from pms.services.reservations.reservations import cancel_reservation


def walk_in(ctx: Ctx, property_id: uuid.UUID, body: s.WalkInIn, *,
            payments_client: Any = None) -> tuple[Reservation, FolioPayment | None]:
    """Book the walk-in, then pre-authorize its total when a payment_method_id is given.

    Raises:
        everything `checkin.walk_in` raises. PaymentDeclined (402): the guarantee was declined
            (the reservation is cancelled). DependencyUnavailable (503): no payments client.
    """
    if body.payment_method_id is not None and payments_client is None:
        raise DependencyUnavailable("the payments service is not configured")
    row = checkin.walk_in(ctx, property_id, body)
    if body.payment_method_id is None or Decimal(str(row.total_amount)) <= 0:
        return row, None
    with lock_errors(), unit_of_work(ctx) as uow:
        stay = load_reservation(ctx, property_id, row.id, lock=True)
        folio = open_folio(stay)
        record_change(uow, folio, "created", reason="walk-in guarantee")
    try:
        _, payment = payments.pre_authorize(
            ctx, property_id, folio.id,
            PreAuthorizationIn(amount=Decimal(str(row.total_amount)),
                               payment_method_id=body.payment_method_id),
            payments=payments_client)
    except PaymentDeclined:
        cancel_reservation(ctx, property_id, row.id)
        raise
    return row, payment


def walk_in_out(row: Reservation, payment: FolioPayment | None) -> s.WalkInOut:
    base = s.reservation_out(row)
    fields = {f: getattr(base, f) for f in base.__struct_fields__}
    guarantee = None
    if payment is not None:
        guarantee = s.GuaranteeOut(payment_id=payment.id, folio_id=payment.folio_id,
                                   status=payment.status, amount=Decimal(str(payment.amount)),
                                   currency=payment.currency)
    return s.WalkInOut(**fields, guarantee=guarantee)
