"""Configuration bundles ("Beyond the anchors"; research capabilities-beyond §5 A1):
how a chain opens a new hotel from one it runs.

`export_bundle` reads a property's configuration (packages, items, room types, rate plans, the
kiosk configuration, the property's module settings and the env's stored lists of values) into
one `ConfigBundle`: rows named by their codes, never ids, each section a list of the domain
route's own request schema, with `bundle_version` and a `content_hash` (sha256 of the canonical
JSON of the content).

`apply_bundle` compares a bundle with a property of the same env and answers the difference per
row: `create`, `update` (with the changed fields), `unchanged`, `kept` (a row the property has
and the bundle does not: never deleted) and, for the env-wide lists of values, `differs` (shown,
never written: a bundle configures a property). A dry run stops there and writes nothing. The
apply runs the SAME service functions as the domain routes (`catalog.create_child` /
`update_child`, `kiosk.put_config`, `settings.patch_modules`: one implementation, each writing
its own outbox and audit rows) inside ONE transaction (`one_transaction`): all rows change, or
none. A bundle that could not apply (a duplicated code, a rate plan naming a package that
neither the bundle nor the property has, a currency change the domain refuses, a hash that does
not match) is refused by the dry run and the apply alike, with 422.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from pms.context import Ctx
from pms.db.uow import one_transaction, read_scope
from pms.errors import Forbidden, ValidationFailed
from pms.schemas import catalog as cs
from pms.schemas import config_bundles as s
from pms.schemas.kiosk import KioskConfigIn
from pms.services.admin.policy_decision import authorize
from pms.services.catalog import catalog, lov, settings
from pms.services.catalog.catalog import Kind, load_property
from pms.services.kiosk import kiosk


@dataclass(frozen=True)
class Section:
    name: str  # the bundle's field
    kind: Kind
    schema: type  # the domain route's create schema (a bundle row)
    patch: type  # the domain route's change schema
    fixed: tuple[str, ...] = ()  # fields the change schema cannot change


# in the order they apply: packages before the rate plans that name them
SECTIONS = (
    Section("packages", catalog.PACKAGE, cs.PackageIn, cs.PackagePatch, ("currency",)),
    Section("items", catalog.ITEM, cs.ItemIn, cs.ItemPatch, ("currency",)),
    Section("room_types", catalog.ROOM_TYPE, cs.RoomTypeIn, cs.RoomTypePatch),
    Section("rate_plans", catalog.RATE_PLAN, cs.RatePlanIn, cs.RatePlanPatch, ("currency",)),
)
_MAX_LIST = 10_000


def _as_schema(schema: type, out: Any) -> Any:
    data = msgspec.to_builtins(out)
    return msgspec.convert({f: data[f] for f in schema.__struct_fields__ if f in data}, schema)


def _rows(section: Section, property_id: uuid.UUID) -> list[Any]:
    model = section.kind.model
    return list(model.select().where(model.property == property_id).order_by(model.code))


def content_hash(bundle: s.ConfigBundle) -> str:
    """sha256 of the canonical JSON of the bundle without `content_hash` and `source`."""
    data = msgspec.to_builtins(bundle)
    data.pop("content_hash", None)
    data.pop("source", None)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _kiosk_in(config: Any) -> KioskConfigIn:
    return _as_schema(KioskConfigIn, config)


def _stored_lists(ctx: Ctx) -> dict[str, list[str]]:
    return {name: [item.code for item in lov.list_values(ctx, name, include_inactive=True,
                                                         limit=_MAX_LIST).items]
            for name in sorted(lov.SEEDED_LISTS)}


# -- who may read and write which section -----------------------------------------------------

# each section's domain resource: a bundle reads and writes a section only with the scope its
# domain routes need, and only where the env's policies let that scope act on the property
SECTION_RESOURCES = {"packages": "properties", "items": "properties",
                     "room_types": "properties", "rate_plans": "rates",
                     "kiosk_config": "kiosk", "settings": "settings", "lovs": "lov"}
NEVER_WRITTEN = frozenset({"lovs"})  # env-wide: compared, never written by a bundle


def section_scope(section: str, *, write: bool) -> str:
    mode = "write" if write and section not in NEVER_WRITTEN else "read"
    return f"hotel:pms:{SECTION_RESOURCES[section]}:{mode}"


def _carried(bundle: s.ConfigBundle) -> list[str]:
    return [name for name in SECTION_RESOURCES if getattr(bundle, name) not in (None, [])]


def authorize_sections(ctx: Ctx, property_id: uuid.UUID, sections: list[str], *,
                       write: bool) -> None:
    """Each section needs its domain scope (403 `missing_scope`, naming it) and the decision
    point's yes for that scope at this property (403 `policy_denied`, naming the rule)."""
    for section in sections:
        scope = section_scope(section, write=write)
        if scope not in ctx.scopes:
            raise Forbidden(f"the bundle's {section} need the scope {scope}",
                            code="missing_scope", section=section)
        authorize(ctx, scope, property_id=property_id)


