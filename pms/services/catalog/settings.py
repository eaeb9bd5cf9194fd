"""Settings: the module configuration (env-wide, or one property's overriding the env's) and the
env's external systems. Each is a JSON document (`SettingsDocument`) changed by RFC 7396 merge
patches (the external systems also by replacement), validated by the msgspec schemas of
pms/schemas/settings.py, versioned (the ETag), audited and announced
(`hotel:pms:settings:updated`).

If-Match: required on module changes (428 `precondition_required` without it; several admins
and the groups issue's switch share one document), optional on external systems; a tag that is
not current is 412 `precondition_failed`. Secrets are never stored (SPEC rule 3): external
systems hold `secret_ref` references, and fields that look like credentials are refused (422
`secret_refused`).

`effective(ctx, property_id)` is what other modules read (e.g. the groups issue:
`effective(ctx, pid)["blocks"]["tentative_deducts_inventory"]`).
"""

from __future__ import annotations

import copy
import re
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec
import peewee

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.vat_ids import check_vat_id
from pms.errors import NotFound, PreconditionFailed, PreconditionRequired, ValidationFailed
from pms.models import Property
from pms.models.settings import ENV_SCOPE, SettingsDocument
from pms.schemas.settings import DEFAULT_MODULES, MODULE_SCHEMAS, ExternalSystemsIn

MODULES, EXTERNAL_SYSTEMS = "modules", "external_systems"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396: an object patch merges key by key (null removes); anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _matches(if_match: str | None, etag: str) -> bool:
    tags = [t.strip() for t in (if_match or "").split(",")]
    return "*" in tags or etag in tags or f"W/{etag}" in tags


def check_precondition(if_match: str | None, etag: str, *, required: bool) -> None:
    """412 when If-Match is given and is not `etag` (nor `*`); 428 without it when required."""
    if if_match is None:
        if required:
            raise PreconditionRequired("send If-Match with the ETag of the settings you read")
        return
    if not _matches(if_match, etag):
        raise PreconditionFailed("the settings changed since they were read: read them again",
                                 current_etag=etag)


def _doc(kind: str, scope_key: str, *, lock: bool = False) -> SettingsDocument | None:
    query = SettingsDocument.select().where((SettingsDocument.kind == kind)
                                            & (SettingsDocument.scope_key == scope_key))
    return (for_update(query) if lock else query).first()


def _property(property_id: uuid.UUID) -> Property:
    row = Property.fetch(property_id)
    if row is None:
        raise NotFound("no such property")
    return row


# -- module settings ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ModulesView:
    property_id: uuid.UUID | None
    modules: dict[str, dict[str, Any]]
    overrides: dict[str, dict[str, Any]]
    etag: str

    def out(self) -> dict[str, Any]:
        return {"property_id": str(self.property_id) if self.property_id else None,
                "modules": self.modules, "overrides": self.overrides,
                "version": self.etag.strip('"')}


