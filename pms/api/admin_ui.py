"""The admin console's reads, derived from the registry (`pms.api.admin_pages`): a page's
definition (its form's JSON Schema from the domain route's request schema, the actions the
caller's scopes allow, the states each is allowed from), the page index, and one keyset-paged
list resource per page."""

from __future__ import annotations

import uuid
from datetime import date
from typing import Annotated, Any, Literal

import falcon
import msgspec

from pms.api.admin_pages import PAGES, Action, PageDef
from pms.api.spec import EndpointSpec, endpoint
from pms.context import Ctx
from pms.db.pagination import decode_cursor
from pms.errors import NotFound, ValidationFailed
from pms.schemas.common import Cursor, Limit
from pms.services.admin import admin_lists
from pms.services.admin.admin_lists import ListSource

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


def list_resource(page: PageDef) -> type:
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
