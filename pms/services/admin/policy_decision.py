"""The policy decision point (docs/guides/authorization.md): the rules that policy sets,
relations and attributes (pms.services.admin.policies) say, evaluated for a caller, the scopes
an action needs and its target. No capability is imported here, so any use case may ask.

Evaluation (`PDP`, the one decision point; docs/guides/authorization.md): asked by the route
gate after the scope check, and by the use cases that act on several targets in one request
(bundle sections, company roles), always with the caller, the scopes the action needs and the
target (`Target`: the property and company the request names, wherever it names them). The
rules of the env's enabled sets that govern one of the scopes apply: deny overrides (a deny
that holds refuses, and so does one whose property or company condition the target does not
pin down: fail closed); then each set with `default_effect: deny` needs one of its allow rules
to hold; otherwise the scopes decide. A list across properties gets a `RowFilter` instead of a
refusal (`row_filter`). A 403 names the set and the rule. A policy never widens: it runs only
after the token's scopes were found sufficient, and it reads only the request's own env (no
rule names an env), so tenant isolation stays what the ORM and row-level security make it.
The policy-administration routes themselves are not subject to policies (no policy can lock
the administrators out).

Caching: each process (each `PolicyGate`) keeps the env's rules and attributes with the
version they were read at; every policy write bumps the env's `policy_version` row in its own
transaction. The route gate decides with the cached rules and has the request's first
statement check, in its own message, that the row still says that version
(`pms_policy_version_is`, migration 054; pms.db.database `check_first`): no round trip of its
own. When the version moved, that message runs nothing; the gate re-reads the rules, decides
every question of the request again, and the statement goes out a second time, or the
request is refused. A request that sends no statement sends the check before its answer. A
cached refusal, a list's row filter, the "would this be allowed?" answer and SQLite read the
version first (one primary-key lookup). So a new rule holds on every host from the next
request, whatever the outbox relay is doing. Relation conditions read their tuple at
evaluation time (an indexed lookup, only for a rule that names one).
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec

from pms.context import Ctx
from pms.db.database import PmsPostgresDatabase, db
from pms.db.statements import Statement, param
from pms.db.uow import read_scope
from pms.errors import (
    Forbidden,
    ValidationFailed,
)
from pms.models import CompanyUser, PolicyAttribute, PolicyRelation, PolicySet, PolicyVersion
from pms.schemas.policies import (
    DecisionIn,
    DecisionOut,
    Rule,
)

POLICY_SCOPE_PREFIX = "hotel:pms:policy:"
COMPANY_ROLES = frozenset({"ADMIN", "BOOKER", "TRAVELER", "VIEWER"})


# -- the version ------------------------------------------------------------------------------

# PERF: compiled once per process (pms.db.statements): the read every request makes
_VERSION = Statement.build("policies.version", lambda: (
    PolicyVersion.select(PolicyVersion.version)
    .where((PolicyVersion.env_id == param.env) & (PolicyVersion.id == param.env))))


def current_version(ctx: Ctx) -> int:
    """The env's policy version (0 before its first policy write): one primary-key read."""
    with read_scope(ctx):
        row = _VERSION.one()
    return row[0] if row else 0


def _rules(row: PolicySet) -> list[Rule]:
    rules = msgspec.convert(row.rules or [], list[Rule])
    return _numbered(rules)


def _numbered(rules: list[Rule]) -> list[Rule]:
    """Every rule with its id: a rule sent without one is r<its place in the set>."""
    return [r if r.id is not None else msgspec.structs.replace(r, id=f"r{n}")
            for n, r in enumerate(rules, 1)]


# the scopes the route table declares (pms.api.gate.GateMiddleware.load registers them)
KNOWN_SCOPES: set[str] = set()


def register_scopes(scopes: set[str]) -> None:
    KNOWN_SCOPES.update(scopes)


def _scope_exists(pattern: str) -> bool:
    if pattern == "*" or not KNOWN_SCOPES:
        return True
    if pattern.endswith(":*"):
        return any(s.startswith(pattern[:-1]) for s in KNOWN_SCOPES)
    return pattern in KNOWN_SCOPES


