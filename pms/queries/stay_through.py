"""Through-stay lengths of stay for the booking's PostgreSQL fast path.

The booking reads its stay's rates and restrictions with its references in one round trip
(`pms_booking_refs`, whose columns are left alone here); that read predates
`min_stay_through` / `max_stay_through`. This module adds them: whether a (property, rate plan)
has any through-stay restriction at all is kept per process by the property's and the plan's
versions (every restriction write moves one of them: `pms.services.rates.rates.set_restrictions`
records on the plan, or on the property for every plan), so the usual booking, at a property
that uses none, reads nothing more; otherwise one small read of the stay's nights.
"""

from __future__ import annotations

import uuid
from datetime import date
from typing import Any

from pms.db.scope import require_env
from pms.domain.pricing import Rule
from pms.models.rates import Restriction

_HAS_THROUGH: dict[tuple[Any, ...], bool] = {}
_CACHE_MAX = 4096


def _has_through(property_id: uuid.UUID, property_version: int, plan_id: uuid.UUID,
                 plan_version: int) -> bool:
    key = (require_env(), property_id, property_version, plan_id, plan_version)
    found = _HAS_THROUGH.get(key)
    if found is None:
        found = (Restriction.select(Restriction.id)
                 .where((Restriction.property == property_id)
                        & (Restriction.rate_plan.is_null() | (Restriction.rate_plan == plan_id))
                        & (Restriction.min_stay_through.is_null(False)
                           | Restriction.max_stay_through.is_null(False)))
                 .exists())
        if len(_HAS_THROUGH) >= _CACHE_MAX:
            _HAS_THROUGH.clear()
        _HAS_THROUGH[key] = found
    return found


def through_rules(prop: Any, plan: Any, room_type: Any, arrival: date, departure: date
                  ) -> dict[date, list[tuple[None, None, Rule]]]:
    """The through-stay rules of the stay's nights for this plan and room type (as
    `SearchData.restrictions` holds them); {} at once when the plan has none anywhere."""
    if not _has_through(prop.id, prop.version, plan.id, plan.version):
        return {}
    out: dict[date, list[tuple[None, None, Rule]]] = {}
    query = (Restriction.select(Restriction.date, Restriction.min_stay_through,
                                Restriction.max_stay_through)
             .where((Restriction.property == prop.id)
                    & (Restriction.rate_plan.is_null() | (Restriction.rate_plan == plan.id))
                    & (Restriction.room_type.is_null() | (Restriction.room_type == room_type.id))
                    & (Restriction.date >= arrival) & (Restriction.date < departure)
                    & (Restriction.min_stay_through.is_null(False)
                       | Restriction.max_stay_through.is_null(False))))
    for day, low, high in query.tuples():
        day = date.fromisoformat(day) if isinstance(day, str) else day
        out.setdefault(day, []).append(
            (None, None, Rule(min_stay_through=low, max_stay_through=high)))
    return out
