"""The admin surface (issue 37): page definitions, admin lists and form-submit aliases, built
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
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Annotated, Any

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
    CompanyReceivableAccount,
    CompanyUser,
    HousekeepingTask,
    KioskConfig,
    Profile,
    RatePlan,
    Reservation,
    RoomBlock,
    SettingsDocument,
)
from pms.schemas.common import Cursor, Limit
from pms.services.admin import admin_lists
from pms.services.admin.admin_lists import AdminRows, ListSource
from pms.services.night_audit.reports import REPORTS

ADMIN_SCOPE = "hotel:pms:admin"
P = "/v1/properties/{property_id}"


# -- registry ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Action:
    """A page action: a domain route (METHOD, path as in the route table), optionally the
    transition it fires (its `allowed_from` states come from the machine)."""

    name: str
    method: str
    path: str
    machine: Machine[Any] | None = None
    trigger: str | None = None


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

    @property
    def read_scope(self) -> str:
        return f"hotel:pms:{self.resource}:read"


def _report_rows(ctx: Ctx, **_kw: Any) -> AdminRows:
    names = sorted(REPORTS)
    return AdminRows(rows=[{"id": n, "name": n, "path": f"{P}/reports/{n}"} for n in names],
                     next_cursor=None, estimated_total=len(names))


def _company() -> Any:
    return Profile.kind == "COMPANY"


RES = f"{P}/reservations/{{id}}"
CPM = f"{P}/companies/{{profile_id}}/payment-methods"
EVT = f"{P}/events/{{id}}"
BLK = f"{P}/blocks/{{id}}"
RM, CPMM, EM = st.RESERVATION_MACHINE, st.COMPANY_PAYMENT_METHOD_MACHINE, st.EVENT_MACHINE
BM = st.BLOCK_MACHINE

PAGES: dict[str, PageDef] = {p.page: p for p in (
    PageDef("reservations", "Reservations", "reservations",
            ListSource(Reservation, ("property_id", "confirmation_number", "status",
                                     "arrival_date", "departure_date", "guest_last_name",
                                     "room_type_id", "rate_plan_id"),
                       filters=("status", "arrival_date", "confirmation_number")),
            form=("POST", f"{P}/reservations"),
            lovs={"room_type_id": "room-types", "rate_plan_id": "rate-plans",
                  "source": "reservation-sources", "channel": "reservation-channels"},
            actions=(Action("create", "POST", f"{P}/reservations"),
                     Action("edit", "PUT", RES, RM, "edit"),
                     Action("cancel", "POST", f"{RES}/cancel", RM, "cancel"),
                     Action("walk_in", "POST", f"{P}/walk-in")),
            layout=(("arrival_date", "departure_date"), ("room_type_id", "rate_plan_id"))),
    PageDef("frontdesk", "Front desk", "frontdesk",
            ListSource(Reservation, ("property_id", "confirmation_number", "status",
                                     "arrival_date", "departure_date", "guest_last_name",
                                     "room_id"),
                       filters=("status", "arrival_date")),
            actions=(Action("check_in", "POST", f"{RES}/check-in", RM, "check_in"),
                     Action("check_out", "POST", f"{RES}/check-out", RM, "check_out"),
                     Action("no_show", "POST", f"{RES}/no-show", RM, "no_show"),
                     Action("assign_room", "PUT", f"{RES}/room", RM, "assign_room"))),
    PageDef("housekeeping", "Housekeeping", "housekeeping",
            ListSource(HousekeepingTask, ("property_id", "room_id", "kind", "status",
                                          "assignee", "business_date"),
                       filters=("status", "kind")),
            form=("POST", f"{P}/housekeeping/tasks"),
            lovs={"kind": "housekeeping-task-kinds"},
            actions=(Action("create_task", "POST", f"{P}/housekeeping/tasks"),
                     Action("update_task", "PUT", f"{P}/housekeeping/tasks/{{id}}"),
                     Action("set_room_status", "PUT", f"{P}/housekeeping/{{room_number}}"))),
    PageDef("rates", "Rate plans", "rates",
            ListSource(RatePlan, ("property_id", "code", "name", "currency", "negotiated",
                                  "active"), filters=("code", "active")),
            form=("POST", f"{P}/rate-plans"),
            actions=(Action("create", "POST", f"{P}/rate-plans"),
                     Action("edit", "PUT", f"{P}/rate-plans/{{id}}"),
                     Action("delete", "DELETE", f"{P}/rate-plans/{{id}}"),
                     Action("set_rates", "PUT", f"{P}/rate-plans/{{id}}/rates"))),
    PageDef("blocks", "Room blocks", "blocks",
            ListSource(RoomBlock, ("property_id", "code", "name", "status", "arrival_date",
                                   "departure_date", "cutoff_date", "rate_plan_id",
                                   "company_profile_id"),
                       filters=("status", "code")),
            form=("POST", f"{P}/blocks"),
            lovs={"rate_plan_id": "rate-plans", "room_type_id": "room-types"},
            actions=(Action("create", "POST", f"{P}/blocks"),
                     Action("edit", "PUT", BLK, BM, "edit"),
                     *(Action(t, "POST", f"{BLK}/{t}", BM, t) for t in st.BLOCK_TRIGGERS),
                     Action("set_allocation", "PUT", f"{BLK}/allocation", BM, "edit"),
                     Action("pick_up", "POST", f"{BLK}/reservations", BM, "pick"),
                     Action("rooming_list", "POST", f"{BLK}/rooming-list", BM, "pick"),
                     Action("wash", "POST", f"{BLK}/wash", BM, "edit"),
                     Action("cut_off", "POST", f"{BLK}/cut-off", BM, "cut_off")),
            layout=(("code", "name"), ("arrival_date", "departure_date"))),
    PageDef("events", "Banquet events", "events",
            ListSource(BanquetEvent, ("property_id", "name", "status", "space_id",
                                      "start_at", "end_at", "attendees_forecast"),
                       filters=("status",)),
            form=("POST", f"{P}/events"),
            actions=(Action("create", "POST", f"{P}/events"),
                     Action("edit", "PUT", EVT),
                     *(Action(t, "POST", f"{EVT}/{t}", EM, t)
                       for t in ("tentative", "definite", "actual", "close", "cancel", "lose")))),
    PageDef("profiles", "Guest profiles", "profiles",
            ListSource(Profile, ("kind", "first_name", "last_name", "company_name", "email",
                                 "loyalty_number"), filters=("kind", "email_normalized"),
                       property_field=None),
            form=("POST", f"{P}/profiles"),
            actions=(Action("create", "POST", f"{P}/profiles"),
                     Action("set_loyalty_number", "PUT", f"{P}/profiles/{{id}}/loyalty-number"))),
    PageDef("reports", "Reports", "reports", _report_rows),
    PageDef("settings", "Settings", "settings",
            ListSource(SettingsDocument, ("kind", "scope_key", "property_id", "document"),
                       filters=("kind",), property_field=None),
            form=("PUT", "/v1/settings/external-systems"),
            actions=(Action("set_external_systems", "PUT", "/v1/settings/external-systems"),)),
    PageDef("companies", "Companies", "companies",
            ListSource(Profile, ("company_name", "email", "external_ref", "preferences"),
                       condition=_company, property_field=None),
            form=("PUT", f"{P}/companies/{{profile_id}}/receivable-account"),
            actions=(Action("provision_admin", "PUT",
                            f"{P}/companies/{{profile_id}}/admin-provisioning"),
                     Action("set_receivable_account", "PUT",
                            f"{P}/companies/{{profile_id}}/receivable-account"))),
    PageDef("company_users", "Company users", "company_users",
            ListSource(CompanyUser, ("company_profile_id", "traveler_profile_id", "role"),
                       filters=("company_profile_id", "role"), property_field=None),
            form=("POST", f"{P}/companies/{{profile_id}}/users"),
            actions=(Action("add_user", "POST", f"{P}/companies/{{profile_id}}/users"),
                     Action("remove_user", "DELETE",
                            f"{P}/companies/{{profile_id}}/users/{{id}}"))),
    PageDef("negotiated_rates", "Negotiated rates", "negotiated_rates",
            ListSource(RatePlan, ("property_id", "code", "name", "currency", "active"),
                       condition=lambda: RatePlan.negotiated == True),  # noqa: E712
            form=("PUT", f"{P}/companies/{{profile_id}}/rate-links"),
            actions=(Action("link_companies", "PUT",
                            f"{P}/companies/{{profile_id}}/rate-links"),)),
    PageDef("kiosk-config", "Kiosk configuration", "kiosk",
            ListSource(KioskConfig, ("property_id", "enabled_modes", "add_on_package_codes",
                                     "lockdown", "max_keys_per_stay")),
            form=("PUT", f"{P}/kiosk-config"),
            lovs={"enabled_modes": "kiosk-modes"},
            actions=(Action("configure", "PUT", f"{P}/kiosk-config"),)),
    PageDef("corporate-accounts", "Corporate accounts", "companies",
            ListSource(CompanyReceivableAccount, ("company_profile_id", "credit_limit",
                                                  "currency"), property_field=None),
            form=("PUT", f"{P}/companies/{{profile_id}}/receivable-account"),
            actions=(Action("set_receivable_account", "PUT",
                            f"{P}/companies/{{profile_id}}/receivable-account"),
                     Action("submit_payment_method", "POST", CPM),
                     Action("approve_payment_method", "POST", f"{CPM}/{{id}}/approve", CPMM,
                            "approve_postpay"),
                     Action("reject_payment_method", "POST", f"{CPM}/{{id}}/reject", CPMM,
                            "reject"),
                     Action("suspend_payment_method", "POST", f"{CPM}/{{id}}/suspend", CPMM,
                            "suspend"),
                     Action("resubmit_payment_method", "POST", f"{CPM}/{{id}}/resubmit", CPMM,
                            "resubmit"),
                     Action("remove_payment_method", "DELETE", f"{CPM}/{{id}}"))),
)}


# -- derived: aliases ------------------------------------------------------------------------

def alias_path(spec: EndpointSpec, domain_path: str) -> str:
    """`/v1/admin/{the domain scope's resource}{the domain path without /v1}`."""
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
    """(METHOD, domain path) -> (alias path, domain declaration) for every page action."""
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


def admin_routes(domain_routes: list[Route]) -> list[Route]:
    """The admin routes: page definitions, one list per page, and the submit aliases."""
    index = _domain_index(domain_routes)
    by_template: dict[str, dict[str, Any]] = {}
    classes: dict[str, set[type]] = {}
    for page in PAGES.values():
        for action in page.actions:
            route, fn = index[(action.method, action.path)]
            spec = spec_of(fn)
            assert spec is not None
            template = alias_path(spec, route.template)
            methods = by_template.setdefault(template, {})
            methods[f"on_{action.method.lower()}"] = _alias_responder(route.resource, fn, spec)
            classes.setdefault(template, set()).add(route.resource)
    pages = type("AdminPageDefinitions", (PageDefinitions,),
                 {"table": alias_table(domain_routes)})
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

class AdminListQuery(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    limit: Limit = 50
    cursor: Cursor | None = None
    property_id: uuid.UUID | None = None
    status: Annotated[str, msgspec.Meta(max_length=32)] | None = None
    kind: Annotated[str, msgspec.Meta(max_length=32)] | None = None
    code: Annotated[str, msgspec.Meta(max_length=64)] | None = None
    active: bool | None = None
    role: Annotated[str, msgspec.Meta(max_length=32)] | None = None
    arrival_date: date | None = None
    confirmation_number: Annotated[str, msgspec.Meta(max_length=64)] | None = None
    email_normalized: Annotated[str, msgspec.Meta(max_length=254)] | None = None
    company_profile_id: uuid.UUID | None = None


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
    if action.machine is None or action.trigger is None:
        return None
    return [s.value for s in action.machine.states if action.machine.can(s, action.trigger)]


def page_definition(page: PageDef, scopes: frozenset[str],
                    aliases: dict[tuple[str, str], tuple[str, EndpointSpec]]) -> PageOut:
    actions = []
    for action in page.actions:
        path, spec = aliases[(action.method, action.path)]
        if not set(spec.needed_scopes()) <= scopes:
            continue  # the API would refuse it: the page does not offer it
        actions.append(ActionOut(name=action.name, method=action.method, path=path,
                                 domain_path=action.path, scope=spec.scope,
                                 allowed_from=_allowed_from(action),
                                 schema=(form_schema(spec.body, page.lovs)
                                         if spec.body is not None else None)))
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
    source = page.source
    columns = ["id", *source.columns] if isinstance(source, ListSource) else ["id", "name",
                                                                                "path"]
    filters = ([*(["property_id"] if source.property_field else []), *source.filters]
               if isinstance(source, ListSource) else [])
    return PageOut(page=page.page, title=page.title, resource=page.resource,
                   read_scope=page.read_scope, data_url=f"/v1/admin/{page.page}",
                   schema=schema, ui_schema=ui_schema, list_columns=columns, filters=filters,
                   lovs=dict(page.lovs), actions=actions,
                   form_action=next((a.name for a in actions
                                     if page.form == (a.method, a.domain_path)), None))


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
                                     self.table)


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
            for p in PAGES.values() if p.read_scope in scopes])


def _list_resource(page: PageDef) -> type:
    source = page.source

    @endpoint(f"{page.resource}:read", query=AdminListQuery, response=AdminPage,
              summary=f"Admin list: {page.title}",
              description="The page's rows in the caller's env, keyset paged (limit, cursor), "
                          "with estimated_total (the planner's estimate, never a full count). "
                          "Filters: see the page definition's `filters`.")
    def on_get(self: Any, req: falcon.Request, resp: falcon.Response,
               query: AdminListQuery) -> None:
        ctx = req.context.ctx
        if isinstance(source, ListSource):
            filters = {k: getattr(query, k) for k in source.filters}
            found = admin_lists.admin_rows(ctx, source, property_id=query.property_id,
                                           filters=filters, limit=query.limit,
                                           cursor=query.cursor)
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
    return type(name, (), {"__init__": init, "on_get": on_get})