# -- evaluation: the policy decision point ------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """What a request acts on, as far as policies read it: the property and the company it
    names (path, query or body), or those of the row it loaded. None: the request does not pin
    it down (an env-wide operation, a list across properties)."""

    property_id: str | None = None
    company_id: str | None = None

    @staticmethod
    def of(property_id: Any = None, company_id: Any = None) -> Target:
        return Target(property_id=canonical_id(property_id),
                      company_id=canonical_id(company_id))


def canonical_id(value: Any) -> str | None:
    """A uuid as policies compare it (lower case, hyphenated); None when `value` is not one."""
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        return str(value)
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return None


@dataclass(frozen=True)
class Bound:
    """A rule with the set it belongs to."""

    set_id: str
    default_effect: str
    rule: Rule


@dataclass(frozen=True)
class Decision:
    """The policy step's answer: allowed or not, and the rule (or the set) that decided."""

    allowed: bool
    reason: str
    policy_set_id: str | None = None
    rule_id: str | None = None
    effect: str | None = None

    def enforce(self) -> None:
        if not self.allowed:
            raise Forbidden(self.reason, code="policy_denied", policy_set_id=self.policy_set_id,
                            rule_id=self.rule_id)


@dataclass(frozen=True)
class RowFilter:
    """What a list across properties may show under the env's rules: never the rows of
    `denied`; when `allowed` is not None, only the rows of `allowed`."""

    denied: frozenset[str] = frozenset()
    allowed: frozenset[str] | None = None
    # the first rule (or set) that made it restrict, for a list that cannot filter by property
    policy_set_id: str | None = None
    rule_id: str | None = None

    @property
    def restricts(self) -> bool:
        return bool(self.denied) or self.allowed is not None

    def refuse(self) -> None:
        """403 for a list whose rows have no property to filter by."""
        if self.restricts:
            raise Forbidden(f"policy set {self.policy_set_id} (rule {self.rule_id}) limits "
                            "this scope by property, and this list's rows have no property: "
                            "it is refused whole", code="policy_denied",
                            policy_set_id=self.policy_set_id, rule_id=self.rule_id)

    def admits(self, property_id: Any) -> bool:
        pid = canonical_id(property_id)
        if pid in self.denied:
            return False
        return self.allowed is None or pid in self.allowed


NO_FILTER = RowFilter()


@dataclass(frozen=True)
class Snapshot:
    """An env's enabled rules and its attributes, as of `version`."""

    version: int
    rules: tuple[Bound, ...]
    attributes: dict[tuple[str, str], dict[str, str]]


def load_snapshot(ctx: Ctx, version: int) -> Snapshot:
    with read_scope(ctx):
        sets = list(PolicySet.select().where(PolicySet.enabled == True)  # noqa: E712
                    .order_by(PolicySet.created_at, PolicySet.id))
        attributes: dict[tuple[str, str], dict[str, str]] = {}
        for row in PolicyAttribute.select().order_by(PolicyAttribute.id):
            attributes.setdefault((row.target_kind, row.target_id), {})[row.name] = row.value
    rules = tuple(Bound(str(row.id), row.default_effect or "allow", rule)
                  for row in sets for rule in _rules(row))
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
        return CompanyUser.select(CompanyUser.id).where(
            CompanyUser.company_profile_id == uuid.UUID(object_id),
            CompanyUser.traveler_profile_id == ctx.holder_id,
            CompanyUser.role == relation).exists()


def _attrs_hold(wanted: dict[str, str] | None, have: dict[str, str] | None) -> bool:
    if not wanted:
        return True
    have = have or {}
    return all(have.get(name) == value for name, value in wanted.items())


def _names_property(rule: Rule) -> bool:
    return (rule.property_ids is not None or bool(rule.property_attributes)
            or (rule.relation is not None and rule.relation.object == "property"))


def _names_company(rule: Rule) -> bool:
    return rule.relation is not None and rule.relation.object == "company"


