"""The rate fence: who may be offered and book a negotiated rate plan.

One rule for the corporate availability search and reservation create, so an offer and its
booking never disagree (Apaleo's integrators report them drifting apart): a negotiated plan is
open only for a named company whose `preferences.negotiated_rate_plan_ids` lists it, and only
to a caller that may act for that company (`companies.may_act_for_company`: staff, the
company's own token, a traveler session bound to it). A public plan is open to everyone.
"""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.models import Profile, RatePlan
from pms.services.corporate.companies import may_act_for_company
from pms.services.inventory.availability import negotiated_plan_ids


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
