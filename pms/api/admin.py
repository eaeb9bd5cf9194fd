"""The admin surface: page definitions, admin lists and form-submit aliases, built
from one registry.

`PAGES` holds one `PageDef` per page: its read scope's resource, where its rows come from
(`pms.services.admin.admin_lists.ListSource`), its columns and filters, the domain route whose request
schema is its form, the lists of values its fields take, and its actions, each naming a DOMAIN
route (method and path as the route table spells them). Everything else is derived:

- `GET /v1/admin/ui/{page}` (scope hotel:pms:admin): the definition, the form's JSON Schema
  generated from the msgspec schema that validates the domain route's body (with `x-lov` on the
  fields that take a list of values), and the actions the caller's scopes allow, each with the
  states it is allowed from (from the transition table).
- `GET /v1/admin/{page}` (the page's read scope): its rows, keyset paged, with an estimated total.
- Submit aliases: every action's domain route is also served at
  `/v1/admin/{scope resource}{domain path without /v1}` by the domain's OWN responder (the same
  declaration, body schema and service call; one implementation), closed to holder, kiosk and
  anonymous tokens. Adding a page, or an action to a page, is one entry here.

The alias responders are taken from the route table passed to `admin_routes`, so this module
never imports the route table back (tests/unit/test_import_graph.py).
"""

from __future__ import annotations

import dataclasses
import enum
import re
import typing
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Annotated, Any, Literal

import falcon
import msgspec

from pms.api.route import Route, openapi_path, responders
from pms.api.spec import GUEST_DENY, KIND_DENY, SPEC_ATTR, EndpointSpec, endpoint, spec_of
from pms.context import Ctx
from pms.db.pagination import decode_cursor
from pms.domain import states as st
from pms.domain.machine import Machine
from pms.errors import NotFound, ValidationFailed
from pms.models import (
    BanquetEvent,
    CompanyPaymentMethod,
    CompanyUser,
    Folio,
    HousekeepingTask,
    KioskConfig,
    Profile,
    RatePlan,
    Reservation,
    Room,
    RoomBlock,
    RoomType,
    SettingsDocument,
)
from pms.schemas.common import Cursor, Limit
from pms.schemas.housekeeping import TaskKind
from pms.schemas.profiles import ProfileIn
from pms.services.admin import admin_lists, policies
from pms.services.admin.admin_lists import AdminRows, ListSource, Lookup, model_has
from pms.services.admin.policy_decision import KNOWN_SCOPES
from pms.services.catalog import lov, settings
from pms.services.night_audit.reports import REPORTS

ADMIN_SCOPE = "hotel:pms:admin"
P = "/v1/properties/{property_id}"


# -- registry ---------------------------------------------------------------------------------

INPUT = ""  # a path parameter the user enters (a toolbar action's company, say)
PROPERTY = "property_id"  # the row's property, else the property picked


@dataclass(frozen=True)
class Action:
    """A page action: a domain route (METHOD, path as in the route table), optionally the
    transition it fires (its `allowed_from` states come from the machine), and where each of
    its path parameters comes from (`params`: parameter -> the row's column, or INPUT).
    `{property_id}` is the row's property or the property picked unless `params` says
    otherwise. An action with a parameter from the row is a row action; else a toolbar one."""

    name: str
    method: str
    path: str
    machine: Machine[Any] | None = None
    trigger: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    # body fields the row gives (field -> the row's column): sent, never shown in the form
    fill: dict[str, str] = field(default_factory=dict)
    # another action of the page sent after this one succeeds, with the same row: its form's
    # fields are part of this form (a check-in's key), and it is skipped when left empty
    then: str | None = None
    states: tuple[str, ...] | None = None  # the states it is allowed from, when no machine says
    answer: bool = False  # the answer is shown (a key issued, a policy decision)
    # body fields that open with the caller's own value (field -> the Ctx attribute)
    caller: dict[str, str] = field(default_factory=dict)

    def param_map(self) -> dict[str, str]:
        return {name: self.params.get(name, PROPERTY if name == "property_id" else "")
                for name in path_params(self.path)}

    @property
    def on_row(self) -> bool:
        return bool(self.fill) or any(source not in (INPUT, PROPERTY)
                                      for source in self.param_map().values())


def path_params(path: str) -> list[str]:
    return re.findall(r"\{([^}:]+)[^}]*\}", path)


@dataclass(frozen=True)
class PageDef:
    page: str
    title: str
    resource: str  # the read scope's resource segment
    source: ListSource | Callable[..., AdminRows]
    form: tuple[str, str] | None = None  # the domain route whose body is the form
    lovs: dict[str, str] = field(default_factory=dict)  # form field -> list name
    actions: tuple[Action, ...] = ()
    layout: tuple[tuple[str, ...], ...] = ()  # rows of form fields (the rest follow)
    # the scopes the domain routes that read these rows need beyond the page's own: a list
    # never shows what its domain reads would refuse (front desk rows are reservations)
    also_read: tuple[str, ...] = ()
    columns: tuple[str, ...] = ("id", "name", "path")  # a callable source's row keys
    # form field -> the values its input suggests (read when the definition is asked for)
    suggest: dict[str, Callable[[], Any]] = field(default_factory=dict)

    @property
    def list_columns(self) -> list[str]:
        source = self.source
        return ["id", *source.shown] if isinstance(source, ListSource) else list(self.columns)

    @property
    def read_scope(self) -> str:
        return f"hotel:pms:{self.resource}:read"