def holds(rule: Rule, snap: Snapshot, ctx: Ctx, target: Target) -> bool | None:
    """Whether every condition of the rule holds for this caller and target: True, False, or
    None when it depends on a property or company the target does not pin down (cheap
    conditions first; a definite False wins)."""
    if rule.client_kinds is not None and ctx.client_kind not in rule.client_kinds:
        return False
    if rule.subjects is not None and not set(_subjects(ctx)) & set(rule.subjects):
        return False
    if rule.subject_attributes and not any(
            _attrs_hold(rule.subject_attributes, snap.attributes.get(("subject", s)))
            for s in _subjects(ctx)):
        return False
    unknown = False
    pid = target.property_id
    if _names_property(rule) and pid is None:
        unknown = True
    elif pid is not None:
        if rule.property_ids is not None and pid not in {str(p) for p in rule.property_ids}:
            return False
        if rule.property_attributes and not _attrs_hold(
                rule.property_attributes, snap.attributes.get(("property", pid))):
            return False
    if rule.relation is not None:
        object_id = pid if rule.relation.object == "property" else target.company_id
        if object_id is None:
            unknown = True
        elif not unknown and not _has_relation(ctx, rule.relation.relation,
                                               rule.relation.object, object_id):
            return False
    return None if unknown else True


def _rule_label(bound: Bound) -> str:
    return f"rule {bound.rule.id} of policy set {bound.set_id}"


def decide(snap: Snapshot, scopes: tuple[str, ...], ctx: Ctx, target: Target) -> Decision:
    """The combining algorithm (docs/guides/authorization.md): deny overrides. A deny rule
    that governs one of `scopes` and holds refuses; so does one whose property or company
    condition the target does not pin down (fail closed). Then every set with
    `default_effect: deny` that governs the scopes needs one of its allow rules to hold.
    Otherwise the scopes decide alone (allowed): an allow rule never locks out whom it does
    not name unless its set says so."""
    applying = [b for b in snap.rules if governs(b.rule, scopes)]
    if not applying:
        return Decision(True, "no policy rule governs these scopes")
    for bound in applying:
        if bound.rule.effect != "deny":
            continue
        held = holds(bound.rule, snap, ctx, target)
        if held is True:
            return Decision(False, f"{_rule_label(bound)} refuses this request",
                            bound.set_id, bound.rule.id, "deny")
        if held is None:
            return Decision(False, f"{_rule_label(bound)} refuses at some property or company "
                            "and this request does not name which one it acts on",
                            bound.set_id, bound.rule.id, "deny")
    deciding: Bound | None = None
    for set_id in dict.fromkeys(b.set_id for b in applying if b.default_effect == "deny"):
        allows = [b for b in applying if b.set_id == set_id and b.rule.effect == "allow"]
        matched = next((b for b in allows if holds(b.rule, snap, ctx, target) is True), None)
        if matched is None:
            return Decision(False, f"no allow rule of policy set {set_id} holds for this "
                            "request, and the set's default_effect is deny", set_id, None, "deny")
        deciding = deciding or matched
    if deciding is not None:
        return Decision(True, f"{_rule_label(deciding)} allows this request",
                        deciding.set_id, deciding.rule.id, "allow")
    return Decision(True, "no deny rule holds and no set that governs these scopes has "
                    "default_effect deny")


def _rule_properties(rule: Rule, snap: Snapshot, ctx: Ctx) -> set[str]:
    """The properties at which the rule's property conditions hold (its other conditions
    already hold)."""
    found: set[str] | None = None
    if rule.property_ids is not None:
        found = {str(p) for p in rule.property_ids}
    if rule.property_attributes:
        have = {tid for (kind, tid), attrs in snap.attributes.items()
                if kind == "property" and _attrs_hold(rule.property_attributes, attrs)}
        found = have if found is None else found & have
    if rule.relation is not None and rule.relation.object == "property":
        with read_scope(ctx):
            objects = [row[0] for row in PolicyRelation.select(PolicyRelation.object).where(
                PolicyRelation.subject.in_(_subjects(ctx)),
                PolicyRelation.relation == rule.relation.relation,
                PolicyRelation.object.startswith("property:")).tuples()]
        have = {o.removeprefix("property:") for o in objects}
        found = have if found is None else found & have
    return found or set()


