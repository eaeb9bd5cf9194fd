"""Direct bill: a stay's folio routed to a company, what each party pays before
check-out, and the settlement of the company's share at check-out.

Kept apart from `pms.services.corporate.company_billing` (which the booking path imports) so that the
reservation services never import the stay and payment services back (tests/unit/
test_import_graph.py).
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.business_date import business_date
from pms.domain.money import exact, quantize
from pms.domain.states import (
    COMPANY_PAYMENT_METHOD_USABLE,
    PAYMENT_INITIAL,
    PAYMENT_MACHINE,
    CompanyPaymentMethodStatus,
    FolioStatus,
)
from pms.errors import NotFound, ReservationNotEditable
from pms.models import (
    CompanyBilling,
    CompanyPaymentMethod,
    CompanyReceivableAccount,
    Folio,
    FolioPayment,
    Profile,
    Reservation,
)
from pms.platform.ledger import LedgerLine
from pms.schemas.common import to_data
from pms.schemas.companies import CompanyBillingIn, CompanyBillingOut, receivable_account_out
from pms.services.cashiering import fiscal_journal
from pms.services.cashiering.folio_state import posting_row, write_with_commit
from pms.services.cashiering.folios import folio_balance
from pms.services.cashiering.ledger_postings import send_postings
from pms.services.catalog.catalog import load_property
from pms.services.corporate import receivable_ledger
from pms.services.corporate.company_billing import (
    OPEN_STATUSES,
    admit_exposure,
    apply_contract,
    check_billing,
    folio_lines,
    folio_share,
    future_share,
    money,
    require_company,
    routed_lines,
    stay_share,
)
from pms.services.corporate.routing import lower_categories as _lower
from pms.services.references import unknown_reference

DIRECT_BILL = "DIRECT_BILL"  # the folio payment that moves a balance to the company


# -- routing a stay to a company, its preview, and the settlement at check-out ----------------

def billing_link_and_method(reservation_id: uuid.UUID) -> tuple[Any, Any]:
    link = CompanyBilling.get_or_none(CompanyBilling.reservation_id == reservation_id)
    if link is None:
        return None, None
    return link, CompanyPaymentMethod.get_or_none(
        CompanyPaymentMethod.id == link.company_payment_method_id)


def _guest_folio(reservation_id: uuid.UUID) -> Folio | None:
    return (Folio.select().where(Folio.reservation == reservation_id, Folio.folio_type == "GUEST",
                                 Folio.status == FolioStatus.OPEN.value)
            .order_by(Folio.created_at, Folio.id).first())


def _preview(ctx: Ctx, row: Reservation, link: Any, method: Any) -> CompanyBillingOut:
    from pms.services.cashiering.folios import render

    folio = _guest_folio(row.id) if row.status == "CHECKED_IN" else None
    usable = method is not None and method.status in COMPANY_PAYMENT_METHOD_USABLE
    if folio is not None:
        basis, balance, currency = "folio", Decimal(render(folio, now=ctx.now).balance_due), \
            folio.currency
        posted = folio_balance(folio)  # the rest of balance_due: room nights not posted yet
        company = stay_share(link, balance, folio_lines(folio.id),
                             projected=max(balance - posted, Decimal(0)))
    else:
        basis, balance, currency = "guaranteed_amount", Decimal(row.total_amount), row.currency
        company = future_share(link, balance)
    company = company if usable else Decimal(0)
    return CompanyBillingOut(
        reservation_id=row.id, company_profile_id=link.company_profile_id,
        company_payment_method_id=link.company_payment_method_id,
        approval=method.status if method is not None else "REMOVED",
        cap=link.cap, currency=currency, basis=basis, balance=quantize(balance, currency),
        company_pays=quantize(company, currency),
        guest_pays=quantize(balance - company, currency), routed_by=link.routed_by,
        categories=link.categories, transaction_codes=link.transaction_codes)


def get_stay_billing(ctx: Ctx, property_id: uuid.UUID,
                     reservation_id: uuid.UUID) -> CompanyBillingOut:
    """Who pays what of a stay routed to a company, before check-out (404 for a stay not
    routed to one)."""
    from pms.queries.lookups import load_reservation

    with read_scope(ctx):
        row = load_reservation(ctx, property_id, reservation_id)
        link, method = billing_link_and_method(row.id)
        if link is None:
            raise NotFound("this stay is not billed to a company")
        return _preview(ctx, row, link, method)


def route_stay(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
               body: CompanyBillingIn) -> tuple[CompanyBillingOut, bool]:
    """Route a CONFIRMED or CHECKED_IN stay's folio to a company (staff): the method must be
    an approved one of the company; a BILL_TO_COMPANY one is checked against the company's
    credit limit for what the company would take over (the stay's guaranteed amount, or its
    in-house folio's balance, under the cap), the stay itself left out of the exposure. The
    same routing again changes nothing. Returns (the preview, whether anything changed).

    Raises: NotFound; ReservationNotEditable (409: not CONFIRMED or CHECKED_IN);
        ValidationFailed (422); CreditLimitExceeded (409).
    """
    from pms.services.reservations.stays import lock_stay

    with lock_errors(), unit_of_work(ctx) as uow:
        row, _today = lock_stay(ctx, property_id, reservation_id)
        if row.status not in OPEN_STATUSES:
            raise ReservationNotEditable(f"a {row.status} stay cannot be routed to a company")
        require_company(ctx, body.company_profile_id)
        method = CompanyPaymentMethod.get_or_none(
            CompanyPaymentMethod.id == body.company_payment_method_id)
        if method is None:
            raise unknown_reference("company_payment_method_id",
                                    "company_payment_method_id is not a known payment method")
        folio = _guest_folio(row.id) if row.status == "CHECKED_IN" else None
        currency = folio.currency if folio is not None else row.currency
        if body.cap is not None:
            exact(body.cap, currency, "cap")
        wanted = CompanyBilling(cap=body.cap, categories=_lower(body.categories),
                                transaction_codes=body.transaction_codes or None)
        if body.cap is None and body.categories is None and body.transaction_codes is None:
            apply_contract(wanted, body.company_profile_id)
        link = CompanyBilling.get_or_none(CompanyBilling.reservation_id == row.id)
        if (link is not None and link.company_profile_id == body.company_profile_id
                and link.company_payment_method_id == method.id
                and _same_routing(link, wanted)):
            return _preview(ctx, row, link, method), False
        billing = check_billing(ctx, body.company_profile_id, method.id, property_id,
                                Decimal(0), currency)  # the company locked, the method usable
        if method.status == CompanyPaymentMethodStatus.BILL_TO_COMPANY:
            share = (folio_share(wanted, folio) if folio is not None
                     else future_share(wanted, Decimal(row.total_amount)))
            admit_exposure(ctx, body.company_profile_id, share, currency, exclude=row.id)
        created = link is None
        if created:
            link = CompanyBilling.build(company_profile_id=body.company_profile_id,
                                        company_payment_method_id=method.id,
                                        reservation_id=row.id, property_id=row.property_id)
        link.company_profile_id = body.company_profile_id
        link.company_payment_method_id = method.id
        link.cap, link.routed_by = wanted.cap, ctx.sub
        link.categories, link.transaction_codes = wanted.categories, wanted.transaction_codes
        if created:
            link.save(force_insert=True)
            row.company_billed = True  # check-out reads the routing only then
        else:
            link.save()
        named = row.company_profile_id is None  # the company it is billed to is its company
        if named:
            row.company_profile_id = body.company_profile_id
        if created or named:
            row.save()
        out = _preview(ctx, row, link, method)
        uow.record("reservation", "routed_to_company", row,
                   {**billing, "cap": None if wanted.cap is None else money(Decimal(wanted.cap)),
                    "categories": wanted.categories,
                    "transaction_codes": wanted.transaction_codes,
                    "reservation_id": str(row.id)}, property_id=row.property_id)
    return out, True


def unroute_stay(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID) -> None:
    """Remove a stay's routing to a company (staff): the guest pays the whole folio again and
    the stay leaves the company's exposure. A CONFIRMED or CHECKED_IN stay only: after
    check-out the company's share is on its receivable account (revert the check-out first,
    which reverses the direct bill). Audited, with its event
    `hotel:pms:reservation:unrouted_from_company`.

    Raises: NotFound (no such stay, or not routed to a company); ReservationNotEditable (409).
    """
    from pms.services.reservations.stays import lock_stay

    with lock_errors(), unit_of_work(ctx) as uow:
        row, _today = lock_stay(ctx, property_id, reservation_id)
        link = CompanyBilling.get_or_none(CompanyBilling.reservation_id == row.id)
        if link is None:
            raise NotFound("this stay is not billed to a company")
        if row.status not in OPEN_STATUSES:
            raise ReservationNotEditable(
                f"a {row.status} stay's company billing cannot be removed")
        data = {"reservation_id": str(row.id),
                "company_profile_id": str(link.company_profile_id),
                "company_payment_method_id": str(link.company_payment_method_id),
                "cap": None if link.cap is None else money(Decimal(link.cap))}
        CompanyBilling.delete().where(CompanyBilling.reservation_id == row.id).execute()
        row.company_billed = False
        row.save()
        uow.record("reservation", "unrouted_from_company", row, data, before=data,
                   property_id=row.property_id)


def _same_cap(a: Any, b: Any) -> bool:
    return (a is None) == (b is None) and (a is None or Decimal(a) == Decimal(b))


def _same_routing(a: Any, b: Any) -> bool:
    return (_same_cap(a.cap, b.cap) and (a.categories or None) == (b.categories or None)
            and (a.transaction_codes or None) == (b.transaction_codes or None))


def settle_at_check_out(uow: Any, reservation: Reservation, state: Any, *,
                        payments: Any = None, ledger: Any = None) -> Decimal:
    """At check-out, inside its unit of work, after the last room nights are on the guest
    folio and before the balance is refused: the company's share of a stay routed to it
    (under the cap) is settled.

    BILL_TO_COMPANY: checked against the company's credit limit (its exposure without this
    stay, plus the share: 409 credit_limit_exceeded, nothing written); then a DIRECT_BILL
    payment (CAPTURED) takes the share off the folio, the company's receivable account's
    open_balance grows by it, and a PENDING ledger posting (debit the company's receivable
    account `company_receivable:<company>`, made on demand by the ledger client, credit the
    guest ledger) goes out after commit (the reconciler re-sends it after a crash); audited,
    with its event `hotel:pms:company_receivable_account:direct_billed`. Returns 0.

    POSTPAY: a PENDING CARD payment on the company's payments-service reference, charged
    after commit through the payments service (`reconcile_payments` finishes it after a
    crash or an outage). Returns the share, which the balance check counts as settled.

    A stay not routed to a company, or whose method is no longer approved, settles nothing:
    the guest pays.
    """
    if not reservation.company_billed:  # no routing to read (migration 040)
        return Decimal(0)
    link, method = billing_link_and_method(reservation.id)
    if link is None or method is None or method.status not in COMPANY_PAYMENT_METHOD_USABLE:
        return Decimal(0)
    folio = state.folio
    share = stay_share(link, state.balance(), state.charges)
    if share <= 0:
        return Decimal(0)
    ctx = uow.ctx
    payment = FolioPayment(
        env_id=ctx.env_id, folio=folio.id, amount=share, currency=folio.currency,
        kind="PAYMENT", status=PAYMENT_INITIAL.value, business_date=state.today)
    payment.id = uuid.uuid4()
    if method.status == CompanyPaymentMethodStatus.POSTPAY:
        payment.method, payment.payment_method_id = "CARD", method.payment_method_id
        payment.idempotency_key = f"postpay:{payment.id}"
        write_with_commit(uow, payment)
        state.add_payment(payment)
        if payments is not None:
            from pms.services.cashiering.payments import complete_after_commit

            uow.after_commit(lambda: complete_after_commit(ctx, reservation.property_id,
                                                           payment, payments, ledger))
        return share
    for_update(Profile.select().where(Profile.id == link.company_profile_id)).first()
    account = for_update(CompanyReceivableAccount.select().where(
        CompanyReceivableAccount.company_profile_id == link.company_profile_id)).first()
    # the credit held for the company pays first: only the rest is new exposure
    held = Decimal(account.credit_balance or 0) if account is not None else Decimal(0)
    admit_exposure(ctx, link.company_profile_id, share - min(held, share), folio.currency,
                   exclude=reservation.id)
    payment.method = DIRECT_BILL
    payment.idempotency_key = f"direct-bill:{payment.id}"
    payment.status = PAYMENT_MACHINE.transition(payment.status, "capture").value
    write_with_commit(uow, payment)
    state.add_payment(payment)
    fiscal_journal.append_payment(folio.property_id, payment, now=ctx.now)
    posting = posting_row(folio.property_id, payment.idempotency_key, folio.currency,
                          [LedgerLine(f"company_receivable:{link.company_profile_id}",
                                      debit=share),
                           LedgerLine("guest_ledger", credit=share)],
                          f"Direct bill {reservation.confirmation_number}")
    if posting is not None:
        write_with_commit(uow, posting)
        if ledger is not None:
            uow.after_commit(lambda: send_postings(ctx, ledger, [posting]))
    receivable_ledger.bill(ctx, link.company_profile_id, reservation, folio, payment, share,
                           routed_lines(link, state.charges), state.today)
    before = to_data(receivable_account_out(account))
    held = Decimal(account.credit_balance or 0)  # a paid bill reverted: taken first
    applied = min(held, share)
    account.credit_balance = held - applied
    account.open_balance = Decimal(account.open_balance or 0) + share - applied
    account.save()
    uow.record("company_receivable_account", "direct_billed", account,
               {**to_data(receivable_account_out(account)), "amount": money(share),
                "credit_applied": money(applied),
                "reservation_id": str(reservation.id), "folio_id": str(folio.id),
                "payment_id": str(payment.id)}, before=before,
               property_id=reservation.property_id)
    return Decimal(0)


# -- a check-out reverted: the direct bill goes back -------------------------------------------

DIRECT_BILL_REVERSAL = "direct-bill-reversal:"  # + the DIRECT_BILL payment's id: once each


def reverse_direct_bill(uow: Any, reservation: Reservation, *, ledger: Any = None) -> None:
    """A check-out reverted (inside the revert's unit of work, the folio reopened): each
    captured DIRECT_BILL payment of the stay's guest folios not reversed yet gets its REFUND
    row (`refund_of` the payment, CAPTURED, the amount negative: the folio owes it again),
    the company's receivable account's open_balance drops by it, and a PENDING ledger posting
    (debit the guest ledger, credit `company_receivable:<company>`) goes out after commit (the
    reconciler re-sends it after a crash). The reversal is an entry of its own and never
    drives `open_balance` below zero: what the company had already paid of the bill becomes
    `credit_balance` (held for the company, `credited` in the event), which the company's next
    direct bill takes first (`credit_applied`). Idempotent: the reversal's key
    `direct-bill-reversal:<payment>` is unique per env and a reversed payment is skipped.
    Audited, with its event `hotel:pms:company_receivable_account:direct_bill_reversed`.
    A stay never billed to a company reads nothing (`company_billed`, migration 040)."""
    if not reservation.company_billed:
        return
    folios = Folio.select(Folio.id).where(Folio.reservation == reservation.id,
                                          Folio.folio_type == "GUEST")
    billed = list(FolioPayment.select().where(
        FolioPayment.folio.in_(folios), FolioPayment.method == DIRECT_BILL,
        FolioPayment.kind == "PAYMENT", FolioPayment.status == "CAPTURED")
        .order_by(FolioPayment.created_at, FolioPayment.id))
    if not billed:
        return
    reversed_ = {p.refund_of for p in FolioPayment.select(FolioPayment.refund_of).where(
        FolioPayment.refund_of.in_([p.id for p in billed]))}
    link = CompanyBilling.get(CompanyBilling.reservation_id == reservation.id)
    ctx = uow.ctx
    prop = load_property(reservation.property_id)
    for_update(Profile.select().where(Profile.id == link.company_profile_id)).first()
    account = for_update(CompanyReceivableAccount.select().where(
        CompanyReceivableAccount.company_profile_id == link.company_profile_id)).first()
    for paid in billed:
        if paid.id in reversed_:
            continue
        amount = Decimal(paid.amount)
        back = FolioPayment(
            env_id=ctx.env_id, folio=paid.folio_id, amount=-amount, currency=paid.currency,
            kind="REFUND", method=DIRECT_BILL, status="CAPTURED", refund_of=paid.id,
            idempotency_key=DIRECT_BILL_REVERSAL + str(paid.id),
            business_date=reservation.checked_out_business_date)
        back.id = uuid.uuid4()
        back.save(force_insert=True)
        fiscal_journal.append_payment(reservation.property_id, back, now=ctx.now)
        posting = posting_row(reservation.property_id, back.idempotency_key, paid.currency,
                              [LedgerLine("guest_ledger", debit=amount),
                               LedgerLine(f"company_receivable:{link.company_profile_id}",
                                          credit=amount)],
                              f"Direct bill reversed {reservation.confirmation_number}")
        if posting is not None:
            write_with_commit(uow, posting)
            if ledger is not None:
                uow.after_commit(lambda p=posting: send_postings(ctx, ledger, [p]))
        item = receivable_ledger.reverse(ctx, link.company_profile_id, reservation, paid, back,
                                         amount, business_date(prop, ctx.now))
        before = to_data(receivable_account_out(account))
        credited = receivable_ledger.take_back(account, amount)  # what the company had paid
        account.save()
        uow.record("company_receivable_account", "direct_bill_reversed", account,
                   {**to_data(receivable_account_out(account)), "amount": money(amount),
                    "credited": money(credited),
                    "reservation_id": str(reservation.id), "folio_id": str(paid.folio_id),
                    "payment_id": str(paid.id), "reversal_id": str(back.id),
                    "item_id": str(item.id)}, before=before,
                   property_id=reservation.property_id)
