"""The route gate: scope, token kind and holder class, then the body, then the policy decision,
for every route before anything else works on it (docs/guides/authorization.md).

Each operation's `@endpoint` declaration (pms.api.spec) says who may reach it; this middleware
looks the declaration up by the matched route template and method and runs, in
`process_resource` (the first thing after routing):

1. `pms.api.spec.gate`: the declared scopes, the token's kind and the holder class (403);
2. only then the body: read, inspected and scanned for card numbers (`BodyMiddleware.load`,
   `pms.api.carddata.check_body`), so a caller without the scope is answered 403 whatever it
   sends (invalid JSON included), and no body of such a caller is read;
3. the env's policies, through the one decision point (`pms.services.admin.policies.PDP`),
   asked with the caller, the scopes the action needs (for a kiosk token on a kiosk action,
   the kiosk scope as well as the route's) and the target the request names: its property
   and its company, from the path (`{property_id}`, a company route's `{profile_id}`), the
   query (`property_id`, `parent`, `company_profile_id`) or the JSON body (`property_id`,
   `company_profile_id`). A request that names none on a resource that lists rows across
   properties (`policy_rows = True` on the resource class) gets the rows the rules let it
   show (`req.context.policy_rows`, a `RowFilter`) instead of a refusal.

It is placed before the Idempotency-Key middleware, so a refused request (403) never looks
up, replays or stores a key's answer. Routes added later are covered by construction: the
table is built from the same route table the app serves.
"""

from __future__ import annotations

from itertools import product
from typing import Any

import falcon

from pms.api.carddata import check_body
from pms.api.route import Route, responders
from pms.api.spec import KIND_SESSION, KIND_STAND_IN, KIOSK_WRITE_SCOPE, EndpointSpec, gate, spec_of
from pms.errors import PmsError
from pms.services.admin.policies import NO_FILTER, PDP, Target, canonical_id, register_scopes

PROPERTY_FIELDS = ("property_id",)
QUERY_PROPERTY_FIELDS = ("property_id", "parent")
COMPANY_FIELDS = ("company_profile_id",)
COMPANY_PATH = "/companies/{profile_id"


def gate_table(routes: list[Route]) -> dict[tuple[str, str], EndpointSpec]:
    """(route template, METHOD) -> the responder's declaration."""
    table: dict[tuple[str, str], EndpointSpec] = {}
    for route in routes:
        for method, fn in responders(route):
            spec = spec_of(fn)
            if spec is not None:
                table[(route.template, method)] = spec
    return table


def policy_scopes(spec: EndpointSpec, ctx: Any) -> tuple[str, ...]:
    """The scopes the action needs, as the decision point is asked about them: a kiosk token on
    a kiosk action acts on the kiosk scope that admitted it AND on the route's own."""
    scopes = spec.needed_scopes()
    if ctx.client_kind == "kiosk" and spec.kiosk in (KIND_SESSION, KIND_STAND_IN):
        scopes = (*scopes, KIOSK_WRITE_SCOPE)
    return scopes


def _add(found: list[str], value: Any) -> None:
    if isinstance(value, list):
        for item in value:
            _add(found, item)
        return
    canonical = canonical_id(value)
    if canonical is not None and canonical not in found:
        found.append(canonical)


def request_targets(req: falcon.Request, params: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The properties and companies the request names, wherever it names them."""
    properties: list[str] = []
    companies: list[str] = []
    _add(properties, params.get("property_id"))
    if COMPANY_PATH in (req.uri_template or ""):
        _add(companies, params.get("profile_id"))
    query = req.params
    for name in QUERY_PROPERTY_FIELDS:
        _add(properties, query.get(name))
    for name in COMPANY_FIELDS:
        _add(companies, query.get(name))
    doc = getattr(req.context, "json_body", None)
    if isinstance(doc, dict):
        for name in PROPERTY_FIELDS:
            _add(properties, doc.get(name))
        for name in COMPANY_FIELDS:
            _add(companies, doc.get(name))
    return properties, companies


class GateMiddleware:
    """Runs the declared gate, the body and the policy decision of the matched operation before
    the other middleware's `process_resource` (Falcon runs them in list order) and the
    responder."""

    def __init__(self, body: Any = None) -> None:
        self.table: dict[tuple[str, str], EndpointSpec] = {}
        self.policies = PDP
        self.body = body  # the BodyMiddleware whose reading waits for the scope check
        if body is not None:
            body.deferred = True

    def load(self, routes: list[Route]) -> None:
        self.table = gate_table(routes)
        register_scopes({s for spec in self.table.values() for s in spec.needed_scopes()}
                        | {KIOSK_WRITE_SCOPE})

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         params: dict[str, Any]) -> None:
        if resource is None:
            return
        spec = self.table.get((req.uri_template, req.method))
        if spec is None:  # no responder for the method: Falcon answers 405
            return
        ctx = req.context.ctx
        gate(spec, ctx)
        if self.body is not None:
            self.body.load(req)
            check_body(req)
        req.context.policy_rows = NO_FILTER
        if getattr(resource, "outside_policy", False):
            # health: its gauges matter most when the database, and so the policy read, fail
            req.context.gated = spec
            return
        scopes = policy_scopes(spec, ctx)
        properties, companies = request_targets(req, params)
        if not properties and not companies and getattr(resource, "policy_rows", False):
            req.context.policy_rows = self.policies.rows(scopes, ctx)
        else:
            for prop, company in product(properties or [None], companies or [None]):
                self.policies.check(scopes, ctx, Target(property_id=prop, company_id=company))
        req.context.gated = spec

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         req_succeeded: bool) -> None:
        """A request allowed on cached rules whose version no statement checked (it read
        nothing) checks it now: if the rules moved and refuse it, it answers their 403."""
        if getattr(req.context, "gated", None) is None:
            return
        try:
            self.policies.settle(req.context.ctx)
        except PmsError as refused:
            from pms.api import problems

            resp.complete = False
            resp.text = None
            resp.media = None
            problems.handle_pms_error(req, resp, refused, {})
