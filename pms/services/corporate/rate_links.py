"""A company's rate links (issue 31, SPEC "a rate plan can be negotiated and linked to
companies"): the negotiated plans the company may be offered and book.

The links are the company profile's `preferences.negotiated_rate_plan_ids` (what the rate fence,
`pms.services.rates.rate_fence`, and the corporate search read), so there is one record of them:
this use case replaces that list after the profile was created. Staff only (the route's gate):
a company never links itself to a price. The admin surface's `rate_links` alias calls the same
function.
"""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.db.uow import read_scope, unit_of_work
from pms.models import Profile, RatePlan
from pms.schemas.common import to_data
from pms.schemas.companies import LinkedRatePlan, RateLinksIn, RateLinksOut
from pms.services.corporate.companies import company_access
from pms.services.inventory.availability import negotiated_plan_ids
from pms.services.rates.negotiated_plans import require_negotiated

FIELD = "rate_plan_ids"


def _out(company: Profile, plans: list[RatePlan]) -> RateLinksOut:
    return RateLinksOut(
        company_profile_id=company.id, rate_plan_ids=[p.id for p in plans],
        rate_plans=[LinkedRatePlan(id=p.id, code=p.code, name=p.name, currency=p.currency,
                                   active=bool(p.active)) for p in plans])


def _plans(ids: list[uuid.UUID]) -> list[RatePlan]:
    """The linked plans that still exist, in the links' order."""
    if not ids:
        return []
    found = {p.id: p for p in RatePlan.select().where(RatePlan.id.in_(ids))}
    return [found[i] for i in ids if i in found]


def get_rate_links(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID) -> RateLinksOut:
    """The company's linked plans. Raises NotFound: no such property or company."""
    with read_scope(ctx):
        company = company_access(ctx, property_id, company_id).company
        return _out(company, _plans(negotiated_plan_ids(company)))


def set_rate_links(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                   body: RateLinksIn) -> RateLinksOut:
    """Replace the company's links (the same list again changes nothing and emits nothing).

    Raises:
        NotFound: no such property or company. ValidationFailed (422 on `rate_plan_ids`): an
        id that is not a negotiated plan of the env.
    """
    with unit_of_work(ctx) as uow:
        company = company_access(ctx, property_id, company_id, lock=True).company
        plans = require_negotiated(body.rate_plan_ids, FIELD)
        before_ids = negotiated_plan_ids(company)
        out = _out(company, plans)
        if before_ids == out.rate_plan_ids:
            return out
        before = to_data(_out(company, _plans(before_ids)))
        company.preferences = {**(company.preferences or {}),
                               "negotiated_rate_plan_ids": [str(p.id) for p in plans]}
        uow.save(company)
        uow.record("company", "rate_links_updated", company, to_data(out), before=before,
                   property_id=property_id)
        return out