def _validated(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every module's settings checked by its schema (unknown module or field, wrong type: 422)."""
    unknown = sorted(set(doc) - set(MODULE_SCHEMAS))
    if unknown:
        raise ValidationFailed(f"unknown module {unknown[0]}", errors=[
            {"field": name, "message": "unknown module"} for name in unknown])
    out = {}
    for name, schema in MODULE_SCHEMAS.items():
        values = doc.get(name, {})
        if not isinstance(values, dict):
            raise ValidationFailed(f"the settings of {name} must be an object",
                                   errors=[{"field": name, "message": "must be an object"}])
        try:
            out[name] = msgspec.to_builtins(msgspec.convert(values, schema))
        except msgspec.ValidationError as exc:
            raise ValidationFailed(f"the settings of {name} are not valid: {exc}",
                                   errors=[{"field": name, "message": str(exc)}]) from exc
    if out["invoicing"]["vat_id"]:
        check_vat_id(out["invoicing"]["vat_id"], "invoicing.vat_id")
    return out


def _modules_state(property_id: uuid.UUID | None, *, lock: bool = False
                   ) -> tuple[SettingsDocument | None, SettingsDocument | None, ModulesView]:
    """(env row, property row, the view) inside a scope."""
    env_row = _doc(MODULES, ENV_SCOPE, lock=lock and property_id is None)
    prop_row = None
    env_values = env_row.document if env_row else {}
    effective = _validated(merge_patch(DEFAULT_MODULES, env_values))
    etag = f"m{env_row.version if env_row else 0}"
    overrides = env_values
    if property_id is not None:
        _property(property_id)
        prop_row = _doc(MODULES, property_id.hex, lock=lock)
        overrides = prop_row.document if prop_row else {}
        effective = _validated(merge_patch(effective, overrides))
        etag += f".{prop_row.version if prop_row else 0}"
    return env_row, prop_row, ModulesView(property_id, effective, copy.deepcopy(overrides),
                                          f'"{etag}"')


def get_modules(ctx: Ctx, property_id: uuid.UUID | None = None) -> ModulesView:
    """The modules' settings in effect (the env's, or a property's over the env's).

    Raises:
        NotFound: no such property in this env.
    """
    with read_scope(ctx):
        return _modules_state(property_id)[2]


def effective(ctx: Ctx, property_id: uuid.UUID | None = None) -> dict[str, dict[str, Any]]:
    """Every module's settings in effect for the env or a property (defaults, then the env's,
    then the property's). Reads in the caller's transaction when there is one."""
    return get_modules(ctx, property_id).modules


def patch_modules(ctx: Ctx, property_id: uuid.UUID | None, patch: dict[str, Any], *,
                  if_match: str | None) -> ModulesView:
    """Apply a merge patch to the env's (or a property's) module settings.

    Raises:
        NotFound: no such property. PreconditionRequired (428): no If-Match.
        PreconditionFailed (412): If-Match is not the current ETag.
        ValidationFailed: unknown module or field, wrong type.
    """
    with unit_of_work(ctx) as uow:
        env_row, prop_row, before = _modules_state(property_id, lock=True)
        check_precondition(if_match, before.etag, required=True)
        row = prop_row if property_id is not None else env_row
        stored = merge_patch(before.overrides, patch)
        base = DEFAULT_MODULES if property_id is None else merge_patch(
            DEFAULT_MODULES, env_row.document if env_row else {})
        modules = _validated(merge_patch(base, stored))
        row = _save(ctx, uow, row, MODULES, property_id, stored)
        # the version the event below gives the row (its UPDATE runs under this row's lock)
        etag = (f'"m{row.version + 1}"' if property_id is None else
                f'"m{env_row.version if env_row else 0}.{row.version + 1}"')
        after = ModulesView(property_id, modules, copy.deepcopy(stored), etag)
        uow.record("settings", "updated", row, after.out(), before=before.out(),
                   property_id=property_id)
    return after


def _save(ctx: Ctx, uow: UnitOfWork, row: SettingsDocument | None, kind: str,
          property_id: uuid.UUID | None, document: dict[str, Any]) -> SettingsDocument:
    if row is None:
        row = SettingsDocument(env_id=ctx.env_id, kind=kind, property=property_id,
                               scope_key=property_id.hex if property_id else ENV_SCOPE,
                               document=document)
        try:
            with SettingsDocument._meta.database.atomic():
                row.save(force_insert=True)
        except peewee.IntegrityError:
            # another request created the document meanwhile: what was read is not current
            raise PreconditionFailed("the settings changed since they were read: read them "
                                     "again") from None
    else:
        row.document = document
        row.save()
    return row


def seed_modules(ctx: Ctx) -> bool:
    """The env's module settings with every default (inside the caller's unit of work); False
    when the env has them already."""
    if _doc(MODULES, ENV_SCOPE) is not None:
        return False
    SettingsDocument.create(env_id=ctx.env_id, kind=MODULES, scope_key=ENV_SCOPE,
                            document=copy.deepcopy(DEFAULT_MODULES))
    return True


# -- external systems -----------------------------------------------------------------------------

# Field names that hold credentials (refused: SPEC rule 3); `secret_ref` is the one allowed.
_SECRET_KEY = re.compile(r"(secret|passw|pwd|token|api[_-]?key|apikey|private[_-]?key|"
                         r"credential|bearer|signing[_-]?key|access[_-]?key|"
                         r"(^|[_.-])key$|^key[_.-]|^auth|[_.-]auth$|hmac|licen[cs]e|"
                         r"signature|passphrase|salt$|cookie|session)", re.I)
# Values that are credentials whatever their field is called: PEM blocks, Authorization
# header values, the prefixes of well-known API keys (Stripe, GitHub, Slack, AWS, Google,
# GitLab, OpenAI), JWTs.
_SECRET_VALUE = re.compile(
    r"(-----BEGIN|^bearer\s|^basic\s|\b(sk|rk)_(live|test)_[A-Za-z0-9]{6,}|"
    r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_|\bxox[abposr]-|\b(AKIA|ASIA)[0-9A-Z]{16}\b|"
    r"\bAIza[0-9A-Za-z_-]{30,}|\bglpat-|\bsk-[A-Za-z0-9_-]{20,}|"
    r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.)", re.I)
# Query-string and fragment parameters of a URL that carry credentials: a name with one of these
# words (`api_key`, `access_token`, `X-Amz-Signature`; `hotel_code` is not one).
_SECRET_PARAM_WORDS = frozenset({
    "key", "apikey", "token", "secret", "sig", "signature", "auth", "authorization",
    "password", "passwd", "pass", "pwd", "credential", "credentials", "session", "sessionid",
    "sid", "hmac", "jwt", "bearer"})


def _secret_param(name: str) -> bool:
    return any(word in _SECRET_PARAM_WORDS for word in re.split(r"[^a-z0-9]+", name.lower()))
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_HEX = re.compile(r"^[0-9a-f]{32,}$", re.I)
_BASE64 = re.compile(r"^[A-Za-z0-9+/]{8,}={0,2}$")


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    from collections import Counter
    from math import log2

    counts = Counter(text)
    return -sum(n / len(text) * log2(n / len(text)) for n in counts.values())


def _basic_credential(text: str) -> bool:
    """Base64 of `user:password` (an HTTP Basic credential without its scheme)."""
    import base64
    import binascii

    if not _BASE64.match(text) or len(text) % 4:
        return False
    try:
        decoded = base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, sep, password = decoded.partition(":")
    return bool(sep and user and password and decoded.isprintable())


def looks_like_secret(value: str) -> bool:
    """Whether a string value is a credential by its look: a known credential form, a URL
    carrying credentials (user info, or a query or fragment parameter named like one or holding
    one), a long hex string (a digest or key), or a long high-entropy token."""
    text = value.strip()
    if _SECRET_VALUE.search(text) or _basic_credential(text):
        return True
    if "://" in text:
        from urllib.parse import parse_qsl, urlsplit

        try:
            parts = urlsplit(text)
        except ValueError:
            return True
        if "@" in parts.netloc:
            return True
        params = parse_qsl(parts.query, keep_blank_values=True)
        params += parse_qsl(parts.fragment, keep_blank_values=True)
        return any(_secret_param(name) or looks_like_secret(v) for name, v in params)
    if _UUID.match(text) or any(c.isspace() for c in text):
        return False
    if _HEX.match(text):
        return True
    return len(text) >= 20 and _entropy(text) >= 3.7 and _class_changes(text) >= 0.4


def _class_changes(text: str) -> float:
    """The share of neighbouring characters of different classes (lower, upper, digit,
    other): about 0.6 in a random token, under 0.4 in words, CamelCase names and codes."""
    def kind(c: str) -> int:
        return 0 if c.islower() else 1 if c.isupper() else 2 if c.isdigit() else 3

    return sum(kind(a) != kind(b) for a, b in zip(text, text[1:], strict=False)) / (len(text) - 1)


def secret_fields(doc: Any, path: str = "") -> list[str]:
    """The paths of fields in `doc` that look like credentials (by name or by value): only a
    `secret_ref` names where a credential is kept."""
    found: list[str] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            where = f"{path}.{key}" if path else str(key)
            if key == "secret_ref":
                continue
            if _SECRET_KEY.search(str(key)):
                found.append(where)
            else:
                found += secret_fields(value, where)
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += secret_fields(value, f"{path}[{i}]")
    elif isinstance(doc, str) and looks_like_secret(doc):
        found.append(path or "body")
    return found


@dataclass(frozen=True)
class SystemsView:
    systems: dict[str, Any]
    etag: str

    def out(self) -> dict[str, Any]:
        return {"systems": self.systems, "version": self.etag.strip('"')}


def _systems_state(*, lock: bool = False) -> tuple[SettingsDocument | None, SystemsView]:
    row = _doc(EXTERNAL_SYSTEMS, ENV_SCOPE, lock=lock)
    systems = copy.deepcopy(row.document.get("systems", {})) if row else {}
    return row, SystemsView(systems, f'"x{row.version if row else 0}"')


def get_external_systems(ctx: Ctx) -> SystemsView:
    with read_scope(ctx):
        return _systems_state()[1]


def get_external_system(ctx: Ctx, code: str) -> tuple[dict[str, Any], str]:
    """One system and the ETag of the document it is part of.

    Raises:
        NotFound: no system with that code.
    """
    view = get_external_systems(ctx)
    if code not in view.systems:
        raise NotFound(f"no external system {code}")
    return view.systems[code], view.etag


def change_external_systems(ctx: Ctx, body: dict[str, Any], *, replace: bool,
                            if_match: str | None) -> SystemsView:
    """Replace (PUT) or merge-patch (PATCH) the env's external systems.

    Raises:
        ValidationFailed: a field that looks like a secret (`secret_refused`), or not valid.
        PreconditionFailed (412): If-Match given and not the current ETag.
    """
    if replace:
        return _change_systems(ctx, body, lambda _systems: body, if_match=if_match)
    return _change_systems(ctx, body, lambda systems: merge_patch({"systems": systems}, body),
                           if_match=if_match)


def put_external_system(ctx: Ctx, code: str, system: dict[str, Any], *,
                        if_match: str | None) -> tuple[SystemsView, bool]:
    """Add or replace one system, leaving the others as they are; returns (view, created).

    Raises:
        ValidationFailed: a secret (`secret_refused`), an invalid system or code.
        PreconditionFailed (412): If-Match given and not the current ETag.
    """
    created: list[bool] = []

    def change(systems: dict[str, Any]) -> dict[str, Any]:
        created.append(code not in systems)
        return {"systems": {**systems, code: system}}

    view = _change_systems(ctx, system, change, if_match=if_match)
    return view, created[0]


def delete_external_system(ctx: Ctx, code: str, *, if_match: str | None) -> SystemsView:
    """Remove one system, leaving the others as they are.

    Raises:
        NotFound: no system with that code. PreconditionFailed (412): a stale If-Match.
    """
    def change(systems: dict[str, Any]) -> dict[str, Any]:
        if code not in systems:
            raise NotFound(f"no external system {code}")
        return {"systems": {k: v for k, v in systems.items() if k != code}}

    return _change_systems(ctx, {}, change, if_match=if_match)


def _change_systems(ctx: Ctx, given: Any, change: Any, *, if_match: str | None) -> SystemsView:
    """The one write of the external systems: `given` (what the caller sent) checked for
    secrets, `change(current systems)` the new document, validated whole, saved, audited and
    announced."""
    refused = secret_fields(given)
    if refused:
        raise ValidationFailed(
            "secrets are never stored: keep them with the platform and send a secret_ref",
            code="secret_refused",
            errors=[{"field": f, "message": "looks like a credential"} for f in refused])
    with unit_of_work(ctx) as uow:
        row, before = _systems_state(lock=True)
        check_precondition(if_match, before.etag, required=False)
        doc = change(before.systems)
        try:
            checked = msgspec.convert(doc, ExternalSystemsIn)
        except msgspec.ValidationError as exc:
            raise ValidationFailed(f"the external systems are not valid: {exc}",
                                   errors=[{"field": "systems", "message": str(exc)}]) from exc
        stored = msgspec.to_builtins(checked)
        row = _save(ctx, uow, row, EXTERNAL_SYSTEMS, None, stored)
        after = SystemsView(copy.deepcopy(stored["systems"]), f'"x{row.version + 1}"')
        uow.record("settings", "updated", row, after.out(), before=before.out())
    return after
