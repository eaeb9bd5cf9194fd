"""Which plans a company may be linked to (issue 31): negotiated plans of the env, nothing else.

One check for every way a link is written: a company profile created with
`preferences.negotiated_rate_plan_ids`, and the company's rate links
(`PUT .../companies/{profile_id}/rate-links`). Call inside a unit of work.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from pms.errors import ValidationFailed
from pms.models import RatePlan


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