def _report_rows(ctx: Ctx, **_kw: Any) -> AdminRows:
    names = sorted(REPORTS)
    return AdminRows(rows=[{"id": n, "name": n, "path": f"{P}/reports/{n}"} for n in names],
                     next_cursor=None, estimated_total=len(names))


def _system_rows(ctx: Ctx, **_kw: Any) -> AdminRows:
    """The env's external systems, one row each (`id` is the system's code)."""
    systems = settings.get_external_systems(ctx).systems
    rows = [{"id": code, **{k: system.get(k) for k in SYSTEM_COLUMNS}}
            for code, system in sorted(systems.items())]
    return AdminRows(rows=rows, next_cursor=None, estimated_total=len(rows))


SYSTEM_COLUMNS = ("kind", "name", "endpoint_url", "secret_ref", "active")
SYSTEM = "/v1/settings/external-systems/{code}"


def _lov_rows(ctx: Ctx, **_kw: Any) -> AdminRows:
    """The entries of the env's own lists, one row each (the others derive from elsewhere)."""
    rows = [{"id": f"{name}/{item.code}", "list": name, "code": item.code, "name": item.name,
             "description": item.description, "active": item.active,
             "sort_order": item.sort_order} for name, item in lov.own_entries(ctx)]
    return AdminRows(rows=rows, next_cursor=None, estimated_total=len(rows))


LOV_ENTRY = "/v1/lov/{list}/{code}"


def _company() -> Any:
    return Profile.kind == "COMPANY"


def _rule_text(rule: dict[str, Any], names: dict[str, str]) -> str:
    """A rule in words: its effect, scopes and conditions (properties by name)."""
    parts = [f"{rule.get('id') or '?'}: {rule['effect']} {', '.join(rule['scopes'])}"]
    if rule.get("client_kinds"):
        parts.append("for " + ", ".join(rule["client_kinds"]))
    if rule.get("subjects"):
        parts.append("subjects " + ", ".join(rule["subjects"]))
    if rule.get("property_ids"):
        parts.append("at " + ", ".join(names.get(str(p), str(p)) for p in rule["property_ids"]))
    for key in ("subject_attributes", "property_attributes"):
        if rule.get(key):
            parts.append(key.replace("_", " ") + " "
                         + ", ".join(f"{k}={v}" for k, v in rule[key].items()))
    if rule.get("relation"):
        parts.append(f"relation {rule['relation']['relation']} of the "
                     f"{rule['relation']['object']}")
    return " · ".join(parts)


def _policy_rows(ctx: Ctx, **_kw: Any) -> AdminRows:
    """The env's policy sets, one row each, their rules in words."""
    sets, cursor = [], None
    while True:
        page = policies.list_policy_sets(ctx, limit=200, cursor=cursor)
        sets += page.items
        cursor = page.next_cursor
        if not cursor:
            break
    names = admin_lists.property_names(
        ctx, {str(p) for s in sets for r in s.rules for p in (r.property_ids or ())})
    rows = [{"id": str(s.id), "name": s.name, "enabled": s.enabled,
             "default_effect": s.default_effect, "version": s.version,
             "rules": "; ".join(_rule_text(msgspec.to_builtins(r), names) for r in s.rules)}
            for s in sets]
    return AdminRows(rows=rows, next_cursor=None, estimated_total=len(rows))


POLICY_SET = "/v1/admin/policy-sets/{id}"


def _values(kind: Any) -> tuple[str, ...]:
    """The values a filter takes, from the schemas: an enum's members, a Literal's values."""
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return tuple(str(m.value) for m in kind)
    return tuple(str(v) for v in typing.get_args(kind))


def _field_type(struct: Any, name: str) -> Any:
    return next(f.type for f in msgspec.structs.fields(struct) if f.name == name)


RES = f"{P}/reservations/{{id}}"
CPM = f"{P}/companies/{{profile_id}}/payment-methods"
EVT = f"{P}/events/{{id}}"
BLK = f"{P}/blocks/{{id}}"
RM, CPMM, EM = st.RESERVATION_MACHINE, st.COMPANY_PAYMENT_METHOD_MACHINE, st.EVENT_MACHINE
BM = st.BLOCK_MACHINE
ROW = {"id": "id"}  # the row is the path's {id}
COMPANY_ROW = {"profile_id": "company_profile_id", "id": "id"}  # a row of a company's

