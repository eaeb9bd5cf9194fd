"""Lists of values (`GET /v1/lov/{list}`): one function, `list_values`, over three sources.

- Stored lists (`LovEntry` rows, seeded per env by environment initialization from
  `SEEDED_LISTS`): reservation sources and channels, kinds, reasons, kiosk modes, company
  payment method approvals.
- A property's catalog (`parent` = the property id): room types, rate plans, packages,
  transaction codes.
- The transition tables of pms/domain/states.py, never written by hand: for every
  `<NAME>_MACHINE`, `<name>-statuses` (its states) and `<name>-next-statuses?parent=<state>`
  (the states one trigger leads to, self-transitions left out). A machine added there (blocks,
  events) gets its two lists with no change here.

Items are `{code, name, description, active}`; lists are small, so a page is cut from the whole
list in its order and the cursor is the position (opaque).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pms.context import Ctx
from pms.db.pagination import Page, decode_cursor, encode_cursor
from pms.db.uow import read_scope
from pms.domain import states
from pms.domain.machine import Machine
from pms.errors import NotFound, ValidationFailed
from pms.models import Package, Property, RatePlan, RoomType, TransactionCode
from pms.models.settings import LovEntry


@dataclass(frozen=True)
class LovItem:
    code: str
    name: str
    description: str | None = None
    active: bool = True
    sort_order: int = 0
    id: Any = None  # a catalog row's id (issue 37: the value of a form's *_id field)


def _items(codes: list[str], descriptions: dict[str, str] | None = None) -> list[LovItem]:
    return [LovItem(code, label(code), (descriptions or {}).get(code), True, i)
            for i, code in enumerate(codes)]


def label(code: str) -> str:
    """`CHECKED_IN` -> `Checked in`, `mini bar` -> `Mini bar`, `F&B` stays."""
    if re.fullmatch(r"[A-Z0-9_]+", code):
        text = code.replace("_", " ")
        return text[:1] + text[1:].lower()
    return code[:1].upper() + code[1:]


# The env's own lists: what environment initialization seeds (list name -> items).
SEEDED_LISTS: dict[str, list[LovItem]] = {
    "reservation-sources": _items(["DIRECT", "WALKIN", "CHANNEL", "PHONE", "CORPORATE"]),
    "reservation-channels": _items(["WEB", "KIOSK", "GDS", "OTA", "FRONT_DESK", "CALL_CENTER"]),
    "service-request-kinds": _items(["TOWELS", "LATE_CHECKOUT", "WAKE_UP_CALL", "MAINTENANCE",
                                     "OTHER"]),
    "housekeeping-task-kinds": _items([k.value for k in states.HkTaskKind]),
    "folio-item-categories": _items(["room", "tax", "F&B", "mini bar", "other"]),
    "cancellation-reasons": _items(["GUEST_REQUEST", "NO_PAYMENT", "DUPLICATE", "OTHER"]),
    # SPEC's enumerations of kiosk modes and company payment method approvals
    "kiosk-modes": _items(["CHECK_IN", "CHECK_OUT", "COLLECT_KEY", "WALK_IN"]),
    "company-payment-method-approvals": _items(
        ["PENDING", "POSTPAY", "BILL_TO_COMPANY", "REJECTED"],
        {"POSTPAY": "Shown at the corporate checkout",
         "BILL_TO_COMPANY": "Shown at the corporate checkout"}),
}

# Dependent lists of a property's catalog: list name -> (model, has an `active` column)
CATALOG_LISTS: dict[str, tuple[Any, bool]] = {
    "room-types": (RoomType, False),
    "rate-plans": (RatePlan, True),
    "packages": (Package, False),
    "transaction-codes": (TransactionCode, True),
}


def machines() -> dict[str, Machine[Any]]:
    """Every transition table of pms/domain/states.py by list stem (`HK_TASK_MACHINE` ->
    `hk-task`)."""
    return {name[: -len("_MACHINE")].lower().replace("_", "-"): value
            for name, value in vars(states).items()
            if name.endswith("_MACHINE") and isinstance(value, Machine)}


def machine_statuses(machine: Machine[Any]) -> list[LovItem]:
    return [LovItem(s.value, label(s.value), None, True, i)
            for i, s in enumerate(machine.states)]


def next_statuses(machine: Machine[Any], parent: str | None) -> list[LovItem]:
    """The states one trigger leads to from `parent`, in the enum's order, with the triggers."""
    if parent is None:
        raise ValidationFailed("this list needs parent=<state>",
                               errors=[{"field": "parent", "message": "required"}])
    try:
        state = machine.states(parent)
    except ValueError:
        raise ValidationFailed(f"{parent} is not a state of this machine",
                               errors=[{"field": "parent", "message": "unknown state"}]) from None
    triggers: dict[Any, list[str]] = {}
    for (source, trigger), target in machine.table.items():
        if source == state and target != state:
            triggers.setdefault(target, []).append(trigger)
    return [LovItem(s.value, label(s.value), "by " + ", ".join(sorted(triggers[s])), True, i)
            for i, s in enumerate(machine.states) if s in triggers]


