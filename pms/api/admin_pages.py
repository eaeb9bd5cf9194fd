"""The admin registry: one `PageDef` per page of the back-office console.

Each page names its read scope's resource, where its rows come from
(`pms.services.admin.admin_lists.ListSource`), its columns and filters, the domain route whose
request schema is its form, the lists of values its fields take, and its actions, each naming
a DOMAIN route (method and path as the route table spells them). Adding a page, or an action
to a page, is one entry here; `pms.api.admin` derives the routes from it and refuses to start
on an entry that does not resolve.
"""

from __future__ import annotations

import enum
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pms.context import Ctx
from pms.domain import states as st
from pms.domain.machine import Machine
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
from pms.schemas.housekeeping import TaskKind
from pms.schemas.profiles import ProfileIn
from pms.services.admin import admin_lists, policies
from pms.services.admin.admin_lists import AdminRows, ListSource, Lookup
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
