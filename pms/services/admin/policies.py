"""Policy administration and evaluation (docs/guides/authorization.md).

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

Evaluation (the decision point, its cache and `authorize`) lives in
pms.services.admin.policy_decision, which reads the rows this module writes and imports no
capability: any use case may ask it.
"""

from __future__ import annotations

import uuid
from typing import Any

from pms.context import Ctx
from pms.db.fields import utcnow
from pms.db.pagination import Page, encode_cursor, paginate
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.errors import (
    AlreadyExists,
    Forbidden,
    NotFound,
    PreconditionFailed,
    PreconditionRequired,
    ValidationFailed,
)
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
from pms.services.admin.policy_decision import (  # noqa: F401 - callers import the decision point from here too
    COMPANY_ROLES,
    NO_FILTER,
    PDP,
    PolicyGate,
    RowFilter,
    Target,
    _numbered,
    _rules,
    _scope_exists,
    authorize,
    canonical_id,
    decide,
    explain,
    governs,
    register_scopes,
)
from pms.services.corporate import companies

COMPANY_USERS_READ, COMPANY_USERS_WRITE = ("hotel:pms:company_users:read",
                                           "hotel:pms:company_users:write")


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


# -- policy sets ------------------------------------------------------------------------------

def policy_set_out(row: PolicySet) -> PolicySetOut:
    return PolicySetOut(id=row.id, name=row.name, description=row.description,
                        enabled=row.enabled, default_effect=row.default_effect or "allow",
                        rules=_rules(row), version=row.version,
                        created_at=row.created_at, updated_at=row.updated_at)


# -- what a rule may say (refused at write when it could never match) -------------------------

SUBJECT_KINDS = ("user", "profile")


def _subject_problem(ref: str) -> str | None:
    """Why a subject reference can never be a caller (None: it can)."""
    kind, _, rest = ref.partition(":")
    if kind == "group":
        return "group: subjects are not expanded to members: name user:<sub> or profile:<id>"
    if kind not in SUBJECT_KINDS or not rest:
        return "a subject is user:<token sub> or profile:<profile id> (the kind prefix is required)"
    if kind == "profile" and canonical_id(rest) != rest:
        return "profile:<id> takes the profile id in lower case (as tokens carry it)"
    return None


def _object_problem(ref: str) -> str | None:
    kind, _, rest = ref.partition(":")
    if kind in ("property", "company") and canonical_id(rest) != rest:
        return f"{kind}:<id> takes the {kind} id, a uuid in lower case"
    if kind in ("group", "user", "profile") and _subject_problem(ref):
        return _subject_problem(ref)
    return None


def never_matches(errors: list[dict[str, str]]) -> ValidationFailed:
    return ValidationFailed(f"{errors[0]['field']}: {errors[0]['message']}",
                            code="policy_never_matches", errors=errors)


def check_rules(rules: list[Rule]) -> list[Rule]:
    """The rules numbered, or 422 `policy_never_matches` naming each field that makes a rule
    unable to match: an unknown scope, a subject without its kind, a group subject, a
    duplicated rule id."""
    errors: list[dict[str, str]] = []
    seen: set[str] = set()
    numbered = _numbered(rules)
    for i, rule in enumerate(numbered):
        at = f"rules[{i}]"
        if rule.id in seen:
            errors.append({"field": f"{at}.id", "message": f"{rule.id} names another rule of "
                                                           "this set"})
        seen.add(rule.id or "")
        for j, pattern in enumerate(rule.scopes):
            if not _scope_exists(pattern):
                errors.append({"field": f"{at}.scopes[{j}]",
                               "message": f"{pattern} is no scope of this API"})
        for j, ref in enumerate(rule.subjects or []):
            problem = _subject_problem(ref)
            if problem:
                errors.append({"field": f"{at}.subjects[{j}]", "message": problem})
    if errors:
        raise never_matches(errors)
    return numbered


def check_version(row: Any, if_match: str | None) -> None:
    """A set is replaced only with its version: If-Match `"<version>"` (428 without it, 412
    when it names another)."""
    if if_match is None:
        raise PreconditionRequired("replacing a policy set needs If-Match with the ETag read "
                                   "(its version)")
    tags = [t.strip().removeprefix("W/").strip('"') for t in if_match.split(",")]
    if if_match.strip() != "*" and str(row.version) not in tags:
        raise PreconditionFailed(f"the policy set is at version {row.version}; read it again",
                                 current_etag=f'"{row.version}"')


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
                              enabled=body.enabled, default_effect=body.default_effect,
                              rules=to_data(check_rules(body.rules)), version=1)
        row.save(force_insert=True)
        out = _changed(uow, "policy_set", "created", row, policy_set_out)
    return out