def row_filter(snap: Snapshot, scopes: tuple[str, ...], ctx: Ctx) -> RowFilter | Decision:
    """For a list across properties: the rows the rules let it show (a RowFilter), or the
    refusal when the rules cannot be applied row by row (a deny that holds outright, or one on
    a company relation)."""
    applying = [b for b in snap.rules if governs(b.rule, scopes)]
    if not applying:
        return NO_FILTER
    denied: set[str] = set()
    first: tuple[str | None, str | None] = (None, None)
    for bound in applying:
        if bound.rule.effect != "deny":
            continue
        held = holds(bound.rule, snap, ctx, Target())
        if held is True or (held is None and _names_company(bound.rule)):
            return decide(snap, scopes, ctx, Target())
        if held is None:
            denied |= _rule_properties(bound.rule, snap, ctx)
            first = first if first[0] else (bound.set_id, bound.rule.id)
    allowed: set[str] | None = None
    for set_id in dict.fromkeys(b.set_id for b in applying if b.default_effect == "deny"):
        here: set[str] = set()
        everywhere = False
        for bound in applying:
            if bound.set_id != set_id or bound.rule.effect != "allow":
                continue
            held = holds(bound.rule, snap, ctx, Target())
            if held is True:
                everywhere = True
            elif held is None and not _names_company(bound.rule):
                here |= _rule_properties(bound.rule, snap, ctx)
        if not everywhere:
            allowed = here if allowed is None else allowed & here
            first = first if first[0] else (set_id, None)
    return RowFilter(denied=frozenset(denied),
                     allowed=None if allowed is None else frozenset(allowed),
                     policy_set_id=first[0], rule_id=first[1])


def exempt(scopes: tuple[str, ...]) -> bool:
    """Policy administration is never subject to policies (no rule locks its administrators
    out)."""
    return any(s.startswith(POLICY_SCOPE_PREFIX) for s in scopes)