def list_names() -> list[str]:
    """Every list `GET /v1/lov/{list}` serves."""
    generated = []
    for stem in machines():
        generated += [f"{stem}-statuses", f"{stem}-next-statuses"]
    return sorted({*SEEDED_LISTS, *CATALOG_LISTS, *generated})


def _stored(name: str) -> list[LovItem]:
    rows = (LovEntry.select().where(LovEntry.list_name == name)
            .order_by(LovEntry.sort_order, LovEntry.code))
    return [LovItem(r.code, r.name, r.description, bool(r.active), r.sort_order) for r in rows]


def _catalog(name: str, parent: str | None) -> list[LovItem]:
    model, has_active = CATALOG_LISTS[name]
    if parent is None:
        raise ValidationFailed(f"the list {name} needs parent=<property id>",
                               errors=[{"field": "parent", "message": "required"}])
    try:
        property_id = uuid.UUID(parent)
    except ValueError:
        raise NotFound("no such property") from None
    if Property.fetch(property_id) is None:
        raise NotFound("no such property")
    rows = model.select().where(model.property == property_id).order_by(model.code)
    return [LovItem(r.code, r.name, getattr(r, "description", None),
                    bool(r.active) if has_active else True, i, r.id) for i, r in enumerate(rows)]


def _resolve(name: str, parent: str | None) -> Callable[[], list[LovItem]]:
    if name in SEEDED_LISTS:
        return lambda: _stored(name)
    if name in CATALOG_LISTS:
        return lambda: _catalog(name, parent)
    for stem, machine in machines().items():
        if name == f"{stem}-statuses":
            return lambda: machine_statuses(machine)
        if name == f"{stem}-next-statuses":
            return lambda: next_statuses(machine, parent)
    raise NotFound(f"no list of values named {name}")


def list_values(ctx: Ctx, name: str, *, parent: str | None = None,
                include_inactive: bool = False, limit: int = 50,
                cursor: str | None = None, search: str | None = None) -> Page[LovItem]:
    """One page of a list of values.

    Raises:
        NotFound: no such list; for a property's list, no such property in this env.
        ValidationFailed: `parent` missing where the list needs one, or not a state.
    """
    load = _resolve(name, parent)
    with read_scope(ctx):
        items = load()
    if not include_inactive:
        items = [i for i in items if i.active]
    if search:  # issue 37: the console's option search (its cursor pages the matches)
        needle = search.casefold()
        items = [i for i in items if needle in i.code.casefold() or needle in i.name.casefold()]
    start = 0
    if cursor:
        kind, position = decode_cursor(cursor)
        if kind != name or not position.isdigit():
            raise ValidationFailed("cursor is not valid", code="invalid_cursor",
                                   errors=[{"field": "cursor", "message": "not from this list"}])
        start = int(position)
    page = items[start:start + limit]
    more = start + limit < len(items)
    return Page(page, encode_cursor([name, start + limit]) if more else None)


def seed_lists(ctx: Ctx) -> int:
    """Insert the seeded lists' missing entries (inside the caller's unit of work); returns how
    many were added. Entries already there (perhaps edited) are left as they are."""
    have = {(r.list_name, r.code) for r in LovEntry.select(LovEntry.list_name, LovEntry.code)}
    added = 0
    for name, items in SEEDED_LISTS.items():
        for item in items:
            if (name, item.code) in have:
                continue
            LovEntry.create(env_id=ctx.env_id, list_name=name, code=item.code, name=item.name,
                            description=item.description, active=item.active,
                            sort_order=item.sort_order)
            added += 1
    return added
