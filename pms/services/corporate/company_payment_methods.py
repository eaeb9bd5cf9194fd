"""Company payment methods: payments-service references with an approval status.

Born PENDING (submitted by a company ADMIN or staff); staff approve to POSTPAY or
BILL_TO_COMPANY, reject (with a reason), move between the two approved states and suspend an
approved one to REJECTED (with a reason); a company ADMIN (or staff) resubmits a REJECTED one to
PENDING. Every move is a transition of COMPANY_PAYMENT_METHOD_MACHINE (pms.domain.states),
audited, with its event `hotel:pms:company_payment_method:{action}`. The method row is locked
for its move, so of two concurrent moves from one state only the first applies and the second
answers 409 invalid_transition. Never card data: only the `payment_method_id` reference and
the summary the payments service reports of it at submission (brand, last four digits,
expiry), which the service must report as the company's own; a delete removes the reference,
never the payments-service token.
"""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.pagination import Page, paginate
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.companies import CompanyAction
from pms.domain.states import (
    COMPANY_PAYMENT_METHOD_INITIAL,
    COMPANY_PAYMENT_METHOD_MACHINE,
    COMPANY_PAYMENT_METHOD_USABLE,
    CompanyPaymentMethodStatus,
)
from pms.errors import (
    AlreadyExists,
    CompanyRoleForbidden,
    NotFound,
    PaymentMethodInUse,
    ReceivableAccountRequired,
    ValidationFailed,
)
from pms.events import event_type
from pms.models import CompanyPaymentMethod, CompanyReceivableAccount
from pms.platform.payments import PaymentMethodInfo, PaymentsClient, require_own_method
from pms.schemas.common import to_data
from pms.schemas.companies import (
    CompanyPaymentMethodIn,
    CompanyPaymentMethodOut,
    payment_method_out,
)
from pms.services.corporate import company_billing
from pms.services.corporate.companies import company_access
from pms.services.corporate.receivable_accounts import has_receivable_account

AGGREGATE = "company_payment_method"
# trigger -> the event action it is announced as
_ACTIONS = {"approve_postpay": "approved", "approve_bill_to_company": "approved",
            "reject": "rejected", "suspend": "suspended", "resubmit": "resubmitted"}


def list_methods(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID, *,
                 usable: bool, limit: int = 50, cursor: str | None = None
                 ) -> Page[CompanyPaymentMethodOut]:
    """The company's methods; `usable` (the corporate checkout's list) only POSTPAY and
    BILL_TO_COMPANY ones. A TRAVELER always gets the usable list only."""
    with read_scope(ctx):
        access = company_access(ctx, property_id, company_id)
        if not usable and not access.allows(CompanyAction.LIST_PAYMENT_METHODS):
            usable = True
        access.require(CompanyAction.LIST_USABLE_PAYMENT_METHODS)
        query = CompanyPaymentMethod.select().where(
            CompanyPaymentMethod.company_profile_id == company_id)
        if usable:
            query = query.where(CompanyPaymentMethod.status.in_(
                sorted(s.value for s in COMPANY_PAYMENT_METHOD_USABLE)))
        page = paginate(query, CompanyPaymentMethod, limit=limit, cursor=cursor)
    return Page(items=[payment_method_out(r) for r in page.items],
                next_cursor=page.next_cursor)


def submit(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
           body: CompanyPaymentMethodIn, *, payments: PaymentsClient) -> CompanyPaymentMethodOut:
    """A new method, PENDING (company ADMIN or staff), with the card summary the payments
    service reports for it. The service must report the method as the company's own (its
    holder is the company profile), asked outside the transaction after the caller's access
    is checked.

    Raises:
        NotFound; CompanyRoleForbidden. ValidationFailed (422 payment_method_not_allowed
        naming payment_method_id): not the company's per the payments service.
        AlreadyExists (409): the company has it already. DependencyUnavailable (503): the
        payments service cannot say.
    """
    with read_scope(ctx):
        company_access(ctx, property_id, company_id).require(
            CompanyAction.SUBMIT_PAYMENT_METHOD)
    card = _company_card(ctx, company_id, body.payment_method_id, payments)
    with unit_of_work(ctx) as uow:
        access = company_access(ctx, property_id, company_id, lock=True)
        access.require(CompanyAction.SUBMIT_PAYMENT_METHOD)
        if CompanyPaymentMethod.get_or_none(
                CompanyPaymentMethod.company_profile_id == company_id,
                CompanyPaymentMethod.payment_method_id == body.payment_method_id):
            raise AlreadyExists("this payment method is already submitted for this company")
        row = CompanyPaymentMethod.build(
            company_profile_id=company_id, payment_method_id=body.payment_method_id,
            label=body.label, status=COMPANY_PAYMENT_METHOD_INITIAL.value, version=1,
            brand=card.brand, last4=card.last4, exp_month=card.exp_month,
            exp_year=card.exp_year)
        row.save(force_insert=True)
        out = payment_method_out(row)
        uow.record(AGGREGATE, "submitted", row, to_data(out), property_id=property_id)
    return out


def _company_card(ctx: Ctx, company_id: uuid.UUID, payment_method_id: str,
                  payments: PaymentsClient) -> PaymentMethodInfo:
    """The card the payments service reports for a method of the company's own (else 422
    payment_method_not_allowed); a network call, made outside any transaction."""
    return require_own_method(
        payments, payment_method_id, env_id=str(ctx.env_id), holder_id=str(company_id),
        detail="the payments service does not report this payment method as the company's",
        message="not a payment method of this company")