PAGES: dict[str, PageDef] = {p.page: p for p in (
    PageDef("reservations", "Reservations", "reservations",
            ListSource(Reservation, ("property_id", "confirmation_number", "status",
                                     "arrival_date", "departure_date", "guest_last_name",
                                     "room_type_id", "rate_plan_id"),
                       filters=("status", "arrival_date", "confirmation_number"),
                       searches={"guest": ("guest_last_name", "guest_first_name")},
                       choices={"status": _values(st.ReservationStatus)},
                       lookups=(Lookup("room_type", "room_type_id", RoomType, "name"),
                                Lookup("rate_plan", "rate_plan_id", RatePlan, "code"))),
            form=("POST", f"{P}/reservations"),
            lovs={"room_type_id": "room-types", "rate_plan_id": "rate-plans",
                  "source": "reservation-sources", "channel": "reservation-channels"},
            actions=(Action("create", "POST", f"{P}/reservations"),
                     Action("edit", "PUT", RES, RM, "edit", ROW),
                     Action("cancel", "POST", f"{RES}/cancel", RM, "cancel", ROW),
                     Action("walk_in", "POST", f"{P}/walk-in")),
            layout=(("arrival_date", "departure_date"), ("room_type_id", "rate_plan_id"))),
    PageDef("frontdesk", "Front desk", "frontdesk",
            ListSource(Reservation, ("property_id", "confirmation_number", "status",
                                     "arrival_date", "departure_date", "guest_last_name",
                                     "room_type_id", "room_id"),
                       filters=("status", "arrival_date", "departure_date"),
                       searches={"guest": ("guest_last_name", "guest_first_name")},
                       choices={"status": _values(st.ReservationStatus)},
                       lookups=(Lookup("room_type", "room_type_id", RoomType, "name"),
                                Lookup("room_number", "room_id", Room, "room_number"))),
            also_read=("reservations:read",),
            # a check-in issues the stay's key in the same form (its key type picked)
            actions=(Action("check_in", "POST", f"{RES}/check-in", RM, "check_in", ROW,
                            then="issue_key"),
                     Action("issue_key", "POST", f"{P}/digital-keys",
                            fill={"reservation_id": "id"},
                            states=(st.ReservationStatus.CHECKED_IN.value,), answer=True),
                     Action("check_out", "POST", f"{RES}/check-out", RM, "check_out", ROW),
                     Action("no_show", "POST", f"{RES}/no-show", RM, "no_show", ROW),
                     Action("assign_room", "PUT", f"{RES}/room", RM, "assign_room", ROW),
                     Action("move_room", "PUT", f"{RES}/room", RM, "move_room", ROW))),
    # a stay's bill: charges and payments are posted on the folio (named by its stay)
    PageDef("folios", "Folios", "folios",
            ListSource(Folio, ("property_id", "reservation_id", "room_number", "status",
                               "folio_type", "currency"),
                       filters=("status", "room_number"),
                       choices={"status": _values(st.FolioStatus)},
                       lookups=(Lookup("guest_last_name", "reservation_id", Reservation,
                                       "guest_last_name"),
                                Lookup("confirmation_number", "reservation_id", Reservation,
                                       "confirmation_number"),
                                Lookup("guest_profile_id", "reservation_id", Reservation,
                                       "guest_profile"))),
            lovs={"transaction_code": "transaction-codes"},
            actions=(Action("post_charge", "POST", f"{P}/folios/{{id}}/charges", params=ROW),
                     Action("post_payment", "POST", f"{P}/folios/{{id}}/payments",
                            params=ROW))),
    PageDef("housekeeping", "Housekeeping", "housekeeping",
            ListSource(HousekeepingTask, ("property_id", "room_id", "kind", "status",
                                          "assignee", "business_date"),
                       filters=("status", "kind"),
                       choices={"status": _values(st.HkTaskStatus), "kind": _values(TaskKind)},
                       lookups=(Lookup("room_number", "room_id", Room, "room_number"),)),
            form=("POST", f"{P}/housekeeping/tasks"),
            lovs={"kind": "housekeeping-task-kinds"},
            actions=(Action("create_task", "POST", f"{P}/housekeeping/tasks"),
                     Action("update_task", "PUT", f"{P}/housekeeping/tasks/{{id}}", params=ROW),
                     Action("set_room_status", "PUT", f"{P}/housekeeping/{{room_number}}",
                            params={"room_number": "room_number"}))),
    PageDef("rates", "Rate plans", "rates",
            ListSource(RatePlan, ("property_id", "code", "name", "currency", "negotiated",
                                  "active"), filters=("code", "active")),
            form=("POST", f"{P}/rate-plans"),
            actions=(Action("create", "POST", f"{P}/rate-plans"),
                     Action("edit", "PUT", f"{P}/rate-plans/{{id}}", params=ROW),
                     Action("delete", "DELETE", f"{P}/rate-plans/{{id}}", params=ROW),
                     Action("set_rates", "PUT", f"{P}/rate-plans/{{id}}/rates", params=ROW))),
    PageDef("blocks", "Room blocks", "blocks",
            ListSource(RoomBlock, ("property_id", "code", "name", "status", "arrival_date",
                                   "departure_date", "cutoff_date", "rate_plan_id",
                                   "company_profile_id"),
                       filters=("status", "code"),
                       choices={"status": _values(st.BlockStatus)}),
            form=("POST", f"{P}/blocks"),
            lovs={"rate_plan_id": "rate-plans", "room_type_id": "room-types"},
            actions=(Action("create", "POST", f"{P}/blocks"),
                     Action("edit", "PUT", BLK, BM, "edit", ROW),
                     *(Action(t, "POST", f"{BLK}/{t}", BM, t, ROW) for t in st.BLOCK_TRIGGERS),
                     Action("set_allocation", "PUT", f"{BLK}/allocation", BM, "edit", ROW),
                     Action("pick_up", "POST", f"{BLK}/reservations", BM, "pick", ROW),
                     Action("rooming_list", "POST", f"{BLK}/rooming-list", BM, "pick", ROW),
                     Action("wash", "POST", f"{BLK}/wash", BM, "edit", ROW),
                     Action("cut_off", "POST", f"{BLK}/cut-off", BM, "cut_off", ROW)),
            layout=(("code", "name"), ("arrival_date", "departure_date"))),
    PageDef("events", "Banquet events", "events",
            ListSource(BanquetEvent, ("property_id", "name", "status", "space_id",
                                      "start_at", "end_at", "attendees_forecast"),
                       filters=("status",), choices={"status": _values(st.EventStatus)}),
            form=("POST", f"{P}/events"),
            actions=(Action("create", "POST", f"{P}/events"),
                     Action("edit", "PUT", EVT, params=ROW),
                     *(Action(t, "POST", f"{EVT}/{t}", EM, t, ROW)
                       for t in ("tentative", "definite", "actual", "close", "cancel", "lose")))),
    PageDef("profiles", "Guest profiles", "profiles",
            ListSource(Profile, ("kind", "first_name", "last_name", "company_name", "email",
                                 "loyalty_number"), filters=("kind", "email_normalized"),
                       searches={"name": ("last_name", "first_name", "company_name")},
                       choices={"kind": _values(_field_type(ProfileIn, "kind"))},
                       property_field=None),
            form=("POST", f"{P}/profiles"),
            actions=(Action("create", "POST", f"{P}/profiles"),
                     Action("set_loyalty_number", "PUT", f"{P}/profiles/{{id}}/loyalty-number",
                            params=ROW))),
    PageDef("reports", "Reports", "reports", _report_rows),
    PageDef("settings", "Settings", "settings",
            ListSource(SettingsDocument, ("kind", "scope_key", "property_id", "document"),
                       filters=("kind",), property_field=None)),
    # one system at a time: adding or editing one never touches the others
    PageDef("external-systems", "External systems", "settings", _system_rows,
            form=("PUT", SYSTEM), columns=("id", *SYSTEM_COLUMNS),
            actions=(Action("add_system", "PUT", SYSTEM, params={"code": INPUT}),
                     Action("edit_system", "PUT", SYSTEM, params={"code": "id"}),
                     Action("remove_system", "DELETE", SYSTEM, params={"code": "id"}))),
    PageDef("lists-of-values", "Lists of values", "lov", _lov_rows,
            form=("PUT", LOV_ENTRY),
            columns=("id", "list", "code", "name", "description", "active", "sort_order"),
            actions=(Action("add_entry", "PUT", LOV_ENTRY, params={"list": INPUT, "code": INPUT}),
                     Action("edit_entry", "PUT", LOV_ENTRY,
                            params={"list": "list", "code": "code"}),
                     Action("remove_entry", "DELETE", LOV_ENTRY,
                            params={"list": "list", "code": "code"}))),
    PageDef("companies", "Companies", "companies",
            ListSource(Profile, ("company_name", "email", "external_ref", "preferences"),
                       searches={"name": ("company_name",)},
                       condition=_company, property_field=None),
            form=("PUT", f"{P}/companies/{{profile_id}}/receivable-account"),
            actions=(Action("provision_admin", "PUT",
                            f"{P}/companies/{{profile_id}}/admin-provisioning",
                            params={"profile_id": "id"}),
                     Action("set_receivable_account", "PUT",
                            f"{P}/companies/{{profile_id}}/receivable-account",
                            params={"profile_id": "id"}))),
    PageDef("company_users", "Company users", "company_users",
            ListSource(CompanyUser, ("company_profile_id", "traveler_profile_id", "role"),
                       filters=("company_profile_id", "role"),
                       choices={"role": tuple(sorted(policies.COMPANY_ROLES))},
                       property_field=None),
            form=("POST", f"{P}/companies/{{profile_id}}/users"),
            # a company's first user has no row to start from: the toolbar asks for the company
            actions=(Action("add_user", "POST", f"{P}/companies/{{profile_id}}/users",
                            params={"profile_id": INPUT}),
                     Action("remove_user", "DELETE",
                            f"{P}/companies/{{profile_id}}/users/{{id}}", params=COMPANY_ROW))),
    PageDef("negotiated_rates", "Negotiated rates", "negotiated_rates",
            ListSource(RatePlan, ("property_id", "code", "name", "currency", "active"),
                       condition=lambda: RatePlan.negotiated == True),  # noqa: E712
            form=("PUT", f"{P}/companies/{{profile_id}}/rate-links"),
            # the row is a rate plan: the company to link is entered
            actions=(Action("link_companies", "PUT",
                            f"{P}/companies/{{profile_id}}/rate-links",
                            params={"property_id": "property_id", "profile_id": INPUT}),)),
    PageDef("kiosk-config", "Kiosk configuration", "kiosk",
            ListSource(KioskConfig, ("property_id", "enabled_modes", "add_on_package_codes",
                                     "lockdown", "max_keys_per_stay")),
            form=("PUT", f"{P}/kiosk-config"),
            lovs={"enabled_modes": "kiosk-modes"},
            actions=(Action("configure", "PUT", f"{P}/kiosk-config"),)),
    PageDef("corporate-accounts", "Corporate accounts", "companies",
            # the companies' payment methods, the rows the approvals act on
            ListSource(CompanyPaymentMethod, ("company_profile_id", "payment_method_id",
                                              "label", "status", "reason", "brand", "last4",
                                              "exp_month", "exp_year"),
                       filters=("status", "company_profile_id"),
                       choices={"status": _values(st.CompanyPaymentMethodStatus)},
                       property_field=None),
            form=("POST", CPM),
            actions=(Action("set_receivable_account", "PUT",
                            f"{P}/companies/{{profile_id}}/receivable-account",
                            params={"profile_id": "company_profile_id"}),
                     Action("submit_payment_method", "POST", CPM,
                            params={"profile_id": INPUT}),
                     Action("approve_payment_method", "POST", f"{CPM}/{{id}}/approve", CPMM,
                            "approve_postpay", COMPANY_ROW),
                     Action("reject_payment_method", "POST", f"{CPM}/{{id}}/reject", CPMM,
                            "reject", COMPANY_ROW),
                     Action("suspend_payment_method", "POST", f"{CPM}/{{id}}/suspend", CPMM,
                            "suspend", COMPANY_ROW),
                     Action("resubmit_payment_method", "POST", f"{CPM}/{{id}}/resubmit", CPMM,
                            "resubmit", COMPANY_ROW),
                     Action("remove_payment_method", "DELETE", f"{CPM}/{{id}}",
                            params=COMPANY_ROW))),
    # the env's policies: add one, see it in words, and ask "would this be allowed?"
    PageDef("policies", "Policies", "policy", _policy_rows,
            form=("POST", "/v1/admin/policy-sets"),
            columns=("id", "name", "enabled", "default_effect", "rules", "version"),
            suggest={"scopes": lambda: KNOWN_SCOPES},
            actions=(Action("add_policy", "POST", "/v1/admin/policy-sets"),
                     Action("edit_policy", "PUT", POLICY_SET, params=ROW),
                     Action("remove_policy", "DELETE", POLICY_SET, params=ROW),
                     Action("would_this_be_allowed", "POST", "/v1/admin/policy-decisions",
                            answer=True, caller={"sub": "sub", "client_kind": "client_kind"}))),
)}