def export_bundle(ctx: Ctx, property_id: uuid.UUID) -> s.ConfigBundle:
    """The property's configuration as a bundle (every section's read scope needed).
    Raises NotFound (no such property here); Forbidden (a section's scope or policy)."""
    authorize_sections(ctx, property_id, list(SECTION_RESOURCES), write=False)
    with read_scope(ctx):
        prop = load_property(property_id)
        sections = {sec.name: [_as_schema(sec.schema, sec.kind.out(row))
                               for row in _rows(sec, property_id)] for sec in SECTIONS}
    found = kiosk.get_config(ctx, property_id).config
    overrides = settings.get_modules(ctx, property_id).overrides
    bundle = s.ConfigBundle(
        bundle_version=s.BUNDLE_VERSION,
        source=s.BundleSource(property_code=prop.code, exported_at=ctx.now),
        kiosk_config=_kiosk_in(found) if found.configured else None,
        settings=overrides or None, lovs=_stored_lists(ctx), **sections)
    return msgspec.structs.replace(bundle, content_hash=content_hash(bundle))


# -- the difference ------------------------------------------------------------------------------

@dataclass
class Step:
    change: s.BundleChange
    run: Callable[[], Any] | None = None  # None: nothing to write


def _refused(field: str, message: str, *, code: str = "invalid_bundle") -> ValidationFailed:
    return ValidationFailed(f"the bundle cannot apply here: {field} {message}", code=code,
                            errors=[{"field": field, "message": message}])


def _row_steps(ctx: Ctx, property_id: uuid.UUID, sec: Section, wanted: list[Any]
               ) -> list[Step]:
    current = {row.code: row for row in _rows(sec, property_id)}
    steps, seen = [], set()
    for i, item in enumerate(wanted):
        if item.code in seen:
            raise _refused(f"{sec.name}[{i}].code", f"{item.code} appears twice")
        seen.add(item.code)
        row = current.get(item.code)
        if row is None:
            steps.append(Step(s.BundleChange(section=sec.name, code=item.code, action="create"),
                              lambda item=item: catalog.create_child(ctx, sec.kind, property_id,
                                                                     item)))
            continue
        have = _as_schema(sec.schema, sec.kind.out(row))
        changed = [f for f in sec.schema.__struct_fields__
                   if getattr(item, f) != getattr(have, f)
                   and not (f in sec.fixed and getattr(item, f) is None)]
        for f in changed:
            if f in sec.fixed:
                raise _refused(f"{sec.name}[{i}].{f}", f"cannot change: {item.code} here has "
                               f"{getattr(have, f)}")
        if not changed:
            steps.append(Step(s.BundleChange(section=sec.name, code=item.code,
                                             action="unchanged")))
            continue
        patch = msgspec.convert({f: msgspec.to_builtins(getattr(item, f)) for f in changed},
                                sec.patch)
        steps.append(Step(s.BundleChange(section=sec.name, code=item.code, action="update",
                                         changed=changed),
                          lambda row=row, patch=patch: catalog.update_child(
                              ctx, sec.kind, property_id, row.id, patch)))
    steps += [Step(s.BundleChange(section=sec.name, code=code, action="kept",
                                  detail="not in the bundle; never deleted"))
              for code in sorted(set(current) - seen)]
    return steps


def _check_package_codes(bundle: s.ConfigBundle, property_id: uuid.UUID) -> None:
    known = {p.code for p in bundle.packages} | {
        row.code for row in _rows(SECTIONS[0], property_id)}
    named = [(f"rate_plans[{i}].package_codes", plan.package_codes)
             for i, plan in enumerate(bundle.rate_plans)]
    if bundle.kiosk_config is not None:
        named.append(("kiosk_config.add_on_package_codes",
                      bundle.kiosk_config.add_on_package_codes))
    for field, codes in named:
        missing = sorted(set(codes) - known)
        if missing:
            raise _refused(field, "names packages neither the bundle nor the property has: "
                           + ", ".join(missing))


