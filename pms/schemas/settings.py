"""Shapes of lists of values, settings and property images.

Module settings: one msgspec schema per module (unknown fields refused, types checked); the
defaults of a new env are the schemas' defaults (`DEFAULT_MODULES`), so there is one place to
add a module or a switch.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

import msgspec

from pms.schemas.common import Cursor, Limit, Out, Strict

# -- lists of values ------------------------------------------------------------------------------

ListName = Annotated[str, msgspec.Meta(min_length=1, max_length=64,
                                       pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")]

# a stored list's code as the env keeps it (LovEntry.code): the seeded folio categories are
# `F&B` and `mini bar`, so a code is any text without surrounding blanks, not a catalog Code
LovCode = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^\S(.*\S)?$")]


class LovEntryIn(Strict):
    """One entry of an env's own list, as `PUT /v1/lov/{list}/{code}` sets it (the code is the
    path's)."""

    name: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    description: Annotated[str, msgspec.Meta(max_length=2000)] | None = None
    active: bool = True
    # where the entry sorts in its list; absent: a new entry goes last, a replaced one stays
    sort_order: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)] | None = None


class LovItemOut(Out, omit_defaults=True):
    code: str
    name: str
    description: str | None
    active: bool
    # the row's id for a property's catalog lists (room-types, rate-plans, packages,
    # transaction-codes): what a form's `*_id` field takes; absent from the other lists
    id: uuid.UUID | None = None


class LovEntryQuery(msgspec.Struct, kw_only=True):
    parent: Annotated[str, msgspec.Meta(min_length=1, max_length=64, description=(
        "The parent of a dependent list: a property id for room-types, rate-plans, "
        "transaction-codes and packages; a state for the {machine}-next-statuses lists"))
    ] | None = None


class LovQuery(LovEntryQuery, kw_only=True):
    limit: Limit = 50
    cursor: Cursor | None = None
    include_inactive: bool = False
    q: Annotated[str, msgspec.Meta(min_length=1, max_length=64, description=(
        "Search: the values whose code or name contains this (case-insensitive)"))
    ] | None = None


# -- module settings ------------------------------------------------------------------------------