def resubmit(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID, method_id: uuid.UUID,
             *, payments: PaymentsClient) -> CompanyPaymentMethodOut:
    """REJECTED -> PENDING (company ADMIN or staff) with the card as the payments service
    reports it now, so the approver reads the card that will be charged (renewed, or expired
    since it was first submitted); a token no longer the company's is 422
    payment_method_not_allowed and the method stays REJECTED."""
    with read_scope(ctx):
        access = company_access(ctx, property_id, company_id)
        row = CompanyPaymentMethod.get_or_none(
            CompanyPaymentMethod.id == method_id,
            CompanyPaymentMethod.company_profile_id == company_id)
        if row is None:
            raise NotFound("no such company payment method")
        access.require(CompanyAction.RESUBMIT_PAYMENT_METHOD)
    card = _company_card(ctx, company_id, row.payment_method_id, payments)
    with unit_of_work(ctx) as uow:
        return move_in(uow, ctx, property_id, company_id, method_id, "resubmit", card=card)


def _load(company_id: uuid.UUID, method_id: uuid.UUID) -> CompanyPaymentMethod:
    row = for_update(CompanyPaymentMethod.select().where(
        CompanyPaymentMethod.id == method_id,
        CompanyPaymentMethod.company_profile_id == company_id)).first()
    if row is None:
        raise NotFound("no such company payment method")
    return row


def move(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID, method_id: uuid.UUID,
         trigger: str, *, reason: str | None = None) -> CompanyPaymentMethodOut:
    """Apply one transition of the approval table. approve/reject/suspend are staff routes
    (the API refuses holder sessions there); resubmit is the company ADMIN's (or staff's).

    Raises: NotFound; CompanyRoleForbidden; InvalidTransition (409) for a move not in the
        table, which is also what the loser of two concurrent moves gets.
    """
    with unit_of_work(ctx) as uow:
        return move_in(uow, ctx, property_id, company_id, method_id, trigger, reason=reason)


def move_in(uow: UnitOfWork, ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
            method_id: uuid.UUID, trigger: str, *, reason: str | None = None,
            card: PaymentMethodInfo | None = None) -> CompanyPaymentMethodOut:
    """`move` inside the caller's unit of work (the concurrency tests hold it open); `card`,
    the payments service's summary as of now, replaces the stored one."""
    access = company_access(ctx, property_id, company_id)
    row = _load(company_id, method_id)
    if trigger == "resubmit":
        access.require(CompanyAction.RESUBMIT_PAYMENT_METHOD)
    elif not access.staff:  # defence in depth: the route already refuses holders
        raise CompanyRoleForbidden("only hotel staff approve, reject or suspend")
    before = to_data(payment_method_out(row))
    new = COMPANY_PAYMENT_METHOD_MACHINE.transition(row.status, trigger)
    if new == CompanyPaymentMethodStatus.BILL_TO_COMPANY and not has_receivable_account(
            company_id):
        raise ReceivableAccountRequired("billing to the company needs its receivable account "
                                        "(PUT .../receivable-account) first")
    if (new == CompanyPaymentMethodStatus.BILL_TO_COMPANY
            and row.status != CompanyPaymentMethodStatus.BILL_TO_COMPANY):
        _admit_routed_stays(ctx, company_id, row)
    row.status = new.value
    row.reason = reason if new == CompanyPaymentMethodStatus.REJECTED else None
    if card is not None:
        row.brand, row.last4 = card.brand, card.last4
        row.exp_month, row.exp_year = card.exp_month, card.exp_year
    row.save()
    out = payment_method_out(row)
    uow.record(AGGREGATE, _ACTIONS[trigger], row, to_data(out), before=before, reason=reason,
               property_id=property_id)
    return out


def _admit_routed_stays(ctx: Ctx, company_id: uuid.UUID, row: CompanyPaymentMethod) -> None:
    """A method becoming BILL_TO_COMPANY brings the open stays routed through it into the
    company's exposure: they must fit under the credit limit (409 credit_limit_exceeded naming
    them), in the account's currency (422 currency_mismatch)."""
    needed, currencies, stays = company_billing.method_exposure(row.id)
    if not stays:
        return
    account = CompanyReceivableAccount.get(
        CompanyReceivableAccount.company_profile_id == company_id)
    for currency in sorted(currencies):
        if currency != account.currency:
            raise ValidationFailed(
                f"the company's credit limit is in {account.currency}, stays routed through "
                f"this method in {currency}", code="currency_mismatch",
                errors=[{"field": "approval", "message": "stays in another currency"}])
    company_billing.admit_exposure(ctx, company_id, needed, account.currency,
                                   reservation_ids=stays)


def remove(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
           method_id: uuid.UUID) -> None:
    """Delete the reference in any state (company ADMIN or staff), unless open stays are
    routed through it: 409 payment_method_in_use naming them (route them elsewhere or remove
    their routing first, each with its event)."""
    with unit_of_work(ctx) as uow:
        access = company_access(ctx, property_id, company_id)
        row = _load(company_id, method_id)
        access.require(CompanyAction.REMOVE_PAYMENT_METHOD)
        routed = company_billing.routed_open_stays(row.id)
        if routed:
            raise PaymentMethodInUse("stays are routed through this payment method; route "
                                     "them elsewhere or remove their routing first",
                                     reservation_ids=routed)
        data = to_data(payment_method_out(row))
        uow.audit(f"{AGGREGATE}.removed", row, before=data)
        uow.emit(event_type(AGGREGATE, "removed"), row, data, property_id=property_id)
        CompanyPaymentMethod.delete().where(CompanyPaymentMethod.id == row.id).execute()
