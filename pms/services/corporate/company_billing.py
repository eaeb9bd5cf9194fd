"""Billing a stay to a company: the booking names one of the company's usable
payment methods (`company_payment_method_id`); a BILL_TO_COMPANY one is checked against the
company's credit limit.

The limit is the receivable account's credit limit plus the company's ACTIVE, unexpired credit
overrides (`pms.services.corporate.credit_overrides`). The exposure it is checked against has three
parts (`exposure`), always of the bill-to company and only of stays billed through a
BILL_TO_COMPANY method: `receivable`, the account's open balance (folio balances moved there at
check-out, `pms.services.corporate.company_direct_bill`); `open_folios`, the company's share of the
posted balances of its in-house stays' OPEN guest folios; `future_stays`, the guaranteed
amounts of its CONFIRMED stays (each under its routing cap).

Every path that adds to the exposure asks `admit_exposure`, the one check: a booking (and an
edit that raises the total), a stay routed to the company, a method re-classified to
BILL_TO_COMPANY (the stays already routed through it join the exposure), a charge posted on a
routed in-house folio (the growth of the company's share) and check-out. The 409 names every
part. The check runs with the company's profile row locked (FOR UPDATE), so two of them at once
cannot both take the last of the limit.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update
from pms.domain.states import (
    COMPANY_PAYMENT_METHOD_USABLE,
    CompanyPaymentMethodStatus,
    FolioStatus,
)
from pms.errors import (
    Conflict,
    CreditLimitExceeded,
    NotFound,
    ValidationFailed,
)
from pms.models import (
    CompanyBilling,
    CompanyPaymentMethod,
    CompanyReceivableAccount,
    CompanyRoutingInstruction,
    Folio,
    FolioCharge,
    Profile,
    Reservation,
)
from pms.services.cashiering.folios import folio_balance
from pms.services.corporate import credit_overrides
from pms.services.corporate.companies import may_act_for_company
from pms.services.rates.rate_fence import negotiated_plan_open
from pms.services.references import unknown_reference

OPEN_STATUSES = ("CONFIRMED", "CHECKED_IN")


def _refuse(field: str, message: str, code: str = "validation_failed") -> ValidationFailed:
    return ValidationFailed(message, code=code, errors=[{"field": field, "message": message}])


def check_billing(ctx: Ctx, company_id: uuid.UUID | None, method_id: uuid.UUID,
                  property_id: uuid.UUID, total: Decimal, currency: str) -> dict[str, Any]:
    """Inside the booking's unit of work, before its rows are written: the company and method
    are usable for the caller and (BILL_TO_COMPANY) the stay fits under the credit limit.
    Returns the billing summary the booking's event carries.

    Raises: ValidationFailed (422: no company, not one the caller may book for, method not the
        company's or not approved, currency mismatch); CreditLimitExceeded (409).
    """
    method = CompanyPaymentMethod.get_or_none(CompanyPaymentMethod.id == method_id)
    if method is None:  # names nothing here: 422 naming the field (the one rule)
        raise unknown_reference("company_payment_method_id",
                                "company_payment_method_id is not a known payment method")
    company_id = company_id if company_id is not None else ctx.holder_id
    if company_id is None:
        raise _refuse("company_profile_id", "a booking billed to a company names the company")
    company = for_update(Profile.select().where(Profile.id == company_id,
                                                Profile.kind == "COMPANY")).first()
    if company is None:
        raise unknown_reference("company_profile_id",
                                "company_profile_id is not a known company")
    if not may_act_for_company(ctx, company.id, booking=True):
        raise _refuse("company_profile_id", "not a company this booking may be billed to")
    if (method.company_profile_id != company.id
            or method.status not in COMPANY_PAYMENT_METHOD_USABLE):
        raise _refuse("company_payment_method_id", "not an approved payment method of this "
                      "company (POSTPAY or BILL_TO_COMPANY)", code="payment_method_not_usable")
    summary = {"company_profile_id": str(company.id),
               "company_payment_method_id": str(method.id), "approval": method.status}
    if method.status == CompanyPaymentMethodStatus.BILL_TO_COMPANY:
        contract = CompanyBilling()
        apply_contract(contract, company.id)  # what the booking's routing will be
        admit_exposure(ctx, company.id, future_share(contract, total), currency)
    return summary


def company_share(balance: Decimal, cap: Any) -> Decimal:
    """What the company pays of a folio balance under its routing cap (null: all of it)."""
    if balance <= 0:
        return Decimal(0)
    return balance if cap is None else min(balance, Decimal(cap))


# -- routing by charge type ---------------------------------------------------------------------
# A routing names the folio lines the company pays by category and transaction code; naming
# neither routes every line. A tax line goes with the line it taxes (the minibar's tax stays
# with the minibar); a line that taxes nothing is matched by its own category or code. The
# company's share is what its routed lines add up to, never more than the folio's balance and
# never more than the cap: one computation for check-out, the preview and every credit check.

def routes_all(link: Any) -> bool:
    return not link.categories and not link.transaction_codes


def routes_room(link: Any) -> bool:
    """Whether the routing takes the room nights (what a stay's guaranteed amount is made of)."""
    return routes_all(link) or "room" in (link.categories or [])


def routed_lines(link: Any, lines: Any) -> list[Any]:
    """The folio lines (category, transaction_code, parent_id, amount) the routing sends to the
    company."""
    lines = list(lines)
    if routes_all(link):
        return lines
    by_id = {str(line.id): line for line in lines}
    categories, codes = set(link.categories or []), set(link.transaction_codes or [])

    def routed(line: Any) -> bool:
        parent = by_id.get(str(line.parent_id)) if line.parent_id is not None else None
        line = parent if parent is not None else line
        return str(line.category).lower() in categories or line.transaction_code in codes

    return [line for line in lines if routed(line)]


def stay_share(link: Any, balance: Decimal, lines: Any = (), *,
               projected: Decimal = Decimal(0)) -> Decimal:
    """The company's share of a folio under its routing: `balance` what the folio owes, `lines`
    its posted lines, `projected` room nights not posted yet (counted when the routing takes
    the room)."""
    if routes_all(link):
        return company_share(balance, link.cap)
    routed = sum((Decimal(str(line.amount)) for line in routed_lines(link, lines)), Decimal(0))
    if routes_room(link):
        routed += projected
    return company_share(min(balance, max(routed, Decimal(0))), link.cap)


def future_share(link: Any, total: Decimal) -> Decimal:
    """The company's share of a CONFIRMED stay's guaranteed amount (its room nights)."""
    return company_share(total, link.cap) if routes_room(link) else Decimal(0)


def folio_lines(folio_id: Any) -> list[Any]:
    """A folio's posted lines as the routing reads them."""
    return list(FolioCharge.select(FolioCharge.id, FolioCharge.category,
                                   FolioCharge.transaction_code, FolioCharge.parent_id,
                                   FolioCharge.amount).where(FolioCharge.folio == folio_id))


def folio_share(link: Any, folio: Any, balance: Decimal | None = None) -> Decimal:
    """The company's share of an OPEN folio's posted balance under its routing."""
    balance = folio_balance(folio) if balance is None else balance
    if routes_all(link):
        return company_share(balance, link.cap)
    return stay_share(link, balance, folio_lines(folio.id))


def _billed_to_company(company_id: uuid.UUID) -> Any:
    """The company's billing links through a BILL_TO_COMPANY method (POSTPAY stays are charged
    to a card after the stay: they never reach the receivable account)."""
    bill = CompanyPaymentMethod.select(CompanyPaymentMethod.id).where(
        CompanyPaymentMethod.company_profile_id == company_id,
        CompanyPaymentMethod.status == CompanyPaymentMethodStatus.BILL_TO_COMPANY.value)
    return CompanyBilling.select().where(CompanyBilling.company_profile_id == company_id,
                                         CompanyBilling.company_payment_method_id.in_(bill))


def exposure(company_id: uuid.UUID, *, exclude: uuid.UUID | None = None) -> dict[str, Decimal]:
    """The company's exposure by part (call inside a scope): `receivable`, its open receivable
    balance (folio balances moved there at check-out); `open_folios`, the company's share of
    the posted balances of the OPEN guest folios of its in-house stays; `future_stays`, the
    guaranteed amounts (total_amount, under the routing cap) of its CONFIRMED stays. Only
    stays billed through a BILL_TO_COMPANY method count; `exclude`: one stay left out (the
    one being checked)."""
    # the open items only: the routings of CONFIRMED and CHECKED_IN stays, joined in the
    # database (a company's checked-out history is never read into the service)
    open_links = (_billed_to_company(company_id)
                  .select(CompanyBilling.reservation_id, CompanyBilling.cap,
                          CompanyBilling.categories, CompanyBilling.transaction_codes,
                          Reservation.status, Reservation.total_amount)
                  .join(Reservation, on=(Reservation.id == CompanyBilling.reservation_id))
                  .where(Reservation.status.in_(OPEN_STATUSES)))
    if exclude is not None:
        open_links = open_links.where(CompanyBilling.reservation_id != exclude)
    future = in_house = Decimal(0)
    links: dict[Any, Any] = {}
    checked_in = []
    for link in open_links.objects():
        links[link.reservation_id] = link
        if link.status == "CONFIRMED":
            future += future_share(link, Decimal(link.total_amount))
        else:
            checked_in.append(link.reservation_id)
    if checked_in:
        for folio in Folio.select().where(Folio.reservation.in_(checked_in),
                                          Folio.folio_type == "GUEST",
                                          Folio.status == FolioStatus.OPEN.value):
            in_house += folio_share(links[folio.reservation_id], folio)
    account = CompanyReceivableAccount.get_or_none(
        CompanyReceivableAccount.company_profile_id == company_id)
    receivable = Decimal(account.open_balance) if account is not None else Decimal(0)
    return {"receivable": receivable, "open_folios": in_house, "future_stays": future}


def admit_exposure(ctx: Ctx, company_id: uuid.UUID, needed: Decimal, currency: str, *,
                   exclude: uuid.UUID | None = None, **detail: Any) -> None:
    """The one credit check of every path that adds `needed` (in `currency`) to the company's
    exposure (module docstring): the company's profile row locked first, then the exposure
    (without `exclude`, the stay being checked, when its share is what is needed) plus
    `needed` must fit under the credit limit plus the ACTIVE unexpired overrides.

    Raises: ValidationFailed (422 currency_mismatch: the account is kept in another currency);
        CreditLimitExceeded (409, with the limit, the overrides, what is needed, the exposure
        by part and `detail`)."""
    for_update(Profile.select().where(Profile.id == company_id)).first()
    account = CompanyReceivableAccount.get_or_none(
        CompanyReceivableAccount.company_profile_id == company_id)
    if account is None:  # approval to BILL_TO_COMPANY needs one; none means no credit
        limit = Decimal(0)
    else:
        limit = Decimal(account.credit_limit)
        if account.currency != currency:
            raise _refuse("company_payment_method_id", f"the company's credit limit is in "
                          f"{account.currency}, this stay in {currency}",
                          code="currency_mismatch")
    parts = exposure(company_id, exclude=exclude)
    balance = sum(parts.values(), Decimal(0))
    overrides = credit_overrides.active_amount(company_id, currency, ctx.now)
    if balance + needed > limit + overrides:
        raise CreditLimitExceeded(
            "this would take the company over its credit limit",
            credit_limit=money(limit), overrides=money(overrides), needed=money(needed),
            currency=currency,
            exposure={"total": money(balance), **{k: money(v) for k, v in parts.items()}},
            **detail)


def money(amount: Decimal) -> str:
    return f"{amount:.2f}"


def record_billing(company_id: str, method_id: str, reservation: Reservation) -> None:
    """A stay booked for the company: its routing, under the company's contract routing."""
    link = CompanyBilling.build(company_profile_id=uuid.UUID(company_id),
                                company_payment_method_id=uuid.UUID(method_id),
                                reservation_id=reservation.id,
                                property_id=reservation.property_id)
    apply_contract(link, uuid.UUID(company_id))
    link.save(force_insert=True)


def apply_contract(link: Any, company_id: uuid.UUID) -> None:
    """Copy the company's contract routing (categories, transaction codes, cap) onto a stay's
    routing; without one the stay routes its whole folio."""
    contract = CompanyRoutingInstruction.get_or_none(
        CompanyRoutingInstruction.company_profile_id == company_id)
    link.categories = contract.categories if contract is not None else None
    link.transaction_codes = contract.transaction_codes if contract is not None else None
    link.cap = contract.cap if contract is not None else None


def _billed_link(reservation_id: uuid.UUID) -> Any:
    """The stay's routing when it is through a BILL_TO_COMPANY method, else None."""
    link = CompanyBilling.get_or_none(CompanyBilling.reservation_id == reservation_id)
    if link is None:
        return None
    method = CompanyPaymentMethod.get_or_none(
        CompanyPaymentMethod.id == link.company_payment_method_id)
    if method is None or method.status != CompanyPaymentMethodStatus.BILL_TO_COMPANY:
        return None
    return link


def check_growth(ctx: Ctx, reservation_id: uuid.UUID, growth: Decimal, currency: str) -> None:
    """An edit of a stay billed BILL_TO_COMPANY that raises its total by `growth` fits under
    the company's limit (its current total is already in the exposure). Inside the edit's
    unit of work; nothing to check for a stay not billed to a company or a total not rising."""
    if growth <= 0:
        return
    link = _billed_link(reservation_id)
    if link is not None:
        admit_exposure(ctx, link.company_profile_id, growth, currency)


def check_charge(ctx: Ctx, folio: Folio, before: Decimal, after: Decimal, *,
                 lines: Any = None) -> None:
    """A charge on the OPEN guest folio of an in-house stay routed BILL_TO_COMPANY moves its
    balance from `before` to `after`: the growth of the company's share (under the routing
    cap) fits under the company's limit (the folio's current share is already in the
    exposure). `lines`: the charge's new lines (a routing by charge type counts only those it
    routes). Inside the charge's unit of work; nothing to check for a stay not billed to a
    company, another folio, or a stay not in house (its guaranteed amount is what counts)."""
    reservation_id = folio.reservation_id
    if reservation_id is None or folio.folio_type != "GUEST":
        return
    if getattr(folio, "billed_to_company", None) is False:  # the charge's state read said so
        return
    link = _billed_link(reservation_id)
    if link is None or not Reservation.select(Reservation.id).where(
            Reservation.id == reservation_id, Reservation.status == "CHECKED_IN").exists():
        return
    currency = folio.currency
    if routes_all(link) or lines is None:  # lines unknown: counted as the company's
        growth = company_share(after, link.cap) - company_share(before, link.cap)
    else:
        posted = folio_lines(folio.id)
        growth = (stay_share(link, after, [*posted, *lines])
                  - stay_share(link, before, posted))
    if growth > 0:
        admit_exposure(ctx, link.company_profile_id, growth, currency,
                       reservation_id=str(reservation_id))


def routed_open_stays(method_id: uuid.UUID) -> list[str]:
    """The CONFIRMED and CHECKED_IN stays routed through one company payment method (ids)."""
    return [str(r.id) for r in Reservation.select(Reservation.id).join(
        CompanyBilling, on=(CompanyBilling.reservation_id == Reservation.id)).where(
        CompanyBilling.company_payment_method_id == method_id,
        Reservation.status.in_(OPEN_STATUSES)).order_by(Reservation.id)]


def method_exposure(method_id: uuid.UUID) -> tuple[Decimal, set[str], list[str]]:
    """What the open stays routed through one method would add to the company's exposure as
    BILL_TO_COMPANY: (the company's shares summed, their currencies, the stays' ids). A
    CONFIRMED stay counts its guaranteed amount, an in-house one its OPEN guest folio's
    balance, each under its routing cap (as `exposure` counts them)."""
    links = {link.reservation_id: link for link in CompanyBilling.select().where(
        CompanyBilling.company_payment_method_id == method_id)}
    if not links:
        return Decimal(0), set(), []
    total, currencies, ids = Decimal(0), set(), []
    for stay in (Reservation.select().where(Reservation.id.in_(list(links)),
                                            Reservation.status.in_(OPEN_STATUSES))
                 .order_by(Reservation.id)):
        link = links[stay.id]
        if stay.status == "CONFIRMED":
            share, currency = future_share(link, Decimal(stay.total_amount)), stay.currency
        else:
            folio = (Folio.select().where(Folio.reservation == stay.id,
                                          Folio.folio_type == "GUEST",
                                          Folio.status == FolioStatus.OPEN.value)
                     .order_by(Folio.created_at, Folio.id).first())
            if folio is None:
                continue
            share, currency = folio_share(link, folio), folio.currency
        total += share
        currencies.add(currency)
        ids.append(str(stay.id))
    return total, currencies, ids


def require_company(ctx: Ctx, company_id: uuid.UUID) -> None:
    """A body's `company_profile_id` names a company profile the caller can see: else 422
    `unknown_reference` naming the field, before any availability check (the one rule); a
    holder session gets 404 as for any row it cannot see (CONTRACT §2)."""
    if not Profile.select(Profile.id).where(Profile.id == company_id,
                                            Profile.kind == "COMPANY").exists():
        if ctx.holder_id is not None:
            raise NotFound("no such company")
        raise unknown_reference("company_profile_id",
                                "company_profile_id is not a known company")


# -- the company a stay is booked for (`reservation.company_profile_id`) -------------------------
# Kept whether or not the company pays: a company's production and its users' "our bookings"
# read it. It is the company the booking names (`company_profile_id`: a negotiated rate's
# company, a company user's booking), else the company the stay is billed to (the company's own
# token billing its own method), else the company a stay is later routed to.

def booking_company(ctx: Ctx, named: uuid.UUID | None,
                    billing: dict[str, Any] | None) -> uuid.UUID | None:
    """On create, inside its unit of work, after `require_company` (and `check_billing`): the
    stay's company. A holder session names only a company it may book for (404 otherwise, as
    for a company it cannot see), so no guest can put its stay on another company's list."""
    if named is not None:
        if not may_act_for_company(ctx, named, booking=True):
            raise NotFound("no such company")
        return named
    if billing is not None:
        return uuid.UUID(billing["company_profile_id"])
    return None


def change_booking_company(ctx: Ctx, row: Reservation, company_id: uuid.UUID | None,
                           plan: Any) -> None:
    """An edit's `company_profile_id` (staff only: 422 field_not_allowed for a holder session;
    null clears it). A stay billed to a company keeps that company (409
    company_billed_stay: remove the routing first); a stay on a negotiated plan keeps a
    company the plan is negotiated for (422 rate_plan_not_negotiated_for_company). Sets the
    column; the edit's audit row and `reservation:updated` event carry before and after."""
    if company_id == row.company_profile_id:
        return
    if ctx.holder_id is not None:
        raise _refuse("company_profile_id", "only staff change the company a stay is booked "
                      "for", code="field_not_allowed")
    if company_id is not None:
        require_company(ctx, company_id)
    if row.company_billed:
        link = CompanyBilling.get_or_none(CompanyBilling.reservation_id == row.id)
        if link is not None and link.company_profile_id != company_id:
            raise Conflict("the stay is billed to its company: remove its company billing "
                           "before changing the company it is booked for",
                           code="company_billed_stay",
                           company_profile_id=str(link.company_profile_id))
    if plan is not None and plan.negotiated:
        if not negotiated_plan_open(ctx, plan, company_id):
            raise _refuse("company_profile_id", "the stay's rate plan is a negotiated plan: "
                          "name a company it is negotiated for",
                          code="rate_plan_not_negotiated_for_company")
    row.company_profile_id = company_id