def _kiosk_steps(ctx: Ctx, property_id: uuid.UUID, wanted: KioskConfigIn | None) -> list[Step]:
    if wanted is None:
        return []
    found = kiosk.get_config(ctx, property_id).config
    changed = [] if not found.configured else [
        f for f in KioskConfigIn.__struct_fields__
        if getattr(wanted, f) != getattr(_kiosk_in(found), f)]
    action = "create" if not found.configured else "update" if changed else "unchanged"
    run = None if action == "unchanged" else (
        lambda: kiosk.put_config(ctx, property_id, wanted))
    return [Step(s.BundleChange(section="kiosk_config", code="kiosk_config", action=action,
                                changed=changed), run)]


def _settings_steps(ctx: Ctx, property_id: uuid.UUID, wanted: dict[str, Any] | None
                    ) -> list[Step]:
    if wanted is None:
        return []
    view = settings.get_modules(ctx, property_id)
    merged = settings.merge_patch(view.overrides, wanted)
    changed = sorted(k for k in wanted if merged.get(k) != view.overrides.get(k))
    action = "unchanged" if merged == view.overrides else (
        "update" if view.overrides else "create")
    run = None if action == "unchanged" else (
        lambda: settings.patch_modules(ctx, property_id, wanted, if_match=view.etag))
    return [Step(s.BundleChange(section="settings", code="modules", action=action,
                                changed=changed), run)]


def _lov_steps(ctx: Ctx, wanted: dict[str, list[str]] | None) -> list[Step]:
    if wanted is None:
        return []
    unknown = sorted(set(wanted) - set(lov.SEEDED_LISTS))
    if unknown:
        raise _refused("lovs", "names lists that are not stored lists: " + ", ".join(unknown))
    have = _stored_lists(ctx)
    steps = []
    for name, codes in sorted(wanted.items()):
        missing, extra = sorted(set(codes) - set(have[name])), sorted(set(have[name]) - set(codes))
        if not missing and not extra:
            steps.append(Step(s.BundleChange(section="lovs", code=name, action="unchanged")))
            continue
        steps.append(Step(s.BundleChange(
            section="lovs", code=name, action="differs",
            detail=f"env-wide list, not written by a bundle; missing here: {missing}, "
                   f"only here: {extra}")))
    return steps


def _plan(ctx: Ctx, property_id: uuid.UUID, bundle: s.ConfigBundle) -> list[Step]:
    load_property(property_id)
    _check_package_codes(bundle, property_id)
    steps = []
    for sec in SECTIONS:
        steps += _row_steps(ctx, property_id, sec, getattr(bundle, sec.name))
    return [*steps, *_kiosk_steps(ctx, property_id, bundle.kiosk_config),
            *_settings_steps(ctx, property_id, bundle.settings),
            *_lov_steps(ctx, bundle.lovs)]


def apply_bundle(ctx: Ctx, property_id: uuid.UUID, bundle: s.ConfigBundle, *,
                 dry_run: bool) -> s.BundleApplyOut:
    """The difference between `bundle` and the property, applied unless `dry_run`.

    Raises:
        NotFound: no such property in this env.
        ValidationFailed (422): the hash does not match the content (`bundle_hash_mismatch`);
            the bundle cannot apply here (`invalid_bundle`, or the domain's own 422).
    """
    # the answer shows every section's rows (kept ones too): their read scopes; an apply
    # writes the sections the bundle carries: their write scopes
    authorize_sections(ctx, property_id, list(SECTION_RESOURCES), write=False)
    if not dry_run:
        authorize_sections(ctx, property_id, _carried(bundle), write=True)
    digest = content_hash(bundle)
    if bundle.content_hash is not None and bundle.content_hash != digest:
        raise _refused("content_hash", "does not match the bundle's content",
                       code="bundle_hash_mismatch")
    if dry_run:
        with read_scope(ctx):
            steps = _plan(ctx, property_id, bundle)
    else:
        with one_transaction(ctx):
            steps = _plan(ctx, property_id, bundle)
            for step in steps:
                if step.run is not None:
                    step.run()
    changes = [step.change for step in steps]
    counts = {a: sum(c.action == a for c in changes)
              for a in ("create", "update", "unchanged", "kept", "differs")}
    return s.BundleApplyOut(property_id=property_id, dry_run=dry_run,
                            bundle_version=bundle.bundle_version, content_hash=digest,
                            counts=counts, changes=changes)
