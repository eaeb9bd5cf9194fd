"""The rate fence: who may be offered and book a negotiated rate plan.

One rule for the corporate availability search and reservation create, so an offer and its
booking never disagree (Apaleo's integrators report them drifting apart): a negotiated plan is
open only for a named company whose `preferences.negotiated_rate_plan_ids` lists it, and only
to a caller that may act for that company (`companies.may_act_for_company`: staff, the
company's own token, a traveler session bound to it). A public plan is open to everyone.

A link may carry validity dates (`pms.services.corporate.rate_links`): a booking on the plan is
then refused unless every night of the stay falls within them (`require_link_valid`, 422
rate_link_not_valid_for_stay), and the corporate search offers it only for such stays.
"""

from __future__ import annotations

import uuid
from datetime import date

from pms.context import Ctx
from pms.errors import ValidationFailed
from pms.models import Profile, RatePlan
from pms.services.corporate.companies import may_act_for_company
from pms.services.inventory.availability import link_covers, link_validity, negotiated_plan_ids


def company_for_booking(ctx: Ctx, company_id: uuid.UUID | None) -> uuid.UUID | None:
    """The company a booking is for: the one it names, else (a company's own token) the
    holder's company."""
    return company_id if company_id is not None else ctx.holder_id


def negotiated_plan_open(ctx: Ctx, plan: RatePlan, company_id: uuid.UUID | None) -> bool:
    """Whether `plan` may be booked by the caller for `company_id` (call inside a scope)."""
    if not plan.negotiated:
        return True
    company_id = company_for_booking(ctx, company_id)
    if company_id is None:
        return False
    company = Profile.get_or_none((Profile.id == company_id) & (Profile.kind == "COMPANY"))
    return (company is not None and plan.id in negotiated_plan_ids(company)
            and may_act_for_company(ctx, company.id, booking=True))


def require_link_valid(ctx: Ctx, plan: RatePlan, company_id: uuid.UUID | None,
                       stay: tuple[date, date]) -> None:
    """A booking on a negotiated plan the fence admitted (`negotiated_plan_open`): every night
    of the stay within the link's validity dates (call inside a scope).

    Raises: ValidationFailed (422 rate_link_not_valid_for_stay on arrival_date, with the
        link's valid_from and valid_to)."""
    company_id = company_for_booking(ctx, company_id)
    if not plan.negotiated or company_id is None:
        return
    company = Profile.get_or_none((Profile.id == company_id) & (Profile.kind == "COMPANY"))
    if company is None or link_covers(company, plan.id, *stay):
        return
    valid_from, valid_to = link_validity(company)[plan.id]
    window = (f"{valid_from or 'any date'} to {valid_to or 'any date'}")
    raise ValidationFailed(
        f"the company's link to this negotiated plan is valid for stays from {window}",
        code="rate_link_not_valid_for_stay",
        errors=[{"field": "arrival_date",
                 "message": f"the stay's nights must fall within {window}"}],
        valid_from=None if valid_from is None else valid_from.isoformat(),
        valid_to=None if valid_to is None else valid_to.isoformat())
