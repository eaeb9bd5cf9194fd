"""A company's receivable account: its credit limit, currency and payment terms, env-level.

The receivable is the company's, not a property's: one credit limit for the chain, checked on
every property's bookings. So it is env-level: `/v1/companies/{id}/receivable` with its own
scope (`company_receivables`), decided by the env's policies for no property. The older
property path (`/v1/properties/{p}/companies/{id}/receivable-account`) still writes it, and
then needs the same env-level permission: a user whose policies limit it to one property
cannot change the chain's credit limit from that property's path.
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from pms.context import Ctx
from pms.db.uow import unit_of_work
from pms.domain.currencies import is_iso_4217
from pms.domain.money import exact
from pms.errors import (
    Forbidden,
    ReceivableAccountInUse,
    ValidationFailed,
)
from pms.models import (
    CompanyBilling,
    CompanyCreditOverride,
    CompanyPaymentMethod,
    CompanyReceivableAccount,
    Property,
    Reservation,
)
from pms.schemas.common import to_data
from pms.schemas.companies import (
    ReceivableAccountIn,
    ReceivableAccountOut,
    receivable_account_out,
)
from pms.services.corporate.companies import company_access

RECEIVABLE_SCOPE = "hotel:pms:company_receivables"


def authorize_receivable(ctx: Ctx, company_id: uuid.UUID, *, write: bool) -> None:
    """The env-level permission on the company's receivable: the token carries
    `hotel:pms:company_receivables:{read|write}` (403 missing_scope) and the env's policies
    allow it and `hotel:pms:companies:{read|write}` for the company at no property in
    particular (403 policy_denied: a rule limited to some properties does not hold)."""
    # (imported here: the policies module reads company roles through this one)
    from pms.services.admin.policy_decision import authorize

    mode = "write" if write else "read"
    scope = f"{RECEIVABLE_SCOPE}:{mode}"
    if scope not in ctx.scopes:
        raise Forbidden(f"the company's receivable is env-level: it needs the scope {scope}",
                        code="missing_scope")
    authorize(ctx, (f"hotel:pms:companies:{mode}", scope), company_id=company_id)


def set_receivable_account(ctx: Ctx, property_id: uuid.UUID | None, company_id: uuid.UUID,
                           body: ReceivableAccountIn) -> tuple[ReceivableAccountOut, bool]:
    """Create or change the company's receivable account (staff, with the env-level
    permission: `authorize_receivable`): its credit limit, currency and payment terms
    (`payment_terms_days`, omitted: kept, 30 for a new account; an invoice issued later is due
    that many days after its issue, an issued one keeps its due date). The same values again
    change nothing and emit nothing; a change is the account's `updated` event.
    `property_id`: the path's property (None on the env-level route). Returns
    (account, created)."""
    authorize_receivable(ctx, company_id, write=True)
    if not is_iso_4217(body.currency):
        raise ValidationFailed(f"{body.currency} is not an ISO 4217 currency",
                               code="unknown_currency",
                               errors=[{"field": "currency", "message": "not ISO 4217"}])
    limit = exact(body.credit_limit, body.currency, "credit_limit")
    with unit_of_work(ctx) as uow:
        company_access(ctx, property_id, company_id, lock=True)
        if not Property.select(Property.id).where(
                Property.currency_code == body.currency).exists():
            raise ValidationFailed(
                f"no property of this environment keeps its accounts in {body.currency}",
                code="currency_not_used",
                errors=[{"field": "currency", "message": "not a currency of the properties"}])
        row = CompanyReceivableAccount.get_or_none(
            CompanyReceivableAccount.company_profile_id == company_id)
        if row is None:
            row = CompanyReceivableAccount.build(
                company_profile_id=company_id, credit_limit=limit, currency=body.currency,
                payment_terms_days=30 if body.payment_terms_days is None
                else body.payment_terms_days, version=1)
            row.save(force_insert=True)
            out = receivable_account_out(row)
            uow.record("company_receivable_account", "created", row, to_data(out),
                       property_id=property_id)
            return out, True
        terms = (row.payment_terms_days if body.payment_terms_days is None
                 else body.payment_terms_days)
        if (row.credit_limit, row.currency, row.payment_terms_days) == (limit, body.currency,
                                                                       terms):
            return receivable_account_out(row), False
        if row.currency != body.currency:
            _refuse_currency_change(ctx, row)
        before = to_data(receivable_account_out(row))
        row.credit_limit, row.currency, row.payment_terms_days = limit, body.currency, terms
        row.save()
        out = receivable_account_out(row)
        uow.record("company_receivable_account", "updated", row, to_data(out), before=before,
                   property_id=property_id)
        return out, False


def _refuse_currency_change(ctx: Ctx, row: CompanyReceivableAccount) -> None:
    """A receivable account's currency changes only while nothing is open on it: no balance or
    credit, no CONFIRMED or CHECKED_IN stay routed to the company through a BILL_TO_COMPANY
    method, no ACTIVE unexpired credit override (409 receivable_account_in_use naming them)."""
    company_id = row.company_profile_id
    billed = CompanyPaymentMethod.select(CompanyPaymentMethod.id).where(
        CompanyPaymentMethod.company_profile_id == company_id,
        CompanyPaymentMethod.status == "BILL_TO_COMPANY")
    stays = [str(r.reservation_id) for r in CompanyBilling.select(CompanyBilling.reservation_id)
             .join(Reservation, on=(Reservation.id == CompanyBilling.reservation_id))
             .where(CompanyBilling.company_profile_id == company_id,
                    CompanyBilling.company_payment_method_id.in_(billed),
                    Reservation.status.in_(("CONFIRMED", "CHECKED_IN")))
             .order_by(CompanyBilling.reservation_id)]
    overrides = [str(r.id) for r in CompanyCreditOverride.select(CompanyCreditOverride.id).where(
        CompanyCreditOverride.company_profile_id == company_id,
        CompanyCreditOverride.status == "ACTIVE", CompanyCreditOverride.expires_at > ctx.now)
        .order_by(CompanyCreditOverride.id)]
    balance = Decimal(row.open_balance or 0)
    credit = Decimal(row.credit_balance or 0)
    if balance or credit or stays or overrides:
        raise ReceivableAccountInUse(
            f"the account's currency ({row.currency}) cannot change while anything is open "
            "on it", currency=row.currency, open_balance=f"{balance:.2f}",
            credit_balance=f"{credit:.2f}", routed_reservation_ids=stays,
            active_override_ids=overrides)


def has_receivable_account(company_id: uuid.UUID) -> bool:
    """Call inside a scope / unit of work."""
    return CompanyReceivableAccount.get_or_none(
        CompanyReceivableAccount.company_profile_id == company_id) is not None

