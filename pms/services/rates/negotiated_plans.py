"""Which plans a company may be linked to: negotiated plans of the env, nothing else.

One check for every way a link is written: a company profile created with
`preferences.negotiated_rate_plan_ids`, and the company's rate links
(`PUT .../companies/{profile_id}/rate-links`), and the permission a link needs at its plan's
property (`authorize_links`). Call inside a unit of work.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from pms.context import Ctx
from pms.errors import Forbidden, ValidationFailed
from pms.models import RatePlan
from pms.services.admin.policy_decision import authorize

LINK_SCOPE = "hotel:pms:rate_links:write"


def require_negotiated(ids: Sequence[uuid.UUID], field: str) -> list[RatePlan]:
    """The env's negotiated plans named by `ids`, in that order, duplicates dropped.

    Raises:
        ValidationFailed (422) naming `field` and every id that is not a negotiated plan of
        the env (unknown, another env's, or a public plan).
    """
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return []
    found = {r.id: r for r in RatePlan.select().where(
        RatePlan.id.in_(wanted), RatePlan.negotiated == True)}  # noqa: E712
    missing = [str(i) for i in wanted if i not in found]
    if missing:
        raise ValidationFailed(
            f"{field} names rate plans that are not negotiated plans of this environment",
            errors=[{"field": field, "message": f"not a negotiated plan: {', '.join(missing)}"}])
    return [found[i] for i in wanted]


def authorize_links(ctx: Ctx, plans: list[RatePlan]) -> None:
    """Links made outside this module's routes (a company profile created with
    `preferences.negotiated_rate_plan_ids`, SPEC's profile create under one property's path):
    each plan is its property's, so the caller needs `hotel:pms:rate_links:write` (403
    missing_scope) and the env's policies' yes for it at every linked plan's property (403
    policy_denied), as under that property's rate-links path."""
    if not plans:
        return
    if LINK_SCOPE not in ctx.scopes:
        raise Forbidden(f"linking a company to negotiated plans needs the scope {LINK_SCOPE}",
                        code="missing_scope")
    for property_id in dict.fromkeys(p.property_id for p in plans):
        authorize(ctx, LINK_SCOPE, property_id=property_id)