def replace_policy_set(ctx: Ctx, set_id: uuid.UUID, body: PolicySetIn, *,
                       if_match: str | None = None) -> PolicySetOut:
    rules = check_rules(body.rules)
    with unit_of_work(ctx) as uow:
        row = _load(PolicySet, set_id, "policy set")
        check_version(row, if_match)
        before = to_data(policy_set_out(row))
        _unique_name(body.name, but=row.id)
        row.name, row.description, row.enabled = body.name, body.description, body.enabled
        row.default_effect = body.default_effect
        row.rules = to_data(rules)
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
        # company-user bindings are the company_users resource: listed only for a caller with
        # its read scope, each through the decision point (by its company)
        if COMPANY_USERS_READ in ctx.scopes and traveler is not False and company is not False:
            bound = CompanyUser.select()
            if traveler is not None:
                bound = bound.where(CompanyUser.traveler_profile_id == traveler)
            if company is not None:
                bound = bound.where(CompanyUser.company_profile_id == company)
            pages.append((paginate(bound, CompanyUser, limit=limit, cursor=cursor),
                          binding_relation))
    rows = sorted((out(r) for page, out in pages for r in page.items
                   if out is relation_out or _binding_visible(ctx, r)),
                  key=lambda r: (r.created_at, str(r.id)))
    more = len(rows) > limit or any(page.next_cursor for page, _ in pages)
    rows = rows[:limit]
    next_cursor = encode_cursor([rows[-1].created_at, rows[-1].id]) if more and rows else None
    return Page(items=rows, next_cursor=next_cursor)


def _binding_visible(ctx: Ctx, row: CompanyUser) -> bool:
    return PDP.decide((COMPANY_USERS_READ,), ctx,
                      Target.of(company_id=row.company_profile_id)).allowed


def _needs_scope(ctx: Ctx, scope: str) -> None:
    if scope not in ctx.scopes:
        raise Forbidden(f"a company role is a company user: this needs the scope {scope}",
                        code="missing_scope")


def get_relation(ctx: Ctx, relation_id: uuid.UUID) -> RelationOut:
    with read_scope(ctx):
        row = PolicyRelation.get_or_none(PolicyRelation.id == relation_id)
        if row is not None:
            return relation_out(row)
        binding = CompanyUser.get_or_none(CompanyUser.id == relation_id)
    if binding is None:
        raise NotFound("no such relation")
    _needs_scope(ctx, COMPANY_USERS_READ)
    authorize(ctx, COMPANY_USERS_READ, company_id=binding.company_profile_id)
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
        _needs_scope(ctx, COMPANY_USERS_WRITE)
        authorize(ctx, COMPANY_USERS_WRITE, property_id=body.property_id, company_id=company)
        added = companies.add_user(ctx, body.property_id, company,
                                   CompanyUserIn(traveler_profile_id=traveler,
                                                 role=body.relation))  # type: ignore[arg-type]
        return get_relation(ctx, added.id)
    if body.property_id is not None:
        raise ValidationFailed("property_id is for company roles only",
                               errors=[{"field": "property_id", "message": "not expected"}])
    errors = [{"field": name, "message": problem} for name, problem in (
        ("subject", _subject_problem(body.subject)), ("object", _object_problem(body.object)))
        if problem]
    if errors:
        raise never_matches(errors)
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
    _needs_scope(ctx, COMPANY_USERS_WRITE)
    authorize(ctx, COMPANY_USERS_WRITE, property_id=property_id,
              company_id=binding.company_profile_id)
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


def _check_target(body: AttributeIn) -> None:
    """An attribute's target is spelled as the decision point compares it, else 422."""
    if body.target_kind == "property":
        problem = (None if canonical_id(body.target_id) == body.target_id else
                   "a property attribute's target_id is the property id, a uuid in lower case")
    else:
        problem = _subject_problem(body.target_id)
    if problem:
        raise never_matches([{"field": "target_id", "message": problem}])


def create_attribute(ctx: Ctx, body: AttributeIn) -> AttributeOut:
    _check_target(body)
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