# -- derived: aliases ------------------------------------------------------------------------

def alias_path(spec: EndpointSpec, domain_path: str) -> str:
    """`/v1/admin/{the domain scope's resource}{the domain path without /v1}`."""
    if domain_path.startswith("/v1/admin/"):  # an admin route already (policy sets)
        return domain_path
    resource = spec.scope.removeprefix("hotel:pms:").rsplit(":", 1)[0]
    return "/v1/admin/" + resource + domain_path.removeprefix("/v1")


def _domain_index(routes: list[Route]) -> dict[tuple[str, str], tuple[Route, Any]]:
    index: dict[tuple[str, str], tuple[Route, Any]] = {}
    for route in routes:
        for method, fn in responders(route):
            index[(method, openapi_path(route.template))] = (route, fn)
    return index


def _alias_responder(domain_cls: type, fn: Any, spec: EndpointSpec) -> Any:
    def responder(self: Any, req: falcon.Request, resp: falcon.Response, **params: Any) -> Any:
        return fn(self.domain[domain_cls], req, resp, **params)

    alias_spec = dataclasses.replace(
        spec, guest=GUEST_DENY, kiosk=KIND_DENY, anonymous=KIND_DENY, tags=("admin",),
        summary=f"Admin alias: {spec.summary}" if spec.summary else "Admin submit alias",
        description="Form-submit alias of the domain route of the same path without "
                    "/admin/{resource}: the same body, the same service call, the same "
                    "events and audit rows. Staff only. " + spec.description)
    setattr(responder, SPEC_ATTR, alias_spec)
    return responder


