"""What a route is, and the operations it serves: the leaf the resources and OpenAPI import.

`Route(template, resource class, suffix)` is what every resource module lists in `ROUTES`;
`operations` walks routes into (method, path, responder, spec) rows and refuses a responder
without an `@endpoint` declaration (CONTRACT §2). This module imports nothing of the API but
the spec, so the route table (`pms.routes`, which imports every resource) never comes back to
itself through a resource (no import cycles).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pms.api.spec import EndpointSpec, spec_of

HTTP_METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Route:
    template: str
    resource: type
    suffix: str | None = None


class UngatedRoute(RuntimeError):
    """Raised at start-up when a responder declares no scope."""


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
    return re.sub(r"\{(\w+):[^}]+\}", r"{\1}", template)


def check_gated(routes: list[Route]) -> None:
    """Every `on_*` responder a route serves carries an `@endpoint` declaration."""
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
