"""What a stay owes at check-out, and the kiosk's payment loop (SPEC rule 8).

`stay_owes` is the one answer to "what does this stay owe at check-out": the guest folio's
`balance_due` (posted charges, plus the room nights and their taxes a check-out today would
post, less captured payments: what check-out refuses on), less the company's share of a stay
routed to a company (its cap; nothing when the method is no longer approved), with the
AUTHORIZED pre-authorizations on the folio that can pay the rest. The kiosk lookup, the kiosk's
folio view and the check-out of a kiosk session read it; check-out itself stays the authority
(409 folio_not_closable).

The kiosk's check-out (`settle_before_check_out`, called by check-out for kiosk tokens):
- the guest owes nothing: nothing to pay;
- a stay billed to a company where the guest still owes something: 409 company_billed_stay,
  the guest settles at the desk (a company-billed stay the company covers entirely checks out
  at the kiosk: its share goes to the company as at the desk);
- otherwise an AUTHORIZED pre-authorization on the folio that covers what is owed is captured
  for that amount (a charge on the payments service against its intent), or, when the kiosk
  sends a card (`payment_method_id`), the card is charged for it. A decline answers 402
  payment_declined naming the front desk and leaves the stay in house; a payments service that
  does not answer 503 (the payment stays PENDING for the reconciler, the stay in house).
Each step is its own unit of work (the payments call runs outside any transaction,
pms.services.cashiering.payments); the check-out follows in its own.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.money import quantize
from pms.domain.states import FolioStatus, PaymentStatus, ReservationStatus
from pms.errors import Conflict, DependencyUnavailable, NotFound, PaymentDeclined
from pms.models import Reservation
from pms.schemas import kiosk as s
from pms.schemas.cashiering import PaymentIn
from pms.services.kiosk import kiosk_sessions

PRE_AUTH = "PRE_AUTH"
DESK = "please see the front desk"


@dataclass(frozen=True)
class Owed:
    currency: str
    balance_due: Decimal       # the guest folio's: posted + projected - captured
    company_pays: Decimal      # the company's share of a stay routed to it
    guest_owes: Decimal        # balance_due - company_pays
    pre_authorized: Decimal    # the largest AUTHORIZED pre-authorization on the folio
    pre_authorization_id: uuid.UUID | None
    company_billed: bool
    folio_id: uuid.UUID | None


def stay_owes(reservation: Reservation, *, now: Any) -> Owed:
    """What the stay owes at a check-out now (inside a scope). A stay without an OPEN guest
    folio (an arrival) owes nothing yet."""
    from pms.services.cashiering.folio_state import state_of
    from pms.services.cashiering.folios import guest_folio, render_state

    currency = reservation.currency
    folio = guest_folio(reservation)
    if folio is None or folio.status != FolioStatus.OPEN:
        zero = quantize(Decimal(0), currency)
        return Owed(currency, zero, zero, zero, zero, None, bool(reservation.company_billed),
                    None)
    state = state_of(folio, now=now)
    balance = Decimal(render_state(state).balance_due)
    company = _company_share(reservation, folio, balance)
    held = [p for p in state.payments
            if getattr(p, "kind", None) == PRE_AUTH and p.status == PaymentStatus.AUTHORIZED]
    best = max(held, key=lambda p: Decimal(str(p.amount)), default=None)
    return Owed(folio.currency, quantize(balance, folio.currency),
                quantize(company, folio.currency), quantize(balance - company, folio.currency),
                quantize(Decimal(str(best.amount)) if best else Decimal(0), folio.currency),
                best.id if best else None, bool(reservation.company_billed), folio.id)


def _company_share(reservation: Reservation, folio: Any, balance: Decimal) -> Decimal:
    """What the company takes of the folio at check-out: check-out's own rule (its routing by
    charge type and cap, `company_billing.folio_share`), so the kiosk never promises more."""
    from pms.domain.states import COMPANY_PAYMENT_METHOD_USABLE
    from pms.services.corporate.company_billing import folio_share
    from pms.services.corporate.company_direct_bill import billing_link_and_method

    if not reservation.company_billed:
        return Decimal(0)
    link, method = billing_link_and_method(reservation.id)
    if link is None or method is None or method.status not in COMPANY_PAYMENT_METHOD_USABLE:
        return Decimal(0)
    return folio_share(link, folio, balance)


def owed_out(owed: Owed) -> s.KioskOwedOut:
    return s.KioskOwedOut(currency=owed.currency, balance_due=owed.balance_due,
                          company_pays=owed.company_pays, guest_owes=owed.guest_owes,
                          pre_authorized=owed.pre_authorized, company_billed=owed.company_billed)


def kiosk_can_check_out(owed: Owed) -> bool:
    """The lookup's CHECK_OUT: nothing owed, or a pre-authorization that covers it (a stay
    billed to a company only when the guest owes nothing after routing)."""
    if owed.guest_owes <= 0:
        return True
    return not owed.company_billed and owed.pre_authorized >= owed.guest_owes


def read_folio(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID
               ) -> tuple[Any, Owed]:
    """The kiosk session's view of its own stay's guest folio, with what the stay owes.

    Raises:
        KioskLocked, KioskModeDisabled (409), KioskSessionInvalid (403), NotFound (another
            stay; or no folio yet).
    """
    from pms.queries.lookups import load_reservation
    from pms.services.cashiering.folios import guest_folio, render

    with lock_errors(), unit_of_work(ctx):
        kiosk_sessions.admit(ctx, property_id, reservation_id, kiosk_sessions.CHECK_OUT)
    with read_scope(ctx):
        row = load_reservation(ctx, property_id, reservation_id)
        folio = guest_folio(row)
        if folio is None:
            raise NotFound("the reservation has no folio yet (it opens at check-in)")
        return render(folio, now=ctx.now), stay_owes(row, now=ctx.now)


def load_stay(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID) -> Reservation:
    """The stay, or NotFound (another env's, another property's)."""
    from pms.queries.lookups import load_reservation

    with read_scope(ctx):
        return load_reservation(ctx, property_id, reservation_id)


def settle_before_check_out(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID, *,
                            payments: Any, ledger: Any = None,
                            payment_method_id: str | None = None) -> Any:
    """Pay what a kiosk guest owes before the check-out (module docstring). Returns the
    payment taken, or None when nothing was owed.

    Raises:
        KioskLocked, KioskModeDisabled (409), KioskSessionInvalid (403), NotFound.
        Conflict (409 company_billed_stay): billed to a company and the guest owes a part.
        FolioNotClosable (409 folio_not_closable): owed, no covering pre-authorization and
            no card.
        PaymentDeclined (402 payment_declined, `see` front_desk). DependencyUnavailable (503).
    """
    from pms.errors import FolioNotClosable
    from pms.queries.lookups import load_reservation
    from pms.services.cashiering import payments as cashier

    with lock_errors(), unit_of_work(ctx):
        kiosk_sessions.admit(ctx, property_id, reservation_id, kiosk_sessions.CHECK_OUT)
        row = load_reservation(ctx, property_id, reservation_id)
        if row.status != ReservationStatus.CHECKED_IN:
            return None  # check-out answers its own 409
        owed = stay_owes(row, now=ctx.now)
    if owed.guest_owes <= 0 or owed.folio_id is None:
        return None
    if owed.company_billed:
        raise Conflict(f"this stay is billed to a company and {owed.guest_owes} "
                       f"{owed.currency} is yours to settle: {DESK}", code="company_billed_stay",
                       balance=str(owed.guest_owes), currency=owed.currency, see="front_desk")
    if payment_method_id is not None:
        body = PaymentIn(amount=owed.guest_owes, method="CARD",
                         payment_method_id=payment_method_id)
    elif owed.pre_authorization_id is not None and owed.pre_authorized >= owed.guest_owes:
        body = PaymentIn(amount=owed.guest_owes, method="CARD",
                         pre_authorization_id=owed.pre_authorization_id)
    else:
        raise FolioNotClosable(
            f"the folio has an open balance of {owed.guest_owes} {owed.currency}; pay it "
            f"with a card at the kiosk or {DESK}", balance=str(owed.guest_owes),
            currency=owed.currency, folio_id=str(owed.folio_id))
    if payments is None:
        raise DependencyUnavailable("the payments service is not configured")
    try:
        _, payment = cashier.post_payment(ctx, property_id, owed.folio_id, body,
                                          payments=payments, ledger=ledger)
    except PaymentDeclined as exc:
        raise PaymentDeclined(f"the payment of {owed.guest_owes} {owed.currency} was declined "
                              f"and you are still checked in: {DESK}", see="front_desk",
                              **exc.extra) from exc
    if payment.status != PaymentStatus.CAPTURED:
        raise DependencyUnavailable(f"the payment could not be completed now; {DESK}",
                                    payment_id=str(payment.id), see="front_desk")
    return payment
