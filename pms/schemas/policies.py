"""Policy administration: policy sets and their rules, relations, attributes.

Bodies carry no tenant: a policy lives in the env of the request (the header), and `env_id`
is an unknown field like everywhere (422). No field of a rule names an env.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec

from pms.schemas.common import ListQuery, Out, Strict

ScopePattern = Annotated[str, msgspec.Meta(
    min_length=1, max_length=100, pattern=r"^(\*|[a-z][a-z_]*(:[a-z_]+)*(:\*)?)$",
    description="A scope (hotel:pms:reservations:write), a resource's scopes "
                "(hotel:pms:reservations:*) or every scope (*)")]
Label = Annotated[str, msgspec.Meta(min_length=1, max_length=64,
                                    pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")]
Value = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Ref = Annotated[str, msgspec.Meta(
    min_length=3, max_length=200, pattern=r"^(user|profile|property|company|group):[^\s]+$",
    description="kind:id, e.g. user:<token sub>, profile:<uuid>, property:<uuid>, "
                "company:<uuid>")]
ClientKind = Literal["user", "machine", "kiosk", "guest", "anonymous"]
Effect = Literal["allow", "deny"]
TargetKind = Literal["subject", "property"]
ObjectKind = Literal["property", "company"]


class RelationCondition(Strict):
    """The subject must hold `relation` to the request's target of that kind (its property or
    company, wherever the request names it: docs/guides/authorization.md)."""

    relation: Label
    object: ObjectKind


class Rule(Strict, kw_only=True):
    # the rule's name in its set (a 403 and a decision name it); the server numbers a rule
    # sent without one r1, r2, ... by its place in the set
    id: Label | None = None
    effect: Effect
    scopes: Annotated[list[ScopePattern], msgspec.Meta(min_length=1, max_length=50)]
    client_kinds: Annotated[list[ClientKind], msgspec.Meta(max_length=5)] | None = None
    subjects: Annotated[list[Value], msgspec.Meta(max_length=100)] | None = None
    property_ids: Annotated[list[uuid.UUID], msgspec.Meta(max_length=200)] | None = None
    subject_attributes: Annotated[dict[Label, Value], msgspec.Meta(max_length=20)] | None = None
    property_attributes: Annotated[dict[Label, Value], msgspec.Meta(max_length=20)] | None = None
    relation: RelationCondition | None = None


Rules = Annotated[list[Rule], msgspec.Meta(max_length=100)]


class PolicySetIn(Strict):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    description: Annotated[str, msgspec.Meta(max_length=500)] | None = None
    enabled: bool = True
    # what a request the set's rules govern gets when none of its rules holds: allow (the
    # scopes decide) or deny (the set's allow rules are the only way through)
    default_effect: Effect = "allow"
    rules: Rules = []


class PolicySetOut(Out):
    id: uuid.UUID
    name: str
    description: str | None
    enabled: bool
    default_effect: str
    rules: list[Rule]
    version: int
    created_at: datetime
    updated_at: datetime


class RelationIn(Strict):
    subject: Ref
    relation: Label
    object: Ref
    # company bindings only (object company:<id>): the property whose company routes they go
    # through (the company-user service's own argument)
    property_id: uuid.UUID | None = None


class RelationOut(Out):
    id: uuid.UUID
    subject: str
    relation: str
    object: str
    source: Literal["policy", "company_user"]
    created_at: datetime


class RelationQuery(ListQuery, forbid_unknown_fields=False):
    subject: Ref | None = None
    object: Ref | None = None
    property_id: uuid.UUID | None = None


class AttributeIn(Strict):
    target_kind: TargetKind
    target_id: Value
    name: Label
    value: Value


class AttributeValueIn(Strict):
    value: Value


class AttributeOut(Out):
    id: uuid.UUID
    target_kind: str
    target_id: str
    name: str
    value: str
    version: int
    created_at: datetime
    updated_at: datetime


class AttributeQuery(ListQuery, forbid_unknown_fields=False):
    target_kind: TargetKind | None = None
    target_id: Value | None = None


class DecisionIn(Strict, kw_only=True):
    """A question for the policy decision point: would this caller, with these scopes, be
    allowed on this target? (The token's own scopes are not checked: only the policies.)"""

    sub: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    client_kind: ClientKind = "user"
    holder_id: uuid.UUID | None = None
    scopes: Annotated[list[Annotated[str, msgspec.Meta(min_length=1, max_length=100)]],
                      msgspec.Meta(min_length=1, max_length=20)]
    property_id: uuid.UUID | None = None
    company_profile_id: uuid.UUID | None = None


class DecisionOut(Out):
    decision: Literal["allow", "deny"]
    reason: str
    policy_set_id: str | None = None
    rule_id: str | None = None
    effect: Literal["allow", "deny"] | None = None
