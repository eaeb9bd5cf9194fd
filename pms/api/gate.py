"""The route gate (issue 28): scope, token kind and holder class, checked for every route before
anything else works on it.

Each operation's `@endpoint` declaration (pms.api.spec) says who may reach it; this middleware
looks the declaration up by the matched route template and method and runs `pms.api.spec.gate`
in `process_resource`, the first thing after routing. It is placed before the Idempotency-Key
middleware, so a refused request (403) never looks up, replays or stores a key's answer: a
token without the scope, a guest on a staff route, a kiosk or anonymous token on a route not
open to it, are answered the same with or without a key. Routes added later are covered by
construction: the table is built from the same route table the app serves.

Issue 37: after the declared gate, the env's policies (pms.services.admin.policies) may narrow
what the scopes allow; this middleware's `PolicyGate` caches them per env and reads the env's
policy version on every request.
"""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route, responders
from pms.api.spec import EndpointSpec, gate, spec_of
from pms.services.admin.policies import PolicyGate


def gate_table(routes: list[Route]) -> dict[tuple[str, str], EndpointSpec]:
    """(route template, METHOD) -> the responder's declaration."""
    table: dict[tuple[str, str], EndpointSpec] = {}
    for route in routes:
        for method, fn in responders(route):
            spec = spec_of(fn)
            if spec is not None:
                table[(route.template, method)] = spec
    return table


class GateMiddleware:
    """Runs the declared gate of the matched operation before the other middleware's
    `process_resource` (Falcon runs them in list order) and the responder."""

    def __init__(self) -> None:
        self.table: dict[tuple[str, str], EndpointSpec] = {}
        self.policies = PolicyGate()

    def load(self, routes: list[Route]) -> None:
        self.table = gate_table(routes)

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         params: dict[str, Any]) -> None:
        if resource is None:
            return
        spec = self.table.get((req.uri_template, req.method))
        if spec is None:  # no responder for the method: Falcon answers 405
            return
        ctx = req.context.ctx
        gate(spec, ctx)
        self.policies.check(spec.needed_scopes(), ctx, params)
        req.context.gated = spec
