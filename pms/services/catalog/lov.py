"""Lists of values (`GET /v1/lov/{list}`): one function, `list_values`, over three sources.

- Stored lists (`LovEntry` rows, seeded per env by environment initialization from
  `SEEDED_LISTS`): service request kinds, folio item categories, reasons, company payment
  method approvals: the env's own, and the only ones it edits (`put_entry`, `delete_entry`:
  `PUT|DELETE /v1/lov/{list}/{code}`, each an event and an audit row). Every other list
  derives from something else and answers 409 `lov_not_editable` naming what.
- Lists a request schema enumerates (`SCHEMA_LISTS`): reservation sources and channels,
  housekeeping task kinds, kiosk modes, company roles, read from the schema itself.
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
from typing import Any, get_args

import msgspec
import peewee

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.pagination import Page, decode_cursor, encode_cursor
from pms.db.uow import read_scope, unit_of_work
from pms.domain import states
from pms.domain.machine import Machine
from pms.errors import Conflict, NotFound, ValidationFailed
from pms.models import Package, Property, RatePlan, RoomType, TransactionCode
from pms.models.settings import LovEntry
from pms.schemas.companies import Role
from pms.schemas.housekeeping import TaskKind
from pms.schemas.kiosk import KioskMode
from pms.schemas.reservations import Channel, Source
from pms.schemas.settings import LovCode, LovEntryIn
from pms.services.catalog.settings import check_precondition


@dataclass(frozen=True)
class LovItem:
    code: str
    name: str
    description: str | None = None
    active: bool = True
    sort_order: int = 0
    id: Any = None  # a catalog row's id (the value of a form's *_id field)
    version: int | None = None  # a stored entry's (its ETag); derived values have none

    @property
    def etag(self) -> str | None:
        return None if self.version is None else f'"l{self.version}"'


def _items(codes: list[str], descriptions: dict[str, str] | None = None) -> list[LovItem]:
    return [LovItem(code, label(code), (descriptions or {}).get(code), True, i)
            for i, code in enumerate(codes)]


def label(code: str) -> str:
    """`CHECKED_IN` -> `Checked in`, `mini bar` -> `Mini bar`, `F&B` stays."""
    if re.fullmatch(r"[A-Z0-9_]+", code):
        text = code.replace("_", " ")
        return text[:1] + text[1:].lower()
    return code[:1].upper() + code[1:]


# The env's own lists: what environment initialization seeds (list name -> items); the env
# may edit them, nothing the API validates depends on their codes.
SEEDED_LISTS: dict[str, list[LovItem]] = {
    "service-request-kinds": _items(["TOWELS", "LATE_CHECKOUT", "WAKE_UP_CALL", "MAINTENANCE",
                                     "OTHER"]),
    "folio-item-categories": _items(["room", "tax", "F&B", "mini bar", "other"]),
    "cancellation-reasons": _items(["GUEST_REQUEST", "NO_PAYMENT", "DUPLICATE", "OTHER"]),
    "company-payment-method-approvals": _items(
        ["PENDING", "POSTPAY", "BILL_TO_COMPANY", "REJECTED"],
        {"POSTPAY": "Shown at the corporate checkout",
         "BILL_TO_COMPANY": "Shown at the corporate checkout"}),
}

# Lists whose codes a request schema enumerates: read from that schema, never stored, so a
# list offers exactly what the API accepts (list name -> the Literal type)
SCHEMA_LISTS: dict[str, Any] = {
    "reservation-sources": Source,
    "reservation-channels": Channel,
    "housekeeping-task-kinds": TaskKind,
    "kiosk-modes": KioskMode,
    "company-roles": Role,
}


def schema_items(name: str) -> list[LovItem]:
    return _items(list(get_args(SCHEMA_LISTS[name])))


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
    return sorted({*SEEDED_LISTS, *SCHEMA_LISTS, *CATALOG_LISTS, *generated})


def own_entries(ctx: Ctx) -> list[tuple[str, LovItem]]:
    """Every entry of the env's own lists, inactive ones too, as (list name, entry): what the
    console edits."""
    with read_scope(ctx):
        rows = (LovEntry.select().where(LovEntry.list_name.in_(sorted(SEEDED_LISTS)))
                .order_by(LovEntry.list_name, LovEntry.sort_order, LovEntry.code))
        return [(r.list_name, _item(r)) for r in rows]


def _item(row: LovEntry) -> LovItem:
    return LovItem(row.code, row.name, row.description, bool(row.active), row.sort_order,
                   version=row.version)


def _stored(name: str) -> list[LovItem]:
    rows = (LovEntry.select().where(LovEntry.list_name == name)
            .order_by(LovEntry.sort_order, LovEntry.code))
    return [_item(r) for r in rows]


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
    if name in SCHEMA_LISTS:
        return lambda: schema_items(name)
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
    if search:  # the console's option search (its cursor pages the matches)
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



# -- the env's own lists, edited -----------------------------------------------------------------

def _editable(name: str) -> None:
    """Refuse a list the env does not own: 404 for no such list, 409 for a derived one."""
    if name in SEEDED_LISTS:
        return
    _resolve(name, None)  # NotFound for a list that does not exist
    origin = ("the request schema that validates it: it changes with the API"
              if name in SCHEMA_LISTS else
              "the property's catalog: change the catalog's rows" if name in CATALOG_LISTS else
              "a transition table: it changes with the state machine")
    raise Conflict(f"the list {name} is not edited here; it derives from {origin}",
                   code="lov_not_editable", list_name=name,
                   editable_lists=sorted(SEEDED_LISTS))


def _checked_code(code: str) -> str:
    try:
        return msgspec.convert(code, LovCode)
    except msgspec.ValidationError as exc:
        raise ValidationFailed(f"code is not valid: {exc}",
                               errors=[{"field": "code", "message": str(exc)}]) from None


def _entry(name: str, code: str) -> LovEntry | None:
    return for_update(LovEntry.select().where((LovEntry.list_name == name)
                                              & (LovEntry.code == code))).first()


def entry_data(row: LovEntry) -> dict[str, Any]:
    """An entry as its events and audit rows carry it."""
    return {"list": row.list_name, "code": row.code, "name": row.name,
            "description": row.description, "active": bool(row.active),
            "sort_order": row.sort_order, "version": row.version}


def get_entry(ctx: Ctx, name: str, code: str, *, parent: str | None = None) -> LovItem:
    """One value of a list, inactive too (what an edit form opens with).

    Raises:
        NotFound: no such list, or no such value in it. ValidationFailed: as `list_values`.
    """
    load = _resolve(name, parent)
    with read_scope(ctx):
        items = load()
    found = next((i for i in items if i.code == code), None)
    if found is None:
        raise NotFound(f"the list {name} has no entry {code}")
    return found


def _precondition(row: LovEntry | None, if_match: str | None) -> None:
    """If-Match (optional) names the entry's version read: a stale one, or one for an entry
    removed since, is 412."""
    if if_match is not None:
        check_precondition(if_match, _item(row).etag if row else '"l0"', required=False)


def put_entry(ctx: Ctx, name: str, code: str, body: LovEntryIn, *,
              if_match: str | None = None) -> tuple[LovItem, bool]:
    """Create or replace one entry of an env's own list; returns (the entry, created).
    A replaced entry keeps its place unless `sort_order` is given; a new one goes last.

    Raises:
        NotFound: no such list. Conflict (409 `lov_not_editable`): a derived list.
        ValidationFailed: the code is not one a list keeps.
        PreconditionFailed (412): If-Match given and not the entry's current ETag.
    """
    _editable(name)
    code = _checked_code(code)
    with unit_of_work(ctx) as uow:
        row = _entry(name, code)
        _precondition(row, if_match)
        created = row is None
        before = None if created else entry_data(row)
        if created:
            last = (LovEntry.select(peewee.fn.MAX(LovEntry.sort_order))
                    .where(LovEntry.list_name == name).scalar())
            row = LovEntry(env_id=ctx.env_id, list_name=name, code=code, version=1,
                           sort_order=(last + 1 if last is not None else 0))
        row.name, row.description, row.active = body.name, body.description, body.active
        if body.sort_order is not None:
            row.sort_order = body.sort_order
        try:
            with LovEntry._meta.database.atomic():
                row.save(force_insert=created)
        except peewee.IntegrityError:
            raise Conflict(f"{code} was added to {name} meanwhile: read the list again",
                           code="lov_entry_exists") from None
        data = entry_data(row)
        uow.record("lov_entry", "created" if created else "updated", row, data, before=before)
    return _item(row), created


def delete_entry(ctx: Ctx, name: str, code: str, *, if_match: str | None = None) -> None:
    """Remove one entry of an env's own list (what was recorded with its code stays as it is:
    nothing the API validates depends on these codes).

    Raises:
        NotFound: no such list or entry. Conflict (409 `lov_not_editable`): a derived list.
        PreconditionFailed (412): If-Match given and not the entry's current ETag.
    """
    _editable(name)
    with unit_of_work(ctx) as uow:
        row = _entry(name, code)
        if row is None:
            raise NotFound(f"the list {name} has no entry {code}")
        _precondition(row, if_match)
        before = entry_data(row)
        uow.record("lov_entry", "deleted", row, before, before=before)
        row.delete_instance()
