"""Guest and company profiles."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec

from pms.schemas.catalog import Address
from pms.schemas.common import Email, Name, Out, Phone, Strict

PersonName = Annotated[str, msgspec.Meta(min_length=1, max_length=120)]
ExternalRef = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
LoyaltyNumber = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9-]+$")]


class PreferencesIn(Strict):
    sso_provider: Annotated[str, msgspec.Meta(max_length=120)] | None = None
    negotiated_rate_plan_ids: Annotated[list[uuid.UUID], msgspec.Meta(max_length=100)] = []
    # a company's VAT id, with its country prefix, checked by its check digits (422
    # invalid_vat_id) and kept compact; the buyer's VAT id on its invoices and e-invoices
    vat_id: Annotated[str, msgspec.Meta(min_length=1, max_length=32)] | None = None


class ProfileIn(Strict):
    kind: Literal["GUEST", "COMPANY"] = "GUEST"
    first_name: PersonName | None = None
    last_name: PersonName | None = None
    company_name: Name | None = None
    email: Email | None = None
    phone: Phone | None = None
    external_ref: ExternalRef | None = None
    language: Annotated[str, msgspec.Meta(max_length=16)] | None = None
    address: Address | None = None
    preferences: PreferencesIn = msgspec.field(default_factory=PreferencesIn)


class LoyaltyNumberIn(Strict):
    loyalty_number: LoyaltyNumber


class PreferencesOut(Out):
    sso_provider: str | None = None
    negotiated_rate_plan_ids: list[uuid.UUID] = []
    provisioned_admin_at: datetime | None = None
    vat_id: str | None = None


class ProfileOut(Out):
    profile_id: uuid.UUID
    id: uuid.UUID
    kind: Literal["GUEST", "COMPANY"]
    first_name: str | None
    last_name: str | None
    company_name: str | None
    email: str | None
    phone: str | None
    external_ref: str | None
    language: str | None
    address: Address | None
    preferences: PreferencesOut
    loyalty_number: str | None
    # the standing consent: purposes whose newest record grants them (GET .../consents/current)
    consents: list[str]
    created_at: datetime
    updated_at: datetime


def profile_out(p: object) -> ProfileOut:
    return ProfileOut(
        profile_id=p.id, id=p.id, kind=p.kind, first_name=p.first_name, last_name=p.last_name,
        company_name=p.company_name, email=p.email, phone=p.phone, external_ref=p.external_ref,
        language=p.language,
        address=msgspec.convert(p.address, Address) if p.address else None,
        preferences=msgspec.convert(p.preferences or {}, PreferencesOut),
        loyalty_number=p.loyalty_number, consents=sorted(p.consents or ()),
        created_at=p.created_at, updated_at=p.updated_at,
    )
