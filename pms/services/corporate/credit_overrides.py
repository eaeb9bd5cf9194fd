"""Credit overrides: credit above a company's limit, until an expiry, requested by
one staff user with a reason and approved by ANOTHER (403 second_staff_required otherwise).
Every move is a transition of CREDIT_OVERRIDE_MACHINE, audited, with its event
`hotel:pms:company_credit_override:requested|approved|declined|revoked`. An ACTIVE, unexpired
override in the limit's currency raises the limit the exposure check uses
(`pms.services.corporate.company_billing`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.domain.money import exact
from pms.domain.states import (
    CREDIT_OVERRIDE_INITIAL,
    CREDIT_OVERRIDE_MACHINE,
    CreditOverrideStatus,
)
from pms.errors import NotFound, SecondStaffRequired, ValidationFailed
from pms.models import CompanyCreditOverride
from pms.schemas.common import to_data
from pms.schemas.companies import CreditOverrideIn, CreditOverrideOut, credit_override_out
from pms.services.corporate.companies import company_access

AGGREGATE = "company_credit_override"
_ACTIONS = {"approve": "approved", "decline": "declined", "revoke": "revoked"}


def list_overrides(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID, *,
                   limit: int = 50, cursor: str | None = None) -> Page[CreditOverrideOut]:
    with read_scope(ctx):
        company_access(ctx, property_id, company_id)
        page = paginate(CompanyCreditOverride.select().where(
            CompanyCreditOverride.company_profile_id == company_id),
            CompanyCreditOverride, limit=limit, cursor=cursor)
    return Page(items=[credit_override_out(r) for r in page.items],
                next_cursor=page.next_cursor)


def request_override(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                     body: CreditOverrideIn) -> CreditOverrideOut:
    amount = exact(body.amount, body.currency, "amount")
    if body.expires_at.tzinfo is None or body.expires_at <= ctx.now:
        raise ValidationFailed("expires_at must be a future RFC 3339 time with its offset",
                               errors=[{"field": "expires_at", "message": "not in the future"}])
    with unit_of_work(ctx) as uow:
        company_access(ctx, property_id, company_id, lock=True)
        row = CompanyCreditOverride.build(
            company_profile_id=company_id, amount=amount, currency=body.currency,
            reason=body.reason, expires_at=body.expires_at,
            status=CREDIT_OVERRIDE_INITIAL.value, requested_by=ctx.sub, version=1)
        row.save(force_insert=True)
        out = credit_override_out(row)
        uow.record(AGGREGATE, "requested", row, to_data(out), reason=body.reason,
                   property_id=property_id)
    return out


def decide(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID, override_id: uuid.UUID,
           trigger: str) -> CreditOverrideOut:
    """approve (a staff user other than the requester), decline or revoke."""
    with unit_of_work(ctx) as uow:
        company_access(ctx, property_id, company_id, lock=True)
        row = for_update(CompanyCreditOverride.select().where(
            CompanyCreditOverride.id == override_id,
            CompanyCreditOverride.company_profile_id == company_id)).first()
        if row is None:
            raise NotFound("no such credit override")
        if trigger == "approve" and ctx.client_kind != "user":
            raise SecondStaffRequired("a credit override is approved by a person (a user "
                                      "token), not a machine token")
        if trigger == "approve" and row.requested_by == ctx.sub:
            raise SecondStaffRequired("a credit override is approved by a second staff user, "
                                      "not the one who requested it")
        before = to_data(credit_override_out(row))
        row.status = CREDIT_OVERRIDE_MACHINE.transition(row.status, trigger).value
        row.decided_by = ctx.sub
        row.save()
        out = credit_override_out(row)
        uow.record(AGGREGATE, _ACTIONS[trigger], row, to_data(out), before=before,
                   property_id=property_id)
    return out


def active_amount(company_id: uuid.UUID, currency: str, now: datetime) -> Decimal:
    """The sum of the company's ACTIVE, unexpired overrides in `currency` (inside a scope)."""
    total = Decimal(0)
    for (amount,) in CompanyCreditOverride.select(CompanyCreditOverride.amount).where(
            CompanyCreditOverride.company_profile_id == company_id,
            CompanyCreditOverride.status == CreditOverrideStatus.ACTIVE.value,
            CompanyCreditOverride.currency == currency,
            CompanyCreditOverride.expires_at > now).tuples():
        total += Decimal(amount)
    return total
