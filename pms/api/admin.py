"""The admin surface: page definitions, admin lists and form-submit aliases, built
from one registry (`pms.api.admin_pages`; the reads in `pms.api.admin_ui`).

`PAGES` (in `pms.api.admin_pages`) holds one `PageDef` per page: its read scope's resource, where its rows come from
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
from typing import Any

import falcon

from pms.api.admin_pages import INPUT, PAGES, PROPERTY, PageDef, path_params
from pms.api.admin_ui import FILTER_TYPES, PageDefinitions, PageIndex, form_schema, list_resource
from pms.api.route import Route, openapi_path, responders
from pms.api.spec import GUEST_DENY, KIND_DENY, SPEC_ATTR, EndpointSpec, spec_of
from pms.services.admin.admin_lists import ListSource, model_has
from pms.services.catalog import lov

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
    out += [Route(f"/v1/admin/{name}", list_resource(page)) for name, page in PAGES.items()]
    for template, methods in sorted(by_template.items()):
        domain_classes = classes[template]

        def init(self: Any, deps: Any, _classes: set[type] = domain_classes) -> None:
            self.deps = deps
            self.domain = {cls: cls(deps) for cls in _classes}

        name = "Alias" + "".join(ch for ch in template.title() if ch.isalnum())
        cls = type(name, (), {"__init__": init, **methods})
        out.append(Route(template, cls))
    return out
