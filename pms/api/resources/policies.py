"""Policy administration: `/v1/admin/policy-sets`, `/v1/admin/relations`,
`/v1/admin/attributes` (pms.services.admin.policies). Every route needs `hotel:pms:admin` and
`hotel:pms:policy:read` or `:write` (CONTRACT §2); staff only (holder, kiosk and anonymous
tokens are refused by the gate's defaults)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import falcon
import msgspec

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.common import ListQuery, Page
from pms.schemas.policies import (
    AttributeIn,
    AttributeOut,
    AttributeQuery,
    AttributeValueIn,
    DecisionIn,
    DecisionOut,
    PolicySetIn,
    PolicySetOut,
    RelationIn,
    RelationOut,
    RelationQuery,
)
from pms.services.admin import policies

ADMIN = ("admin",)
IF_MATCH = (("If-Match", True, "The ETag of the policy set read (its version); 428 without "
                               "it, 412 when the set changed since"),)
BASE = "/v1/admin"


class RelationDeleteQuery(msgspec.Struct, kw_only=True):
    property_id: Annotated[uuid.UUID, msgspec.Meta(
        description="For a company role: the property whose company routes it goes through")
    ] | None = None


def _created(resp: falcon.Response, out: Any, path: str) -> None:
    resp.media = out
    resp.status = 201
    resp.location = f"{BASE}/{path}/{out.id}"


class PolicySets:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("policy:read", also=ADMIN, query=ListQuery, response=Page[PolicySetOut],
              summary="The env's policy sets",
              description="Rules that narrow what a scope allows in this env "
                          "(docs/guides/authorization.md).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, query: ListQuery) -> None:
        page = policies.list_policy_sets(req.context.ctx, limit=query.limit, cursor=query.cursor)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("policy:write", also=ADMIN, body=PolicySetIn, response=PolicySetOut, status=201,
              errors=(409,), summary="Create a policy set",
              description="Each rule: effect allow or deny, the scopes it governs, and "
                          "conditions that must all hold. Deny overrides allow; allow rules "
                          "narrow their scopes; no rule widens the token's scopes. Holds on "
                          "every instance from the next request.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, body: PolicySetIn) -> None:
        _created(resp, policies.create_policy_set(req.context.ctx, body), "policy-sets")

    @endpoint("policy:read", also=ADMIN, response=PolicySetOut, summary="A policy set",
              description="ETag: the set's version, for If-Match on PUT.")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, id: Any) -> None:  # noqa: A002
        out = policies.get_policy_set(req.context.ctx, id)
        resp.set_header("ETag", f'"{out.version}"')
        resp.media = out

    @endpoint("policy:write", also=ADMIN, body=PolicySetIn, response=PolicySetOut,
              errors=(409, 412, 422, 428), headers=IF_MATCH, summary="Replace a policy set",
              description="Only with the version read: If-Match \"<version>\" (428 without "
                          "it, 412 when the set changed since). Rules that could never match "
                          "are refused (422 policy_never_matches, naming the field).")
    def on_put_item(self, req: falcon.Request, resp: falcon.Response, id: Any,  # noqa: A002
                    body: PolicySetIn) -> None:
        out = policies.replace_policy_set(req.context.ctx, id, body,
                                          if_match=req.get_header("If-Match"))
        resp.set_header("ETag", f'"{out.version}"')
        resp.media = out

    @endpoint("policy:write", also=ADMIN, status=204, summary="Delete a policy set")
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, id: Any) -> None:  # noqa: A002
        policies.delete_policy_set(req.context.ctx, id)
        resp.status = 204


class PolicyDecisions:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("policy:read", also=ADMIN, body=DecisionIn, response=DecisionOut, mutates=False,
              errors=(422,), summary="Would this be allowed? (a policy decision)",
              description="The decision point's answer for a caller (sub, client_kind, "
                          "holder_id), the scopes an action needs and its target "
                          "(property_id, company_profile_id), with the rule that decided "
                          "(policy_set_id, rule_id). Only policies are asked, not tokens.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, body: DecisionIn) -> None:
        resp.media = policies.explain(req.context.ctx, body)


class Relations:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("policy:read", also=ADMIN, query=RelationQuery, response=Page[RelationOut],
              summary="Subject-relation-object tuples",
              description="The env's relations; company-user bindings are listed as "
                          "profile:<traveler> <role> company:<company> (source company_user).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, query: RelationQuery) -> None:
        page = policies.list_relations(req.context.ctx, subject=query.subject,
                                       object_=query.object, limit=query.limit,
                                       cursor=query.cursor)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("policy:write", also=ADMIN, body=RelationIn, response=RelationOut, status=201,
              errors=(409,), summary="Add a relation",
              description="A company role (ADMIN, BOOKER, TRAVELER, VIEWER of company:<id>) "
                          "is a company-user binding, made by the company-user service "
                          "(property_id required).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, body: RelationIn) -> None:
        _created(resp, policies.create_relation(req.context.ctx, body), "relations")

    @endpoint("policy:read", also=ADMIN, response=RelationOut, summary="A relation")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, id: Any) -> None:  # noqa: A002
        resp.media = policies.get_relation(req.context.ctx, id)

    @endpoint("policy:write", also=ADMIN, query=RelationDeleteQuery, status=204, errors=(409,),
              summary="Remove a relation",
              description="A company-user binding is removed by the company-user service (its "
                          "rules hold: 409 last_company_admin); it needs property_id.")
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, id: Any,  # noqa: A002
                       query: RelationDeleteQuery) -> None:
        policies.delete_relation(req.context.ctx, id, query.property_id)
        resp.status = 204


class Attributes:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("policy:read", also=ADMIN, query=AttributeQuery, response=Page[AttributeOut],
              summary="Attributes of subjects and properties that policies read")
    def on_get(self, req: falcon.Request, resp: falcon.Response, query: AttributeQuery) -> None:
        page = policies.list_attributes(req.context.ctx, target_kind=query.target_kind,
                                        target_id=query.target_id, limit=query.limit,
                                        cursor=query.cursor)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("policy:write", also=ADMIN, body=AttributeIn, response=AttributeOut, status=201,
              errors=(409,), summary="Set a new attribute",
              description="target_kind subject (target_id user:<sub> or profile:<id>) or "
                          "property (target_id the property id). One value per name.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, body: AttributeIn) -> None:
        _created(resp, policies.create_attribute(req.context.ctx, body), "attributes")

    @endpoint("policy:read", also=ADMIN, response=AttributeOut, summary="An attribute")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, id: Any) -> None:  # noqa: A002
        resp.media = policies.get_attribute(req.context.ctx, id)

    @endpoint("policy:write", also=ADMIN, body=AttributeValueIn, response=AttributeOut,
              summary="Change an attribute's value")
    def on_put_item(self, req: falcon.Request, resp: falcon.Response, id: Any,  # noqa: A002
                    body: AttributeValueIn) -> None:
        resp.media = policies.set_attribute(req.context.ctx, id, body)

    @endpoint("policy:write", also=ADMIN, status=204, summary="Delete an attribute")
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, id: Any) -> None:  # noqa: A002
        policies.delete_attribute(req.context.ctx, id)
        resp.status = 204


ROUTES = [
    Route(f"{BASE}/policy-sets", PolicySets),
    Route(f"{BASE}/policy-sets/{{id:uuid}}", PolicySets, "item"),
    Route(f"{BASE}/policy-decisions", PolicyDecisions),
    Route(f"{BASE}/relations", Relations),
    Route(f"{BASE}/relations/{{id:uuid}}", Relations, "item"),
    Route(f"{BASE}/attributes", Attributes),
    Route(f"{BASE}/attributes/{{id:uuid}}", Attributes, "item"),
]
