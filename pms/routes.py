"""The single route table and the start-up check that every responder declares a scope.

Each resource module exposes `ROUTES`, a list of `Route(template, resource class, suffix)`; this
module concatenates them. `add_routes` instantiates every resource with the injected `Deps` and
refuses to build the app when an `on_*` responder has no `@endpoint` declaration (CONTRACT §2).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import falcon

from pms.api.spec import EndpointSpec, spec_of

HTTP_METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Route:
    template: str
    resource: type
    suffix: str | None = None


class UngatedRoute(RuntimeError):
    """Raised at start-up when a responder declares no scope."""


def all_routes() -> list[Route]:
    from pms.api import health, openapi
    from pms.api.resources import availability as availability_routes
    from pms.api.resources import cashiering, catalog, housekeeping, profiles, properties
    from pms.api.resources import end_of_day as eod_routes
    from pms.api.resources import folios as folio_reads
    from pms.api.resources import frontdesk as frontdesk_routes
    from pms.api.resources import inventory as inventory_routes
    from pms.api.resources import jobs as job_routes
    from pms.api.resources import rates as rate_routes
    from pms.api.resources import refunds as refund_routes
    from pms.api.resources import reports as report_routes
    from pms.api.resources import reservations as reservation_routes

    return [
        *health.ROUTES,
        *openapi.ROUTES,
        *properties.ROUTES,
        *catalog.ROUTES,
        *profiles.ROUTES,
        *rate_routes.ROUTES,
        *availability_routes.ROUTES,
        *inventory_routes.ROUTES,
        *cashiering.ROUTES,
        *refund_routes.ROUTES,
        *eod_routes.ROUTES,
        *job_routes.ROUTES,
        *report_routes.ROUTES,
        *folio_reads.ROUTES,
        *reservation_routes.ROUTES,
        *frontdesk_routes.ROUTES,
        *housekeeping.ROUTES,
    ]


def responders(route: Route) -> Iterator[tuple[str, Any]]:
    """(HTTP method, responder function) pairs a route serves."""
    suffix = f"_{route.suffix}" if route.suffix else ""
    for method in HTTP_METHODS:
        fn = getattr(route.resource, f"on_{method}{suffix}", None)
        if fn is not None:
            yield method.upper(), fn


def operations(routes: list[Route]) -> Iterator[tuple[str, str, Any, EndpointSpec]]:
    """(METHOD, path template without converters, responder, spec) for every operation."""
    for route in routes:
        for method, fn in responders(route):
            spec = spec_of(fn)
            if spec is None:
                raise UngatedRoute(
                    f"{method} {route.template} ({route.resource.__name__}) declares no scope")
            yield method, openapi_path(route.template), fn, spec


def openapi_path(template: str) -> str:
    import re

    return re.sub(r"\{(\w+):[^}]+\}", r"{\1}", template)


def check_gated(routes: list[Route]) -> None:
    for route in routes:
        names = [n for n, _ in inspect.getmembers(route.resource, callable) if n.startswith("on_")]
        suffix = f"_{route.suffix}" if route.suffix else ""
        for name in names:
            base = name[3:]
            method, _, rest = base.partition("_")
            if method not in HTTP_METHODS:
                continue
            if (f"_{rest}" if rest else "") != suffix:
                continue
            if spec_of(getattr(route.resource, name)) is None:
                raise UngatedRoute(f"{name} of {route.resource.__name__} declares no scope")


def add_routes(app: falcon.App, deps: Any, routes: list[Route] | None = None) -> list[Route]:
    routes = routes if routes is not None else all_routes()
    check_gated(routes)
    instances: dict[type, Any] = {}
    for route in routes:
        resource = instances.get(route.resource)
        if resource is None:
            resource = instances[route.resource] = route.resource(deps)
        if route.suffix:
            app.add_route(route.template, resource, suffix=route.suffix)
        else:
            app.add_route(route.template, resource)
    return routes
