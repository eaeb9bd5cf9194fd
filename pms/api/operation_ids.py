"""The OpenAPI document's operation ids: a rule (`operation_id`, `<verb><Nouns>` from the path)
with a few overrides (OPERATION_ID_OVERRIDES), applied by pms.api.openapi_rules.refine.
"""

from __future__ import annotations

import re

# camelCase: a lowercase verb (`create`, `list`, `checkOut`...) then the nouns, 48 characters at
# most (tests/api/test_openapi_client.py)
OPERATION_ID_SHAPE = re.compile(r"^[a-z]+(?:[A-Z][a-z0-9]*)+$")
OPERATION_ID_MAX = 48

# Operations whose rule-made id reads badly (the rule is `operation_id` below).
OPERATION_ID_OVERRIDES = {
    ("GET", "/v1/openapi.json"): "getOpenApiDocument",
    ("GET", "/v1/admin/ui"): "listAdminPages",  # the console's page picker
    ("GET", "/v1/availability"): "searchEnvAvailability",
    ("POST", "/v1/properties/{property_id}/availability"): "searchAvailability",
    ("POST", "/v1/properties/{property_id}/corporate-availability"):
        "searchCorporateAvailability",
    ("POST", "/v1/properties/{property_id}/promo/validate"): "validatePromoCode",
    ("GET", "/v1/properties/{property_id}/end-of-day"): "listEndOfDayRuns",
    ("POST", "/v1/properties/{property_id}/end-of-day"): "runEndOfDay",
    ("POST", "/v1/properties/{property_id}/walk-in"): "createWalkIn",
    ("GET", "/v1/properties/{property_id}/in-house"): "listInHouseReservations",
    ("GET", "/v1/properties/{property_id}/folios"): "getFolioByRoom",
    ("GET", "/v1/properties/{property_id}/housekeeping"): "getHousekeepingBoard",
    ("PUT", "/v1/properties/{property_id}/housekeeping/{room_number}"):
        "setRoomHousekeepingStatus",
    ("POST", "/v1/properties/{property_id}/folios/{id}/charges/{charge_id}/correction"):
        "correctFolioCharge",
    ("PUT", "/v1/properties/{property_id}/reservations/{id}/room"): "assignReservationRoom",
    ("PUT", "/v1/admin/settings/settings/external-systems/{code}"): "updateAdminExternalSystem",
    ("DELETE", "/v1/admin/settings/settings/external-systems/{code}"):
        "deleteAdminExternalSystem",
    ("GET", "/v1/lov/{list}/{code}"): "getLovEntry",
    ("PUT", "/v1/lov/{list}/{code}"): "updateLovEntry",
    ("DELETE", "/v1/lov/{list}/{code}"): "deleteLovEntry",
    ("PUT", "/v1/admin/lov/lov/{list}/{code}"): "updateAdminLovEntry",
    ("DELETE", "/v1/admin/lov/lov/{list}/{code}"): "deleteAdminLovEntry",
}


def _pascal(text: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", text) if p)


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _plural(word: str) -> bool:
    return word.endswith("s") and not word.endswith("ss")


def operation_id(method: str, path: str, siblings: set[tuple[str, str]],
                 pages: set[tuple[str, str]]) -> str:
    """The rule: `<verb><Nouns>`. The nouns are the literal path segments (the leading
    `properties/{property_id}` dropped, a segment before an id singular); an item path is
    get/replace (update when it has no PATCH)/update/delete; a collection is list (a page)/get,
    create; a singular segment after an id is an action (`checkInReservation`); PUT of a
    segment is set."""
    override = OPERATION_ID_OVERRIDES.get((method, path))
    if override:
        return override
    segs = [s for s in path.split("/") if s and s != "v1"]
    if segs[:2] == ["properties", "{property_id}"] and len(segs) > 2:
        segs = segs[2:]
    if segs[:1] == ["admin"] and segs[2:4] == ["properties", "{property_id}"] and len(segs) > 4:
        segs = ["admin", *segs[4:]]  # a submit alias: "admin" + its domain route's
    words: list[str] = []
    for i, seg in enumerate(segs):
        if seg.startswith("{"):
            continue
        follows_id = i + 1 < len(segs) and segs[i + 1].startswith("{")
        words.append(_singular(seg) if follows_id else seg)
    nouns = "".join(_pascal(w) for w in words)
    if segs[-1].startswith("{"):
        verb = {"GET": "get", "PATCH": "update", "DELETE": "delete",
                "PUT": "replace" if ("PATCH", path) in siblings else "update"}[method]
        return verb + nouns
    last = segs[-1]
    head = "".join(_pascal(w) for w in words[:-1])
    if method == "GET":
        return ("list" if (method, path) in pages else "get") + nouns
    if method == "PUT":
        return "set" + nouns
    if method == "DELETE":
        return "delete" + nouns
    if _plural(last) or ("GET", path) in pages:
        return ("create" if method == "POST" else method.lower()) + head + _pascal(_singular(last))
    action = _pascal(last)
    return action[:1].lower() + action[1:] + head
