"""Policy administration and evaluation (issue 37; README "How policies are evaluated").

Three kinds of rows, each env's own (the ORM filter and row-level security):
- policy sets (`PolicySet`): named lists of rules. A rule has an effect (allow or deny), the
  scopes it governs (`hotel:pms:reservations:write`, `hotel:pms:reservations:*`, `*`) and
  conditions (client kinds, subjects, properties, subject and property attributes, a
  relation), all of which must hold for the rule to match a request;
- relations: subject-relation-object tuples (`user:<sub>`, `profile:<id>` ADMIN
  `company:<id>`). A traveler's role in a company IS its company-user binding: listed here
  from `company_user` (source `company_user`), written and removed through the company-user
  service functions, never stored twice;
- attributes: name/value pairs on a subject (`user:<sub>`) or a property (its id).

Evaluation (`PolicyGate.check`, from the route gate after the scope check): the rules of the
env's enabled sets that govern one of the operation's scopes apply; a matching deny refuses
(403 `policy_denied`); otherwise, when allow rules apply and none matches, the request is
refused too (allow rules narrow a scope to what they name). No rule applies: the scopes
decide alone. A policy never widens: it runs only after the token's scopes were found
sufficient, and it reads only the request's own env (no rule names an env), so tenant
isolation stays what the ORM and row-level security make it. The policy-administration
routes themselves are not subject to policies (no policy can lock the administrators out).

Caching: each process (each `PolicyGate`) keeps the env's rules and attributes with the
version they were read at. Every request reads the env's `policy_version` row (one
primary-key lookup); every policy write bumps it in its own transaction. So a new deny holds
on every host from the next request, whatever the outbox relay is doing. Relation conditions
read their tuple at evaluation time (an indexed lookup, only for a rule that names one).
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec

from pms.context import Ctx
from pms.db.fields import utcnow
from pms.db.pagination import Page, encode_cursor, paginate
from pms.db.statements import Statement, param
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.errors import AlreadyExists, Forbidden, NotFound, ValidationFailed
from pms.models import CompanyUser, PolicyAttribute, PolicyRelation, PolicySet, PolicyVersion
from pms.schemas.common import to_data
from pms.schemas.companies import CompanyUserIn
from pms.schemas.policies import (
    AttributeIn,
    AttributeOut,
    AttributeValueIn,
    PolicySetIn,
    PolicySetOut,
    RelationIn,
    RelationOut,
    Rule,
)
from pms.services.corporate import companies

POLICY_SCOPE_PREFIX = "hotel:pms:policy:"
COMPANY_ROLES = frozenset({"ADMIN", "BOOKER", "TRAVELER", "VIEWER"})
# which path parameter names the object of a relation condition
OBJECT_PARAMS = {"property": "property_id", "company": "profile_id"}


# -- the version ------------------------------------------------------------------------------

def bump_version(uow: UnitOfWork) -> None:
    """Move the env's policy version up by one, in the unit of work's transaction (the row is
    made at the env's first policy write; its id is the env id)."""
    env = uow.ctx.env_id
    now = utcnow()
    (PolicyVersion.insert(id=env, env_id=env, version=1, created_at=now, updated_at=now)
     .on_conflict(conflict_target=PolicyVersion.key_target(),
                  update={PolicyVersion.version: PolicyVersion.version + 1,
                          PolicyVersion.updated_at: now})
     .execute())


# PERF: compiled once per process (pms.db.statements): the read every request makes
_VERSION = Statement.build("policies.version", lambda: (
    PolicyVersion.select(PolicyVersion.version)
    .where((PolicyVersion.env_id == param.env) & (PolicyVersion.id == param.env))))


def current_version(ctx: Ctx) -> int:
    """The env's policy version (0 before its first policy write): one primary-key read."""
    with read_scope(ctx):
        row = _VERSION.one()
    return row[0] if row else 0


# -- policy sets ------------------------------------------------------------------------------

def _rules(row: PolicySet) -> list[Rule]:
    return msgspec.convert(row.rules or [], list[Rule])


def policy_set_out(row: PolicySet) -> PolicySetOut:
    return PolicySetOut(id=row.id, name=row.name, description=row.description,
                        enabled=row.enabled, rules=_rules(row), version=row.version,
                        created_at=row.created_at, updated_at=row.updated_at)


def _load(model: Any, id_: uuid.UUID, what: str) -> Any:
    row = model.get_or_none(model.id == id_)
    if row is None:
        raise NotFound(f"no such {what}")
    return row


def list_policy_sets(ctx: Ctx, *, limit: int, cursor: str | None) -> Page[PolicySetOut]:
    with read_scope(ctx):
        page = paginate(PolicySet.select(), PolicySet, limit=limit, cursor=cursor)
    return Page(items=[policy_set_out(r) for r in page.items], next_cursor=page.next_cursor)


def get_policy_set(ctx: Ctx, set_id: uuid.UUID) -> PolicySetOut:
    with read_scope(ctx):
        return policy_set_out(_load(PolicySet, set_id, "policy set"))


def _unique_name(name: str, but: uuid.UUID | None = None) -> None:
    query = PolicySet.select(PolicySet.id).where(PolicySet.name == name)
    if but is not None:
        query = query.where(PolicySet.id != but)
    if query.exists():
        raise AlreadyExists(f"a policy set named {name!r} exists")


def create_policy_set(ctx: Ctx, body: PolicySetIn) -> PolicySetOut:
    with unit_of_work(ctx) as uow:
        _unique_name(body.name)
        row = PolicySet.build(name=body.name, description=body.description,
                              enabled=body.enabled, rules=to_data(body.rules), version=1)
        row.save(force_insert=True)
        out = _changed(uow, "policy_set", "created", row, policy_set_out)
    return out


def replace_policy_set(ctx: Ctx, set_id: uuid.UUID, body: PolicySetIn) -> PolicySetOut:
    with unit_of_work(ctx) as uow:
        row = _load(PolicySet, set_id, "policy set")
        before = to_data(policy_set_out(row))
        _unique_name(body.name, but=row.id)
        row.name, row.description, row.enabled = body.name, body.description, body.enabled
        row.rules = to_data(body.rules)
        row.save()
        out = _changed(uow, "policy_set", "updated", row, policy_set_out, before=before)
    return out


def delete_policy_set(ctx: Ctx, set_id: uuid.UUID) -> None:
    _delete(ctx, PolicySet, set_id, "policy set", "policy_set", policy_set_out)


def _changed(uow: UnitOfWork, aggregate: str, action: str, row: Any, out_of: Any, *,
             before: dict[str, Any] | None = None) -> Any:
    """The policy write's outbox event and audit row, and the env's version bump, in its
    transaction. Returns the row's output (after the event's version)."""
    bump_version(uow)
    data = to_data(out_of(row))
    uow.record(aggregate, action, row, data, before=before)
    return out_of(row)


def _delete(ctx: Ctx, model: Any, id_: uuid.UUID, what: str, aggregate: str,
            out_of: Any) -> None:
    with unit_of_work(ctx) as uow:
        row = _load(model, id_, what)
        data = to_data(out_of(row))
        bump_version(uow)
        uow.record(aggregate, "deleted", row, data, before=data)
        model.delete().where(model.id == row.id).execute()


# -- relations --------------------------------------------------------------------------------

def relation_out(row: PolicyRelation) -> RelationOut:
    return RelationOut(id=row.id, subject=row.subject, relation=row.relation,
                       object=row.object, source="policy", created_at=row.created_at)


def binding_relation(row: CompanyUser) -> RelationOut:
    """A company-user binding, as the relation it is."""
    return RelationOut(id=row.id, subject=f"profile:{row.traveler_profile_id}",
                       relation=row.role, object=f"company:{row.company_profile_id}",
                       source="company_user", created_at=row.created_at)


def _ref_id(ref: str | None, kind: str) -> uuid.UUID | None | bool:
    """The uuid of a `kind:<uuid>` reference; None when no reference is given; False when
    the reference is of another kind or not a uuid (it names no company-user row)."""
    if ref is None:
        return None
    prefix, _, rest = ref.partition(":")
    if prefix != kind:
        return False
    try:
        return uuid.UUID(rest)
    except ValueError:
        return False


def list_relations(ctx: Ctx, *, subject: str | None, object_: str | None, limit: int,
                   cursor: str | None) -> Page[RelationOut]:
    """The env's relations, the company-user bindings among them, one keyset page over both
    (created_at, id)."""
    with read_scope(ctx):
        own = PolicyRelation.select()
        if subject is not None:
            own = own.where(PolicyRelation.subject == subject)
        if object_ is not None:
            own = own.where(PolicyRelation.object == object_)
        pages = [(paginate(own, PolicyRelation, limit=limit, cursor=cursor), relation_out)]
        traveler, company = _ref_id(subject, "profile"), _ref_id(object_, "company")
        if traveler is not False and company is not False:
            bound = CompanyUser.select()
            if traveler is not None:
                bound = bound.where(CompanyUser.traveler_profile_id == traveler)
            if company is not None:
                bound = bound.where(CompanyUser.company_profile_id == company)
            pages.append((paginate(bound, CompanyUser, limit=limit, cursor=cursor),
                          binding_relation))
    rows = sorted((out(r) for page, out in pages for r in page.items),
                  key=lambda r: (r.created_at, str(r.id)))
    more = len(rows) > limit or any(page.next_cursor for page, _ in pages)
    rows = rows[:limit]
    next_cursor = encode_cursor([rows[-1].created_at, rows[-1].id]) if more and rows else None
    return Page(items=rows, next_cursor=next_cursor)


def get_relation(ctx: Ctx, relation_id: uuid.UUID) -> RelationOut:
    with read_scope(ctx):
        row = PolicyRelation.get_or_none(PolicyRelation.id == relation_id)
        if row is not None:
            return relation_out(row)
        binding = CompanyUser.get_or_none(CompanyUser.id == relation_id)
    if binding is None:
        raise NotFound("no such relation")
    return binding_relation(binding)


def _is_binding(body: RelationIn) -> bool:
    return body.object.startswith("company:") and body.relation in COMPANY_ROLES


def create_relation(ctx: Ctx, body: RelationIn) -> RelationOut:
    """A new tuple; a company role (ADMIN, BOOKER, TRAVELER, VIEWER of `company:<id>`) is a
    company-user binding, made by the company-user service (its own event and audit row)."""
    if _is_binding(body):
        traveler, company = _ref_id(body.subject, "profile"), _ref_id(body.object, "company")
        if not isinstance(traveler, uuid.UUID) or not isinstance(company, uuid.UUID) \
                or body.property_id is None:
            raise ValidationFailed(
                "a company role relates profile:<uuid> to company:<uuid> and needs property_id",
                errors=[{"field": "subject", "message": "profile:<uuid> with company:<uuid>"},
                        {"field": "property_id", "message": "required for a company role"}])
        added = companies.add_user(ctx, body.property_id, company,
                                   CompanyUserIn(traveler_profile_id=traveler,
                                                 role=body.relation))  # type: ignore[arg-type]
        return get_relation(ctx, added.id)
    if body.property_id is not None:
        raise ValidationFailed("property_id is for company roles only",
                               errors=[{"field": "property_id", "message": "not expected"}])
    with unit_of_work(ctx) as uow:
        if PolicyRelation.select(PolicyRelation.id).where(
                PolicyRelation.subject == body.subject, PolicyRelation.relation == body.relation,
                PolicyRelation.object == body.object).exists():
            raise AlreadyExists("this relation exists")
        row = PolicyRelation.build(subject=body.subject, relation=body.relation,
                                   object=body.object, version=1)
        row.save(force_insert=True)
        out = _changed(uow, "policy_relation", "created", row, relation_out)
    return out


def delete_relation(ctx: Ctx, relation_id: uuid.UUID, property_id: uuid.UUID | None) -> None:
    """Remove a tuple; a company-user binding is removed by the company-user service (its rules:
    the last ADMIN stays), which needs the property its company routes go through."""
    with read_scope(ctx):
        binding = CompanyUser.get_or_none(CompanyUser.id == relation_id)
    if binding is None:
        _delete(ctx, PolicyRelation, relation_id, "relation", "policy_relation", relation_out)
        return
    if property_id is None:
        raise ValidationFailed("removing a company role needs property_id",
                               errors=[{"field": "property_id", "message": "required"}])
    companies.remove_user(ctx, property_id, binding.company_profile_id, binding.id)


# -- attributes -------------------------------------------------------------------------------

def attribute_out(row: PolicyAttribute) -> AttributeOut:
    return AttributeOut(id=row.id, target_kind=row.target_kind, target_id=row.target_id,
                        name=row.name, value=row.value, version=row.version,
                        created_at=row.created_at, updated_at=row.updated_at)


def list_attributes(ctx: Ctx, *, target_kind: str | None, target_id: str | None, limit: int,
                    cursor: str | None) -> Page[AttributeOut]:
    with read_scope(ctx):
        query = PolicyAttribute.select()
        if target_kind is not None:
            query = query.where(PolicyAttribute.target_kind == target_kind)
        if target_id is not None:
            query = query.where(PolicyAttribute.target_id == target_id)
        page = paginate(query, PolicyAttribute, limit=limit, cursor=cursor)
    return Page(items=[attribute_out(r) for r in page.items], next_cursor=page.next_cursor)


def get_attribute(ctx: Ctx, attribute_id: uuid.UUID) -> AttributeOut:
    with read_scope(ctx):
        return attribute_out(_load(PolicyAttribute, attribute_id, "attribute"))


def create_attribute(ctx: Ctx, body: AttributeIn) -> AttributeOut:
    with unit_of_work(ctx) as uow:
        if PolicyAttribute.select(PolicyAttribute.id).where(
                PolicyAttribute.target_kind == body.target_kind,
                PolicyAttribute.target_id == body.target_id,
                PolicyAttribute.name == body.name).exists():
            raise AlreadyExists(f"{body.target_kind} {body.target_id} has {body.name} already")
        row = PolicyAttribute.build(target_kind=body.target_kind, target_id=body.target_id,
                                    name=body.name, value=body.value, version=1)
        row.save(force_insert=True)
        out = _changed(uow, "policy_attribute", "created", row, attribute_out)
    return out


def set_attribute(ctx: Ctx, attribute_id: uuid.UUID, body: AttributeValueIn) -> AttributeOut:
    with unit_of_work(ctx) as uow:
        row = _load(PolicyAttribute, attribute_id, "attribute")
        before = to_data(attribute_out(row))
        row.value = body.value
        row.save()
        out = _changed(uow, "policy_attribute", "updated", row, attribute_out, before=before)
    return out


def delete_attribute(ctx: Ctx, attribute_id: uuid.UUID) -> None:
    _delete(ctx, PolicyAttribute, attribute_id, "attribute", "policy_attribute", attribute_out)


# -- evaluation -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    """An env's enabled rules and its attributes, as of `version`."""

    version: int
    rules: tuple[Rule, ...]
    attributes: dict[tuple[str, str], dict[str, str]]


def load_snapshot(ctx: Ctx, version: int) -> Snapshot:
    with read_scope(ctx):
        sets = list(PolicySet.select().where(PolicySet.enabled == True)  # noqa: E712
                    .order_by(PolicySet.created_at, PolicySet.id))
        attributes: dict[tuple[str, str], dict[str, str]] = {}
        for row in PolicyAttribute.select().order_by(PolicyAttribute.id):
            attributes.setdefault((row.target_kind, row.target_id), {})[row.name] = row.value
    rules = tuple(rule for row in sets for rule in _rules(row))
    return Snapshot(version=version, rules=rules, attributes=attributes)


def governs(rule: Rule, scopes: tuple[str, ...]) -> bool:
    for pattern in rule.scopes:
        if pattern == "*":
            return True
        if pattern.endswith(":*"):
            if any(s.startswith(pattern[:-1]) for s in scopes):
                return True
        elif pattern in scopes:
            return True
    return False


def _subjects(ctx: Ctx) -> list[str]:
    refs = [f"user:{ctx.sub}"]
    if ctx.holder_id is not None:
        refs.append(f"profile:{ctx.holder_id}")
    return refs


def _has_relation(ctx: Ctx, relation: str, kind: str, object_id: str) -> bool:
    subjects = _subjects(ctx)
    with read_scope(ctx):
        if PolicyRelation.select(PolicyRelation.id).where(
                PolicyRelation.subject.in_(subjects), PolicyRelation.relation == relation,
                PolicyRelation.object == f"{kind}:{object_id}").exists():
            return True
        if kind != "company" or ctx.holder_id is None or relation not in COMPANY_ROLES:
            return False
        try:
            company = uuid.UUID(object_id)
        except ValueError:
            return False
        return CompanyUser.select(CompanyUser.id).where(
            CompanyUser.company_profile_id == company,
            CompanyUser.traveler_profile_id == ctx.holder_id,
            CompanyUser.role == relation).exists()


def _attrs_hold(wanted: dict[str, str] | None, have: dict[str, str] | None) -> bool:
    if not wanted:
        return True
    have = have or {}
    return all(have.get(name) == value for name, value in wanted.items())


def matches(rule: Rule, snap: Snapshot, ctx: Ctx, params: dict[str, Any]) -> bool:
    """Every condition of the rule holds for this request (cheap ones first)."""
    if rule.client_kinds is not None and ctx.client_kind not in rule.client_kinds:
        return False
    if rule.subjects is not None and not set(_subjects(ctx)) & set(rule.subjects):
        return False
    property_id = params.get("property_id")
    if rule.property_ids is not None and property_id not in rule.property_ids:
        return False
    if rule.property_attributes and (property_id is None or not _attrs_hold(
            rule.property_attributes, snap.attributes.get(("property", str(property_id))))):
        return False
    if rule.subject_attributes and not any(
            _attrs_hold(rule.subject_attributes, snap.attributes.get(("subject", s)))
            for s in _subjects(ctx)):
        return False
    if rule.relation is not None:
        object_id = params.get(OBJECT_PARAMS[rule.relation.object])
        if object_id is None or not _has_relation(ctx, rule.relation.relation,
                                                  rule.relation.object, str(object_id)):
            return False
    return True


def decide(snap: Snapshot, scopes: tuple[str, ...], ctx: Ctx, params: dict[str, Any]) -> None:
    """Deny overrides allow; allow rules narrow their scopes to what they match."""
    applying = [r for r in snap.rules if governs(r, scopes)]
    if not applying:
        return
    if any(matches(r, snap, ctx, params) for r in applying if r.effect == "deny"):
        raise Forbidden("a policy of this environment refuses this request",
                        code="policy_denied")
    allows = [r for r in applying if r.effect == "allow"]
    if allows and not any(matches(r, snap, ctx, params) for r in allows):
        raise Forbidden("no policy of this environment allows this request",
                        code="policy_denied")


class PolicyGate:
    """A process's policies, cached per env and checked against the env's version on every
    request (one primary-key read)."""

    def __init__(self) -> None:
        self._cache: dict[uuid.UUID, Snapshot] = {}
        self._lock = threading.Lock()

    def snapshot(self, ctx: Ctx) -> Snapshot:
        version = current_version(ctx)
        cached = self._cache.get(ctx.env_id)
        if cached is not None and cached.version == version:
            return cached
        snap = load_snapshot(ctx, version)
        with self._lock:
            self._cache[ctx.env_id] = snap
        return snap

    def check(self, scopes: tuple[str, ...], ctx: Ctx, params: dict[str, Any]) -> None:
        if any(s.startswith(POLICY_SCOPE_PREFIX) for s in scopes):
            return  # policy administration: never subject to policies
        snap = self.snapshot(ctx)
        if snap.rules:
            decide(snap, scopes, ctx, params)