def alias_table(routes: list[Route]) -> dict[tuple[str, str], tuple[str, EndpointSpec]]:
    """(METHOD, domain path) -> (alias path, domain declaration) for every page action served
    by an alias (an admin route is its own: not listed)."""
    return {key: value for key, value in action_table(routes).items() if value[0] != key[1]}


def action_table(routes: list[Route]) -> dict[tuple[str, str], tuple[str, EndpointSpec]]:
    """(METHOD, domain path) -> (the path the console sends it to, domain declaration) for
    every page action."""
    index = _domain_index(routes)
    out: dict[tuple[str, str], tuple[str, EndpointSpec]] = {}
    for page in PAGES.values():
        for action in page.actions:
            key = (action.method, action.path)
            if key not in index:
                raise LookupError(f"admin page {page.page}: no domain route {key}")
            route, fn = index[key]
            spec = spec_of(fn)
            assert spec is not None
            out[key] = (alias_path(spec, action.path), spec)
    return out


class RegistryError(LookupError):
    """A page names what does not exist: the app refuses to start."""


def _columns_of(page: PageDef) -> set[str]:
    return set(page.list_columns)


def _source_problems(page: PageDef) -> list[str]:
    source, out = page.source, []
    if not isinstance(source, ListSource):
        return out
    model = source.model
    for name in (*source.columns, *source.filters):
        if not model_has(model, name):
            out.append(f"{name} is not a field of {model.__name__}")
    out += [f"filter {name} has no query type" for name in source.filters
            if name not in FILTER_TYPES and name not in source.choices]
    out += [f"search {name} matches {column}, not a field of {model.__name__}"
            for name, columns in source.searches.items() for column in columns
            if not model_has(model, column)]
    out += [f"choices of {name}, not a filter" for name in source.choices
            if name not in source.filters]
    out += [f"lookup {lk.name} does not resolve" for lk in source.lookups
            if not model_has(model, lk.via) or not model_has(lk.model, lk.field)]
    return out


