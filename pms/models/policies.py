"""Policy administration: policy sets, relations, attributes and the env's policy
version (pms.services.admin.policies; docs/guides/authorization.md).

A policy set holds rules (JSON: effect, scope patterns, conditions) that narrow what a token's
scopes allow in its env. Relations are subject-relation-object tuples that rules may name; a
traveler's binding to a company lives in `company_user` and is shown as a relation, never
stored here. Attributes are name/value pairs on a subject or a property that rules compare.
`PolicyVersion` is one row per env (its id is the env id), bumped in the same transaction as
every policy write: each request reads it (one primary-key lookup) to know whether its cached
policies are current.
"""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, TenantModel
from pms.db.fields import JsonField


class PolicySet(AggregateModel):
    name = peewee.CharField(max_length=100)
    description = peewee.CharField(max_length=500, null=True)
    enabled = peewee.BooleanField(default=True)
    rules = JsonField(default=list)
    # what a request the set's rules govern gets when none of them matches (migration 048)
    default_effect = peewee.CharField(max_length=8, default="allow")

    class Meta:
        table_name = "policy_set"
        indexes = ((("env_id", "name"), True),)


class PolicyRelation(AggregateModel):
    subject = peewee.CharField(max_length=200)
    relation = peewee.CharField(max_length=64)
    object = peewee.CharField(max_length=200)

    class Meta:
        table_name = "policy_relation"
        indexes = ((("env_id", "subject", "relation", "object"), True),)


class PolicyAttribute(AggregateModel):
    target_kind = peewee.CharField(max_length=16)  # subject | property
    target_id = peewee.CharField(max_length=200)
    name = peewee.CharField(max_length=64)
    value = peewee.CharField(max_length=200)

    class Meta:
        table_name = "policy_attribute"
        indexes = ((("env_id", "target_kind", "target_id", "name"), True),)


class PolicyVersion(TenantModel):
    """One row per env, `id` = the env id; `version` goes up with every policy write."""

    version = peewee.IntegerField(default=0)

    class Meta:
        table_name = "policy_version"