class _Module(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of a module's settings: every field has a default."""


class HousekeepingModule(_Module):
    enabled: bool = True
    stayover_tasks: bool = True


class NotificationsModule(_Module):
    booking_confirmation: bool = True
    pre_arrival: bool = True
    checkout_receipt: bool = True


class KioskModule(_Module):
    enabled: bool = False


class DigitalKeysModule(_Module):
    enabled: bool = True


class NightAuditModule(_Module):
    enabled: bool = True


class BlocksModule(_Module):
    # Whether a TENTATIVE block takes rooms out of inventory (read by the groups issue through
    # pms.services.catalog.settings.effective); by default only a definite block does.
    tentative_deducts_inventory: bool = False


RetentionDays = Annotated[int, msgspec.Meta(ge=1, le=36500, description=(
    "Days; null: the env's default (PMS_PRIVACY_*_RETENTION_DAYS)"))]


class PrivacyModule(_Module):
    # Retention per property (GDPR Art. 5(1)(e)), read by pms.services.privacy.retention; a
    # profile known to several properties is kept for the longest of their rules.
    profile_retention_days: RetentionDays | None = None  # no stay for this long: erased
    registration_retention_days: RetentionDays | None = None  # after departure: cleared
    message_retention_days: RetentionDays | None = None  # after departure: bodies removed


class InvoicingModule(_Module):
    # The seller's identity on the property's invoices and e-invoices (frozen into each document
    # at issue): the legal name (null: the property's name), the VAT id (checked by its check
    # digits, pms.domain.vat_ids), the national tax number, and the days a company has to pay.
    legal_name: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    vat_id: Annotated[str, msgspec.Meta(min_length=1, max_length=32)] | None = None
    tax_number: Annotated[str, msgspec.Meta(min_length=1, max_length=32)] | None = None
    payment_terms_days: Annotated[int, msgspec.Meta(ge=0, le=365)] | None = None
    # No departure without a document covering every charge: check-out issues the invoice of
    # every folio it closes with charges (pms.services.cashiering.departure_documents).
    invoice_at_check_out: bool = False


MODULE_SCHEMAS: dict[str, type[_Module]] = {
    "housekeeping": HousekeepingModule,
    "notifications": NotificationsModule,
    "kiosk": KioskModule,
    "digital_keys": DigitalKeysModule,
    "night_audit": NightAuditModule,
    "blocks": BlocksModule,
    "privacy": PrivacyModule,
    "invoicing": InvoicingModule,
}
DEFAULT_MODULES: dict[str, dict[str, Any]] = {
    name: msgspec.to_builtins(schema()) for name, schema in MODULE_SCHEMAS.items()}


class ModulesDocument(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Every module's settings (the response's `modules`; also the OpenAPI of the patch)."""

    housekeeping: HousekeepingModule = msgspec.field(default_factory=HousekeepingModule)
    notifications: NotificationsModule = msgspec.field(default_factory=NotificationsModule)
    kiosk: KioskModule = msgspec.field(default_factory=KioskModule)
    digital_keys: DigitalKeysModule = msgspec.field(default_factory=DigitalKeysModule)
    night_audit: NightAuditModule = msgspec.field(default_factory=NightAuditModule)
    blocks: BlocksModule = msgspec.field(default_factory=BlocksModule)
    privacy: PrivacyModule = msgspec.field(default_factory=PrivacyModule)
    invoicing: InvoicingModule = msgspec.field(default_factory=InvoicingModule)


Key = Annotated[str, msgspec.Meta(max_length=64)]
# A merge patch (RFC 7396) of module settings: {module: {field: value} | null}
ModulesPatch = Annotated[dict[Key, Annotated[dict[Key, Any], msgspec.Meta(max_length=50)] | None],
                         msgspec.Meta(max_length=32)]
# A merge patch of the external systems ({"systems": {code: {...} | null}}), checked once merged
ExternalSystemsPatch = Annotated[dict[Key, Any], msgspec.Meta(max_length=8)]


class ModulesOut(Out, kw_only=True):
    property_id: uuid.UUID | None = None
    modules: ModulesDocument
    overrides: dict[str, dict[str, Any]]
    version: str


class SettingsQuery(msgspec.Struct, kw_only=True):
    property_id: uuid.UUID | None = None


# -- external systems -----------------------------------------------------------------------------

SystemCode = Annotated[str, msgspec.Meta(min_length=1, max_length=64,
                                         pattern=r"^[a-z0-9]+([_-][a-z0-9]+)*$")]
SecretRef = Annotated[str, msgspec.Meta(
    min_length=3, max_length=300, pattern=r"^[a-z][a-z0-9+.-]*://[^\s]+$",
    description="Where the platform keeps the credential (e.g. vault://pms/opera), never the "
                "credential itself (SPEC rule 3)")]
Url = Annotated[str, msgspec.Meta(max_length=2000, pattern=r"^https?://[^\s@]+$")]


class ExternalSystem(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    kind: Annotated[str, msgspec.Meta(min_length=1, max_length=64,
                                      pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
    name: Annotated[str, msgspec.Meta(max_length=200)] | None = None
    endpoint_url: Url | None = None
    identifiers: Annotated[dict[Annotated[str, msgspec.Meta(max_length=64)],
                                Annotated[str, msgspec.Meta(max_length=500)]],
                           msgspec.Meta(max_length=50)] = msgspec.field(default_factory=dict)
    secret_ref: SecretRef | None = None
    active: bool = True


class ExternalSystemsIn(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    systems: Annotated[dict[SystemCode, ExternalSystem], msgspec.Meta(max_length=100)]


class ExternalSystemsOut(Out):
    systems: dict[str, ExternalSystem]
    version: str


# -- property images ------------------------------------------------------------------------------

class ImageUpload(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """multipart/form-data fields of an image upload."""

    file: Annotated[bytes, msgspec.Meta(description="JPEG, PNG or WebP, at most 10 MiB")]
    caption: Annotated[str, msgspec.Meta(max_length=500)] = ""
    primary: bool = False


class ImageOut(Out, kw_only=True):
    id: uuid.UUID
    property_id: uuid.UUID
    content_type: str
    size_bytes: int
    sha256: str
    object_key: str
    caption: str | None = None
    primary: bool = False
    created_at: datetime


def image_out(row: Any) -> ImageOut:
    return ImageOut(id=row.id, property_id=row.property_id, content_type=row.content_type,
                    size_bytes=row.size_bytes, sha256=row.sha256, object_key=row.object_key,
                    caption=row.caption, primary=bool(row.is_primary), created_at=row.created_at)
