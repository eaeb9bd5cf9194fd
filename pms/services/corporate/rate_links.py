"""A company's rate links (SPEC "a rate plan can be negotiated and linked to
companies"): the negotiated plans the company may be offered and book.

The links are the company profile's `preferences.negotiated_rate_plan_ids` (what the rate fence,
`pms.services.rates.rate_fence`, and the corporate search read), so there is one record of them.
A rate plan is a property's, so a link is too: the route under a property reads and replaces
that property's links only. Linking the company to P1's plans never touches its links to P2's,
and a plan of another property under P1's path is refused (422), so a user whose policies
limit it to P1 cannot relink P2. Staff only (the route's gate): a company never links itself to
a price. The admin surface's `rate_links` alias calls the same function.
"""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.db.uow import read_scope, unit_of_work
from pms.errors import ValidationFailed
from pms.models import Profile, RatePlan
from pms.schemas.common import to_data
from pms.schemas.companies import LinkedRatePlan, RateLinksIn, RateLinksOut
from pms.services.corporate.companies import company_access
from pms.services.inventory.availability import negotiated_plan_ids
from pms.services.rates.negotiated_plans import require_negotiated

FIELD = "rate_plan_ids"


def _out(company: Profile, property_id: uuid.UUID, plans: list[RatePlan]) -> RateLinksOut:
    return RateLinksOut(
        company_profile_id=company.id, property_id=property_id,
        rate_plan_ids=[p.id for p in plans],
        rate_plans=[LinkedRatePlan(id=p.id, code=p.code, name=p.name, currency=p.currency,
                                   active=bool(p.active)) for p in plans])


def _plans(ids: list[uuid.UUID]) -> list[RatePlan]:
    """The linked plans that still exist, in the links' order."""
    if not ids:
        return []
    found = {p.id: p for p in RatePlan.select().where(RatePlan.id.in_(ids))}
    return [found[i] for i in ids if i in found]


def _here(plans: list[RatePlan], property_id: uuid.UUID) -> list[RatePlan]:
    return [p for p in plans if p.property_id == property_id]


def get_rate_links(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID) -> RateLinksOut:
    """The company's links to the property's plans. Raises NotFound: no such property or
    company."""
    with read_scope(ctx):
        company = company_access(ctx, property_id, company_id).company
        return _out(company, property_id, _here(_plans(negotiated_plan_ids(company)),
                                                property_id))


def set_rate_links(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                   body: RateLinksIn) -> RateLinksOut:
    """Replace the company's links to the property's plans; its links to other properties'
    plans stay as they are (the same list again changes nothing and emits nothing).

    Raises:
        NotFound: no such property or company. ValidationFailed (422 on `rate_plan_ids`): an
        id that is not a negotiated plan of the env, or one of another property.
    """
    with unit_of_work(ctx) as uow:
        company = company_access(ctx, property_id, company_id, lock=True).company
        plans = require_negotiated(body.rate_plan_ids, FIELD)
        elsewhere = [str(p.id) for p in plans if p.property_id != property_id]
        if elsewhere:
            raise ValidationFailed(
                f"{FIELD} names negotiated plans of another property: link them under "
                "that property's path", errors=[{"field": FIELD, "message": "not a plan of "
                                                  f"this property: {', '.join(elsewhere)}"}])
        linked = _plans(negotiated_plan_ids(company))
        before_here = _here(linked, property_id)
        out = _out(company, property_id, plans)
        if [p.id for p in before_here] == out.rate_plan_ids:
            return out
        before = to_data(_out(company, property_id, before_here))
        kept = [p for p in linked if p.property_id != property_id]
        company.preferences = {**(company.preferences or {}),
                               "negotiated_rate_plan_ids": [str(p.id) for p in kept + plans]}
        uow.save(company)
        uow.record("company", "rate_links_updated", company, to_data(out), before=before,
                   property_id=property_id)
        return out