class PolicyGate:
    """The policy decision point: a process's policies, cached per database and env and
    checked against the env's version on every request (one primary-key read)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, uuid.UUID], Snapshot] = {}
        self._lock = threading.Lock()

    def snapshot(self, ctx: Ctx, version: int | None = None) -> Snapshot:
        if version is None:
            version = current_version(ctx)
        key = (id(db.obj), ctx.env_id)
        cached = self._cache.get(key)
        if cached is not None and cached.version == version:
            return cached
        snap = load_snapshot(ctx, version)
        with self._lock:
            self._cache[key] = snap
        return snap

    def decide(self, scopes: tuple[str, ...], ctx: Ctx, target: Target,
               snap: Snapshot | None = None) -> Decision:
        if exempt(scopes):
            return Decision(True, "policy administration is not subject to policies")
        snap = snap or self.snapshot(ctx)
        if not snap.rules:
            return Decision(True, "this environment has no enabled policy rule")
        return decide(snap, scopes, ctx, target)

    def check(self, scopes: tuple[str, ...], ctx: Ctx, target: Target) -> None:
        """Refuse what the env's policies refuse. An allow decided on the cached rules holds
        only if the request's first statement finds their version current (see the module
        docstring); a refusal is decided on rules read now."""
        if exempt(scopes):
            return
        cached = self._riding(ctx, (scopes, ctx, target))
        if cached is not None:
            decision = self.decide(scopes, ctx, target, cached)
            if decision.allowed:
                return
        self.decide(scopes, ctx, target).enforce()

    def _riding(self, ctx: Ctx, question: tuple[tuple[str, ...], Ctx, Target]) -> Snapshot | None:
        """The cached snapshot, with the check of its version on the request's first statement
        (and `question` asked again if that check refuses); None when the version is read
        first instead (nothing cached, or a database without the check)."""
        database = db.obj
        if not isinstance(database, PmsPostgresDatabase):
            return None
        cached = self._cache.get((id(database), ctx.env_id))
        if cached is None:
            return None
        if database.check_pending() and _ASKED.version == cached.version:
            _ASKED.questions.append(question)
            return cached
        questions = [question]
        _ASKED.questions, _ASKED.version = questions, cached.version
        database.check_first(VERSION_CHECK, (cached.version,),
                             lambda: self._ask_again(database, ctx, questions), ctx.env_id)
        return cached

    def _ask_again(self, database: PmsPostgresDatabase, ctx: Ctx,
                   questions: list[tuple[tuple[str, ...], Ctx, Target]]) -> None:
        """The request's first statement found the env's policies moved on: decide its
        questions again on the rules as they are now (403 for the first refused). A refusal
        sticks: every later statement of the request in the env is refused too, and the gate
        answers it at the end, even where a caller caught the exception (a health check)."""
        snap = self.snapshot(ctx)
        for scopes, asker, target in questions:
            decision = self.decide(scopes, asker, target, snap)
            if not decision.allowed:
                database.check_first(VERSION_CHECK, (-1,), decision.enforce, ctx.env_id)
                decision.enforce()

    def settle(self, ctx: Ctx) -> None:
        """Send the request's version check if no statement carried it (a request that read
        nothing): 403 when the rules as they are now refuse what it was allowed."""
        database = db.obj
        if isinstance(database, PmsPostgresDatabase) and database.check_pending():
            with read_scope(ctx):
                db.execute_sql("SELECT 1")

    def rows(self, scopes: tuple[str, ...], ctx: Ctx) -> RowFilter:
        """The filter of a list across properties (403 when the rules refuse it whole)."""
        if exempt(scopes):
            return NO_FILTER
        snap = self.snapshot(ctx)
        if not snap.rules:
            return NO_FILTER
        found = row_filter(snap, scopes, ctx)
        if isinstance(found, Decision):
            found.enforce()
            return NO_FILTER
        return found


class _Asked(threading.local):
    """The questions whose allow waits for the request's version check, not sent yet."""

    questions: list[tuple[tuple[str, ...], Ctx, Target]] = []
    version = -1


_ASKED = _Asked()
VERSION_CHECK = "SELECT pms_policy_version_is(%s)"


# the process's decision point: the route gate, and the use cases that act on several
# targets in one request (bundle sections, relations), ask it the same question
PDP = PolicyGate()


def authorize(ctx: Ctx, scopes: tuple[str, ...] | str, *, property_id: Any = None,
              company_id: Any = None) -> None:
    """Refuse (403 `policy_denied`, naming the rule) what the env's policies refuse for this
    caller, scopes and target."""
    if isinstance(scopes, str):
        scopes = (scopes,)
    PDP.check(scopes, ctx, Target.of(property_id, company_id))


def explain(ctx: Ctx, body: DecisionIn) -> DecisionOut:
    """"Would this be allowed?": the decision point's answer for another caller, scopes and
    target, with the rule (or the set) that decided. Only the policies are asked: whether that
    caller's token would carry the scopes is not known here."""
    unknown = [f"scopes[{i}]" for i, scope in enumerate(body.scopes)
               if "*" in scope or not _scope_exists(scope)]
    if unknown:
        raise ValidationFailed("scopes must name scopes of this API",
                               errors=[{"field": f, "message": "no scope of this API"}
                                       for f in unknown])
    asked = ctx.with_(sub=body.sub, client_kind=body.client_kind, holder_id=body.holder_id,
                      scopes=frozenset(body.scopes))
    decision = PDP.decide(tuple(body.scopes), asked,
                          Target.of(body.property_id, body.company_profile_id))
    return DecisionOut(decision="allow" if decision.allowed else "deny",
                       reason=decision.reason, policy_set_id=decision.policy_set_id,
                       rule_id=decision.rule_id,
                       effect=decision.effect)  # type: ignore[arg-type]