def _route_problems(page: PageDef, index: dict[tuple[str, str], Any]) -> list[str]:
    out: list[str] = []
    bodies: set[str] = set()
    for key in [*((a.method, a.path) for a in page.actions), *([page.form] if page.form else [])]:
        if key not in index:
            out.append(f"no domain route {key}")
            continue
        spec = spec_of(index[key][1])
        if spec is not None and spec.body is not None:
            bodies |= set(form_schema(spec.body, {}).get("properties", {}))
    for action in page.actions:
        if action.fill and (action.method, action.path) in index:
            spec = spec_of(index[(action.method, action.path)][1])
            fields = set(form_schema(spec.body, {}).get("properties", {})) \
                if spec is not None and spec.body is not None else set()
            out += [f"action {action.name} fills {name}, no field of its body"
                    for name in action.fill if name not in fields]
    lists = set(lov.list_names())
    for field_name, list_name in page.lovs.items():
        if list_name not in lists:
            out.append(f"no list of values {list_name}")
        if field_name not in bodies:
            out.append(f"{field_name} (list {list_name}) is no field of its forms")
    return out


def _param_problems(page: PageDef) -> list[str]:
    out: list[str] = []
    columns = _columns_of(page)
    for action in page.actions:
        stray = set(action.params) - set(path_params(action.path))
        if stray:
            out.append(f"action {action.name} maps {sorted(stray)}, not parameters of "
                       f"{action.path}")
        out += [f"action {action.name}'s {{{name}}} comes from {column}, not a column of "
                "the list" for name, column in action.param_map().items()
                if column not in (INPUT, PROPERTY, *columns)]
        out += [f"action {action.name}'s {name} comes from {column}, not a column of the list"
                for name, column in action.fill.items() if column not in columns]
        if action.then is not None and action.then not in {a.name for a in page.actions}:
            out.append(f"action {action.name} is followed by {action.then}, not an action "
                       "of the page")
    return out


def registry_problems(pages: dict[str, PageDef], routes: list[Route]) -> list[str]:
    """Everything a page names that does not resolve: its columns and filters (fields of its
    model), its lookups, its lists of values (lists GET /v1/lov serves, fields of its forms),
    its actions' domain routes and where each path parameter comes from."""
    index = _domain_index(routes)
    return [f"admin page {page.page}: {problem}" for page in pages.values()
            for problem in (*_source_problems(page), *_route_problems(page, index),
                            *_param_problems(page))]


def validate_registry(pages: dict[str, PageDef], routes: list[Route]) -> None:
    problems = registry_problems(pages, routes)
    if problems:
        raise RegistryError("the admin registry does not resolve: " + "; ".join(problems))


def admin_routes(domain_routes: list[Route]) -> list[Route]:
    """The admin routes: page definitions, one list per page, and the submit aliases. A
    registry that does not resolve refuses (the app does not start)."""
    validate_registry(PAGES, domain_routes)
    index = _domain_index(domain_routes)
    by_template: dict[str, dict[str, Any]] = {}
    classes: dict[str, set[type]] = {}
    for page in PAGES.values():
        for action in page.actions:
            route, fn = index[(action.method, action.path)]
            spec = spec_of(fn)
            assert spec is not None
            template = alias_path(spec, route.template)
            if template == route.template:
                continue  # served as it is
            methods = by_template.setdefault(template, {})
            methods[f"on_{action.method.lower()}"] = _alias_responder(route.resource, fn, spec)
            classes.setdefault(template, set()).add(route.resource)
    pages = type("AdminPageDefinitions", (PageDefinitions,),
                 {"table": action_table(domain_routes)})
    out = [Route("/v1/admin/ui", PageIndex), Route("/v1/admin/ui/{page}", pages)]
    out += [Route(f"/v1/admin/{name}", _list_resource(page)) for name, page in PAGES.items()]
    for template, methods in sorted(by_template.items()):
        domain_classes = classes[template]

        def init(self: Any, deps: Any, _classes: set[type] = domain_classes) -> None:
            self.deps = deps
            self.domain = {cls: cls(deps) for cls in _classes}

        name = "Alias" + "".join(ch for ch in template.title() if ch.isalnum())
        cls = type(name, (), {"__init__": init, **methods})
        out.append(Route(template, cls))
    return out


# -- derived: page definitions ---------------------------------------------------------------

