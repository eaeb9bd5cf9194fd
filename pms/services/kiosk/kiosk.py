"""Kiosk configuration: one row per property (unique in the database).

GET answers the stored configuration, or the defaults while the property has none (no modes,
no add-ons, not locked down, max_keys_per_stay 2) with the ETag `"0"`. PUT replaces the whole
configuration, optionally guarded by `If-Match` (the ETag is the row's version: a stale one
answers 412 precondition_failed, `"0"` means "only if none exists yet"), and emits
`hotel:pms:kiosk_config:updated` (SPEC Events 3). The first PUTs of a property may race: the
row is inserted with ON CONFLICT DO NOTHING and then locked, so both land on one row.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.errors import PreconditionFailed, ValidationFailed
from pms.models import KioskConfig, Package
from pms.models.kiosk import DEFAULT_MAX_KEYS_PER_STAY
from pms.schemas import kiosk as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property


@dataclass(frozen=True)
class Versioned:
    config: s.KioskConfigOut
    version: int

    @property
    def etag(self) -> str:
        return f'"{self.version}"'


def _out(property_id: uuid.UUID, row: KioskConfig | None) -> s.KioskConfigOut:
    if row is None:
        return s.KioskConfigOut(property_id=property_id, enabled_modes=[],
                                add_on_package_codes=[], lockdown=False,
                                max_keys_per_stay=DEFAULT_MAX_KEYS_PER_STAY, configured=False,
                                updated_at=None)
    return s.KioskConfigOut(property_id=row.property_id, enabled_modes=list(row.enabled_modes),
                            add_on_package_codes=list(row.add_on_package_codes),
                            lockdown=row.lockdown, max_keys_per_stay=row.max_keys_per_stay,
                            configured=True, updated_at=row.updated_at)


def get_config(ctx: Ctx, property_id: uuid.UUID) -> Versioned:
    with read_scope(ctx):
        load_property(property_id)
        row = KioskConfig.select().where(KioskConfig.property == property_id).first()
        return Versioned(_out(property_id, row), row.version if row is not None else 0)


def _check(property_id: uuid.UUID, body: s.KioskConfigIn) -> None:
    errors = []
    if len(set(body.enabled_modes)) != len(body.enabled_modes):
        errors.append({"field": "enabled_modes", "message": "a mode is listed twice"})
    codes = body.add_on_package_codes
    if len(set(codes)) != len(codes):
        errors.append({"field": "add_on_package_codes", "message": "a code is listed twice"})
    if codes:
        known = {p.code for p in Package.select(Package.code).where(
            (Package.property == property_id) & Package.code.in_(codes))}
        unknown = [c for c in codes if c not in known]
        if unknown:
            errors.append({"field": "add_on_package_codes",
                           "message": f"not a package of this property: {', '.join(unknown)}"})
    if errors:
        raise ValidationFailed(errors[0]["message"], errors=errors)


def _matches(if_match: str | None, version: int) -> bool:
    if if_match is None or if_match.strip() == "*":
        return True
    tags = [t.strip().removeprefix("W/").strip('"') for t in if_match.split(",")]
    return str(version) in tags


def put_config(ctx: Ctx, property_id: uuid.UUID, body: s.KioskConfigIn, *,
               if_match: str | None = None) -> Versioned:
    """Replace the property's kiosk configuration.

    Raises:
        NotFound. ValidationFailed (422): a duplicated mode or code, an add-on code that is
            not a package of the property. PreconditionFailed (412): If-Match names another
            version.
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        load_property(property_id)
        _check(property_id, body)
        query = KioskConfig.select().where(KioskConfig.property == property_id)
        row = for_update(query).first()
        existed = row is not None
        if not _matches(if_match, row.version if existed else 0):
            raise PreconditionFailed("the kiosk configuration changed since it was read "
                                     "(If-Match does not name its current ETag)",
                                     current_etag=f'"{row.version if existed else 0}"')
        before = to_data(_out(property_id, row)) if existed else None
        if not existed:
            KioskConfig.insert(property=property_id, enabled_modes=[], add_on_package_codes=[],
                               lockdown=False, max_keys_per_stay=DEFAULT_MAX_KEYS_PER_STAY,
                               ).on_conflict_ignore().execute()
            row = for_update(query).get()
            if row.version != 0 and not _matches(if_match, row.version):
                raise PreconditionFailed("the kiosk configuration was created meanwhile",
                                         current_etag=f'"{row.version}"')
        row.enabled_modes = list(body.enabled_modes)
        row.add_on_package_codes = list(body.add_on_package_codes)
        row.lockdown = body.lockdown
        row.max_keys_per_stay = body.max_keys_per_stay
        row.updated_at = ctx.now
        row.save()
        uow.record("kiosk_config", "updated", row, to_data(_out(property_id, row)),
                   before=before, property_id=property_id)
    return Versioned(_out(property_id, row), row.version)
