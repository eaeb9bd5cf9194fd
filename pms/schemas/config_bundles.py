"""Shapes of a property's configuration bundle ("Beyond the anchors").

A bundle's sections are lists of the SAME request schemas the domain routes validate (a room
type is a `RoomTypeIn`, a rate plan a `RatePlanIn`, the kiosk configuration a `KioskConfigIn`,
the module settings a `ModulesPatch`): nothing here re-states their fields or limits. Rows are
named by their codes, never by ids (a rate plan's packages and the kiosk's add-ons are codes
already), so a bundle applies to any property.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec

from pms.schemas.catalog import ItemIn, PackageIn, RatePlanIn, RoomTypeIn
from pms.schemas.common import Out, Strict
from pms.schemas.kiosk import KioskConfigIn
from pms.schemas.settings import ListName, LovCode, ModulesPatch

BUNDLE_VERSION = 1
MAX_ROWS = 200  # rows per section
Hash = Annotated[str, msgspec.Meta(pattern=r"^sha256:[0-9a-f]{64}$", max_length=71)]
Action = Literal["create", "update", "unchanged", "kept", "differs"]


class BundleSource(Strict):
    """Where the bundle was exported from (informational: never read on apply)."""

    property_code: Annotated[str, msgspec.Meta(max_length=64)] | None = None
    exported_at: datetime | None = None


class ConfigBundle(Strict):
    """One property's configuration. `content_hash` is the sha256 of the canonical JSON of
    every field but itself and `source`; a bundle whose hash does not match is refused."""

    # an integer bounded to the versions this service reads (a Literal would be rendered as an
    # extensible enum of strings in responses)
    bundle_version: Annotated[int, msgspec.Meta(ge=BUNDLE_VERSION, le=BUNDLE_VERSION)]
    content_hash: Hash | None = None
    source: BundleSource | None = None
    packages: Annotated[list[PackageIn], msgspec.Meta(max_length=MAX_ROWS)] = []
    items: Annotated[list[ItemIn], msgspec.Meta(max_length=MAX_ROWS)] = []
    room_types: Annotated[list[RoomTypeIn], msgspec.Meta(max_length=MAX_ROWS)] = []
    rate_plans: Annotated[list[RatePlanIn], msgspec.Meta(max_length=MAX_ROWS)] = []
    kiosk_config: KioskConfigIn | None = None
    # the property's own module settings (its overrides of the env's), a merge patch
    settings: ModulesPatch | None = None
    # the env's stored lists of values, by name: their codes (env-wide; compared, never written)
    lovs: Annotated[dict[ListName, Annotated[list[LovCode],
                                             msgspec.Meta(max_length=MAX_ROWS)]],
                    msgspec.Meta(max_length=50)] | None = None


class BundleQuery(msgspec.Struct, kw_only=True):
    dry_run: bool = False


class BundleChange(Out):
    section: str
    code: str
    action: Action
    changed: list[str] = []
    detail: str | None = None


class BundleApplyOut(Out):
    property_id: uuid.UUID
    dry_run: bool
    bundle_version: int
    content_hash: str
    counts: dict[str, int]
    changes: list[BundleChange]