class AdminListQuery(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What every admin list takes; each list's query adds its own filters (`list_query`),
    so a filter the list does not have is refused (422), never ignored."""

    limit: Limit = 50
    cursor: Cursor | None = None


# the type of each filter a list may declare (its column's values as a query string gives them)
FILTER_TYPES: dict[str, Any] = {
    "property_id": uuid.UUID,
    "status": Annotated[str, msgspec.Meta(max_length=32)],
    "kind": Annotated[str, msgspec.Meta(max_length=32)],
    "code": Annotated[str, msgspec.Meta(max_length=64)],
    "active": bool,
    "role": Annotated[str, msgspec.Meta(max_length=32)],
    "arrival_date": date,
    "departure_date": date,
    "guest_last_name": Annotated[str, msgspec.Meta(max_length=100)],
    "room_number": Annotated[str, msgspec.Meta(max_length=16)],
    "confirmation_number": Annotated[str, msgspec.Meta(max_length=64)],
    "email_normalized": Annotated[str, msgspec.Meta(max_length=254)],
    "company_profile_id": uuid.UUID,
}


SEARCH = Annotated[str, msgspec.Meta(max_length=100)]


def list_filters(page: PageDef) -> list[str]:
    source = page.source
    if not isinstance(source, ListSource):
        return []
    return [*(["property_id"] if source.property_field else []), *source.filters,
            *source.searches]


def filter_options(page: PageDef) -> dict[str, list[str]]:
    """The values of each filter that takes a fixed set (an enum's, a flag's): a select."""
    source = page.source
    if not isinstance(source, ListSource):
        return {}
    out = {name: list(values) for name, values in source.choices.items()}
    out.update({name: ["true", "false"] for name in source.filters
                if FILTER_TYPES.get(name) is bool})
    return out


def _filter_type(source: ListSource, name: str) -> Any:
    if name in source.searches:
        return SEARCH
    if name in source.choices:  # a value outside the enum is 422, naming the filter
        return Literal[tuple(source.choices[name])]  # type: ignore[valid-type]
    return FILTER_TYPES[name]


def list_query(page: PageDef) -> type:
    """The page's list query: limit, cursor and the page's own filters, nothing else."""
    name = "AdminListQuery" + "".join(ch for ch in page.page.title() if ch.isalnum())
    source = page.source
    return msgspec.defstruct(name, [(f, _filter_type(source, f) | None, None)
                                    for f in list_filters(page)],
                             bases=(AdminListQuery,), kw_only=True, forbid_unknown_fields=True)


class AdminPage(msgspec.Struct, kw_only=True):
    data: list[dict[str, Any]]
    next_cursor: str | None = None
    estimated_total: int = 0


class ActionOut(msgspec.Struct, kw_only=True):
    name: str
    method: str
    path: str
    domain_path: str
    scope: str
    allowed_from: list[str] | None = None
    schema: dict[str, Any] | None = None  # its body's JSON Schema (None: no body)
    # path parameter -> the row's column it takes, "property_id" (the row's property, else
    # the property picked) or "" (the user enters it); `on_row`: a row action, else toolbar
    params: dict[str, str] = {}
    on_row: bool = False
    fill: dict[str, str] = {}  # body field -> the row's column it takes (not in the form)
    then: str | None = None  # the action sent after it, with the same row (a check-in's key)
    answer: bool = False  # its answer is shown (a key, a decision)
    defaults: dict[str, Any] = {}  # body fields that open with the caller's own values


class PageOut(msgspec.Struct, kw_only=True):
    page: str
    title: str
    resource: str
    read_scope: str
    data_url: str
    schema: dict[str, Any] | None
    ui_schema: dict[str, Any]
    list_columns: list[str]
    filters: list[str]
    lovs: dict[str, str]
    actions: list[ActionOut]
    form_action: str | None = None  # the offered action whose body `schema` is
    # filter -> the values it takes (a select): an enum's from the schemas, a flag's
    filter_options: dict[str, list[str]] = {}
    # form field -> values to suggest (the API's scopes for a policy rule)
    suggestions: dict[str, list[str]] = {}


def form_schema(body: Any, lovs: dict[str, str]) -> dict[str, Any]:
    """The JSON Schema of a request body, generated by msgspec from the schema that validates
    it, with `x-lov` on the fields that take a list of values (GET /v1/lov/{list})."""
    (ref,), components = msgspec.json.schema_components([body],
                                                        ref_template="#/$defs/{name}")
    name = ref["$ref"].rsplit("/", 1)[-1]
    root = dict(components.pop(name))
    props = {k: dict(v) for k, v in root.get("properties", {}).items()}
    for field_name, list_name in lovs.items():
        if field_name in props:
            props[field_name]["x-lov"] = list_name
    root["properties"] = props
    if components:
        root["$defs"] = components
    root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return root


def _allowed_from(action: Action) -> list[str] | None:
    if action.states is not None:
        return list(action.states)
    if action.machine is None or action.trigger is None:
        return None
    return [s.value for s in action.machine.states if action.machine.can(s, action.trigger)]


def _without(schema: dict[str, Any], fields: set[str]) -> dict[str, Any]:
    """The schema without the fields the row fills (they are sent, not asked)."""
    if not fields:
        return schema
    props = {k: v for k, v in schema.get("properties", {}).items() if k not in fields}
    required = [f for f in schema.get("required", []) if f not in fields]
    return {**schema, "properties": props, "required": required}


def page_definition(page: PageDef, scopes: frozenset[str],
                    aliases: dict[tuple[str, str], tuple[str, EndpointSpec]],
                    caller: Ctx | None = None) -> PageOut:
    actions = []
    for action in page.actions:
        path, spec = aliases[(action.method, action.path)]
        if not set(spec.needed_scopes()) <= scopes:
            continue  # the API would refuse it: the page does not offer it
        actions.append(ActionOut(name=action.name, method=action.method, path=path,
                                 domain_path=action.path, scope=spec.scope,
                                 allowed_from=_allowed_from(action),
                                 params=action.param_map(), on_row=action.on_row,
                                 fill=dict(action.fill), then=action.then,
                                 answer=action.answer,
                                 defaults={f: getattr(caller, a) for f, a in action.caller.items()}
                                 if caller is not None else {},
                                 schema=(_without(form_schema(spec.body, page.lovs),
                                                  set(action.fill))
                                         if spec.body is not None else None)))
    offered = {a.name for a in actions}
    for out in actions:  # a follow-up the caller may not send is not offered
        if out.then not in offered:
            out.then = None
    schema = None
    order: list[str] = []
    if page.form is not None:
        _path, spec = aliases.get(page.form) or (None, None)
        if spec is not None and spec.body is not None:
            schema = form_schema(spec.body, page.lovs)
            order = list(schema.get("properties", {}))
    placed = [f for row in page.layout for f in row]
    rows = [list(r) for r in page.layout] + [[f] for f in order if f not in placed]
    ui_schema = {"type": "VerticalLayout", "elements": [
        {"type": "HorizontalLayout", "elements": [
            {"type": "Control", "scope": f"#/properties/{f}"} for f in row]}
        for row in rows]}
    filters = list_filters(page)
    return PageOut(page=page.page, title=page.title, resource=page.resource,
                   read_scope=page.read_scope, data_url=f"/v1/admin/{page.page}",
                   schema=schema, ui_schema=ui_schema, list_columns=page.list_columns,
                   filters=filters,
                   lovs=dict(page.lovs), actions=actions,
                   form_action=next((a.name for a in actions
                                     if page.form == (a.method, a.domain_path)), None),
                   filter_options=filter_options(page),
                   suggestions={f: sorted(values()) for f, values in page.suggest.items()})


class PageDefinitions:
    # (METHOD, domain path) -> (alias path, declaration): set by `admin_routes` on a subclass
    table: dict[tuple[str, str], tuple[str, EndpointSpec]] = {}

    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("admin", response=PageOut,
              summary="An admin page definition",
              description="Pages: " + ", ".join(PAGES) + ". Its data URL, the JSON Schema of "
              "its form (generated from the request schema; x-lov names a list of "
              "GET /v1/lov/{list}), a JSON Forms style layout, list columns and filters, and "
              "the actions the caller's scopes allow, with the states each is allowed from.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, page: str) -> None:
        definition = PAGES.get(page)
        if definition is None:
            raise NotFound(f"no admin page named {page}; pages: {', '.join(PAGES)}")
        resp.media = page_definition(definition, frozenset(req.context.ctx.scopes),
                                     self.table, req.context.ctx)


class PageSummary(msgspec.Struct, kw_only=True):
    page: str
    title: str
    url: str


class PageIndexOut(msgspec.Struct, kw_only=True):
    data: list[PageSummary]


class PageIndex:
    """The registry's pages (the admin console's page picker), those whose list the caller
    may read."""

    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("admin", response=PageIndexOut, summary="The admin pages",
              description="The pages of GET /v1/admin/ui/{page} whose list the caller's "
              "scopes may read, in the registry's order.")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        scopes = req.context.ctx.scopes
        resp.media = PageIndexOut(data=[
            PageSummary(page=p.page, title=p.title, url=f"/v1/admin/ui/{p.page}")
            for p in PAGES.values()
            if {p.read_scope, *(f"hotel:pms:{a}" for a in p.also_read)} <= scopes])


def _list_resource(page: PageDef) -> type:
    source = page.source

    query_type = list_query(page)

    @endpoint(f"{page.resource}:read", also=page.also_read, query=query_type,
              response=AdminPage, summary=f"Admin list: {page.title}",
              description="The page's rows in the caller's env, keyset paged (limit, cursor), "
                          "with estimated_total (the planner's estimate, never a full count). "
                          "Filters: see the page definition's `filters`. Policies apply row "
                          "by row: a property a rule denies is left out, and a set that "
                          "allows only some properties lists only theirs "
                          "(docs/guides/authorization.md).")
    def on_get(self: Any, req: falcon.Request, resp: falcon.Response,
               query: Any) -> None:
        ctx = req.context.ctx
        if isinstance(source, ListSource):
            filters = {k: getattr(query, k) for k in (*source.filters, *source.searches)}
            found = admin_lists.admin_rows(ctx, source,
                                           property_id=getattr(query, "property_id", None),
                                           filters=filters, limit=query.limit,
                                           cursor=query.cursor,
                                           rows=getattr(req.context, "policy_rows",
                                                        admin_lists.NO_FILTER))
        else:
            if query.cursor is not None:  # one short page: no cursor names a place in it
                decode_cursor(query.cursor)
                raise ValidationFailed("this list has one page: no cursor continues it",
                                       code="invalid_cursor",
                                       errors=[{"field": "cursor", "message": "not valid"}])
            found = source(ctx)
        resp.media = AdminPage(data=found.rows, next_cursor=found.next_cursor,
                               estimated_total=found.estimated_total)

    def init(self: Any, deps: Any) -> None:
        self.deps = deps

    name = "AdminList" + "".join(ch for ch in page.page.title() if ch.isalnum())
    # the gate hands a list across properties the policies' row filter (pms.api.gate)
    return type(name, (), {"__init__": init, "on_get": on_get, "policy_rows": True})
