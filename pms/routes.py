"""The single route table and the start-up check that every responder declares a scope.

Each resource module exposes `ROUTES`, a list of `Route(template, resource class, suffix)`
(`pms.api.route`, the leaf the resources import, so this table is never imported back); this
module concatenates them. `add_routes` instantiates every resource with the injected `Deps` and
refuses to build the app when an `on_*` responder has no `@endpoint` declaration (CONTRACT §2).
"""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import (
    HTTP_METHODS,
    Route,
    UngatedRoute,
    check_gated,
    openapi_path,
    operations,
    responders,
)

__all__ = ["HTTP_METHODS", "Route", "UngatedRoute", "add_routes", "all_routes", "check_gated",
           "openapi_path", "operations", "responders", "route_body_limits"]


# The table is a function of the resource modules' ROUTES and the admin registry, so it is built
# and checked once per registry: create_app runs per gunicorn worker and per test, and assembling
# and validating the table costs more than the rest of the app's construction together.
_TABLE: tuple[object, list[Route]] | None = None


def all_routes() -> list[Route]:
    """Every route, the admin aliases derived from the registry, each responder gated."""
    global _TABLE
    from pms.api import admin

    if _TABLE is None or _TABLE[0] is not admin.PAGES:
        routes = _assemble()
        check_gated(routes)
        _TABLE = (admin.PAGES, routes)
    return list(_TABLE[1])


def _assemble() -> list[Route]:
    from pms.api import health, openapi
    from pms.api.resources import availability as availability_routes
    from pms.api.resources import cashiering, catalog, housekeeping, profiles, properties
    from pms.api.resources import companies as company_routes
    from pms.api.resources import end_of_day as eod_routes

    # digital keys, kiosk config, feedback and guest payment methods
    from pms.api.resources import feedback as feedback_routes
    from pms.api.resources import folios as folio_reads
    from pms.api.resources import frontdesk as frontdesk_routes
    from pms.api.resources import inventory as inventory_routes
    from pms.api.resources import jobs as job_routes
    from pms.api.resources import keys as key_routes
    from pms.api.resources import kiosk as kiosk_routes
    from pms.api.resources import rates as rate_routes
    from pms.api.resources import refunds as refund_routes
    from pms.api.resources import reports as report_routes
    from pms.api.resources import reservations as reservation_routes

    domain = [
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
        *_lov_settings_images(),
        *key_routes.ROUTES, *kiosk_routes.ROUTES, *feedback_routes.ROUTES,
        *company_routes.ROUTES,

        *_banquets(),
        *_ari(),
        *_blocks(),
        *_config_bundles(),
        *_privacy(),
        *_fiscal(),
    ]
    # the policy routes are admin routes already: pages name them, no alias serves them twice
    policy = _policies()
    return [*domain, *_admin([*domain, *policy]), *policy]


def _admin(domain: list[Route]) -> list[Route]:
    """admin page definitions, admin lists and the submit aliases, derived from the
    admin registry (pms/api/admin_pages.py) and the domain routes it names (pms/api/admin.py)."""
    from pms.api import admin

    return admin.admin_routes(domain)


def _policies() -> list[Route]:
    """policy administration (policy sets, relations, attributes)."""
    from pms.api.resources import policies

    return policies.ROUTES


def _ari() -> list[Route]:
    """the ARI digest and re-push."""
    from pms.api.resources import ari

    return ari.ROUTES


def _config_bundles() -> list[Route]:
    """a property's configuration bundle (export, dry run, apply)."""
    from pms.api.resources import config_bundles

    return config_bundles.ROUTES


def _privacy() -> list[Route]:
    """A guest's data rights (consents)."""
    from pms.api.resources import privacy

    return privacy.ROUTES


def _fiscal() -> list[Route]:
    """fiscal documents' provider state, receipts and deposit invoices."""
    from pms.api.resources import fiscal

    return fiscal.ROUTES


def _blocks() -> list[Route]:
    """room blocks."""
    from pms.api.resources import blocks

    return blocks.ROUTES


def _banquets() -> list[Route]:
    """function spaces, banquet events, their resources and posting."""
    from pms.api.resources import banquets

    return banquets.ROUTES


def _lov_settings_images() -> list[Route]:
    """lists of values, settings, property images."""
    from pms.api.resources import images, lov, settings

    return [*lov.ROUTES, *settings.ROUTES, *images.ROUTES]


def add_routes(app: falcon.App, deps: Any, routes: list[Route] | None = None) -> list[Route]:
    if routes is None:
        routes = all_routes()  # gated when assembled
    else:
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


def route_body_limits(routes: list[Route]) -> list[tuple[str, str, int]]:
    """(METHOD, path template, bytes) of the operations declaring their own body limit
    (`@endpoint(max_body=...)`); the body middleware applies them."""
    return [(method, path, spec.max_body) for method, path, _fn, spec in operations(routes)
            if spec.max_body is not None]
