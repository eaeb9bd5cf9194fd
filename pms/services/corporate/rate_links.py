"""A company's rate links (SPEC "a rate plan can be negotiated and linked to
companies"): the negotiated plans the company may be offered and book.

The links are the company profile's `preferences.negotiated_rate_plan_ids` (what the rate fence,
`pms.services.rates.rate_fence`, and the corporate search read), so there is one record of them.
A rate plan is a property's, so a link is too: the route under a property reads and replaces
that property's links only. Linking the company to P1's plans never touches its links to P2's,
and a plan of another property under P1's path is refused (422), so a user whose policies
limit it to P1 cannot relink P2. Staff only (the route's gate): a company never links itself to
a price. The admin surface's `rate_links` alias calls the same function.

A link may carry validity dates (OPERA's begin and end dates of a negotiated rate per
property): `links` in the body instead of `rate_plan_ids`, each `{rate_plan_id, valid_from,
valid_to}` (inclusive, either optional, from <= to). They are kept beside the ids in
`preferences.negotiated_rate_validity`; the rate fence books the plan only for stays whose
every night falls within them, and the corporate search offers it only then.
"""

from __future__ import annotations

import uuid
from datetime import date

from pms.context import Ctx
from pms.db.uow import read_scope, unit_of_work
from pms.errors import ValidationFailed
from pms.models import Profile, RatePlan
from pms.schemas.common import to_data
from pms.schemas.companies import LinkedRatePlan, RateLinksIn, RateLinksOut
from pms.services.corporate.companies import company_access
from pms.services.inventory.availability import LINK_VALIDITY, link_validity, negotiated_plan_ids
from pms.services.rates.negotiated_plans import require_negotiated

FIELD = "rate_plan_ids"


Validity = dict[uuid.UUID, tuple[date | None, date | None]]


def _out(company: Profile, property_id: uuid.UUID, plans: list[RatePlan],
         validity: Validity) -> RateLinksOut:
    return RateLinksOut(
        company_profile_id=company.id, property_id=property_id,
        rate_plan_ids=[p.id for p in plans],
        rate_plans=[LinkedRatePlan(id=p.id, code=p.code, name=p.name, currency=p.currency,
                                   active=bool(p.active),
                                   valid_from=validity.get(p.id, (None, None))[0],
                                   valid_to=validity.get(p.id, (None, None))[1])
                    for p in plans])


def _requested(body: RateLinksIn) -> tuple[list[uuid.UUID], Validity]:
    """The body's plan ids and the validity of those that have dates (422: both shapes or
    neither, a plan twice, valid_from after valid_to)."""
    if (body.rate_plan_ids is None) == (body.links is None):
        raise ValidationFailed("name the links as rate_plan_ids or as links, one of them",
                               errors=[{"field": "links",
                                        "message": "give rate_plan_ids or links"}])
    if body.links is None:
        return list(body.rate_plan_ids or []), {}
    ids, validity, errors = [], {}, []
    for n, link in enumerate(body.links):
        if link.rate_plan_id in ids:
            errors.append({"field": f"links[{n}].rate_plan_id", "message": "linked twice"})
        ids.append(link.rate_plan_id)
        if (link.valid_from is not None and link.valid_to is not None
                and link.valid_from > link.valid_to):
            errors.append({"field": f"links[{n}].valid_to",
                           "message": "before valid_from"})
        if link.valid_from is not None or link.valid_to is not None:
            validity[link.rate_plan_id] = (link.valid_from, link.valid_to)
    if errors:
        raise ValidationFailed("a link is named twice or ends before it starts",
                               code="invalid_rate_link", errors=errors)
    return ids, validity


def _stored(validity: Validity) -> dict[str, dict[str, str | None]]:
    return {str(k): {"valid_from": None if a is None else a.isoformat(),
                     "valid_to": None if b is None else b.isoformat()}
            for k, (a, b) in validity.items()}


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
                                                property_id), link_validity(company))


def set_rate_links(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                   body: RateLinksIn) -> RateLinksOut:
    """Replace the company's links to the property's plans; its links to other properties'
    plans stay as they are (the same list again changes nothing and emits nothing).

    Raises:
        NotFound: no such property or company. ValidationFailed (422 on `rate_plan_ids`): an
        id that is not a negotiated plan of the env, or one of another property; (422
        invalid_rate_link) a plan linked twice, valid_from after valid_to; (422) both
        `rate_plan_ids` and `links`, or neither.
    """
    ids, validity = _requested(body)
    with unit_of_work(ctx) as uow:
        company = company_access(ctx, property_id, company_id, lock=True).company
        plans = require_negotiated(ids, FIELD)
        elsewhere = [str(p.id) for p in plans if p.property_id != property_id]
        if elsewhere:
            raise ValidationFailed(
                f"{FIELD} names negotiated plans of another property: link them under "
                "that property's path", errors=[{"field": FIELD, "message": "not a plan of "
                                                  f"this property: {', '.join(elsewhere)}"}])
        linked = _plans(negotiated_plan_ids(company))
        before_here = _here(linked, property_id)
        old_validity = link_validity(company)
        out = _out(company, property_id, plans, validity)
        before_out = _out(company, property_id, before_here, old_validity)
        if before_out == out:
            return out
        before = to_data(before_out)
        kept = [p for p in linked if p.property_id != property_id]
        kept_validity = {k: v for k, v in old_validity.items()
                         if k in {p.id for p in kept}}
        company.preferences = {**(company.preferences or {}),
                               "negotiated_rate_plan_ids": [str(p.id) for p in kept + plans],
                               LINK_VALIDITY: _stored({**kept_validity, **validity})}
        uow.save(company)
        uow.record("company", "rate_links_updated", company, to_data(out), before=before,
                   property_id=property_id)
        return out
