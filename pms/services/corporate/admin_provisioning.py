"""A company's first ADMIN and its identity provider: a company without an identity provider
needs a provisioned ADMIN (someone must manage its users); provisioning one binds a traveler
profile as ADMIN, and an identity provider (preferences.sso_provider) makes none necessary.
"""

from __future__ import annotations

import uuid
from datetime import UTC

import msgspec

from pms.context import Ctx
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.companies import CompanyRole
from pms.errors import (
    CompanyAdminExists,
    Conflict,
    ValidationFailed,
)
from pms.events import event_type
from pms.models import (
    CompanyUser,
    Profile,
)
from pms.schemas.common import to_data
from pms.schemas.companies import (
    AdminProvisioningIn,
    AdminProvisioningOut,
    IdentityProviderIn,
)
from pms.schemas.profiles import PreferencesOut, ProfileIn, profile_out
from pms.services.corporate.companies import _set_role, _sso_provider, bind, company_access
from pms.services.profiles import profiles


def _admin_ids(company_id: uuid.UUID) -> list[uuid.UUID]:
    return [r.traveler_profile_id for r in CompanyUser.select(CompanyUser.traveler_profile_id)
            .where(CompanyUser.company_profile_id == company_id,
                   CompanyUser.role == CompanyRole.ADMIN.value)
            .order_by(CompanyUser.created_at, CompanyUser.id)]


def _provisioning_out(company: Profile, admins: list[uuid.UUID]) -> AdminProvisioningOut:
    prefs = msgspec.convert(company.preferences or {}, PreferencesOut)
    return AdminProvisioningOut(
        company_profile_id=company.id, sso_provider=prefs.sso_provider,
        requires_provisioning=not prefs.sso_provider and not admins,
        provisioned_admin_at=prefs.provisioned_admin_at, admin_profile_ids=admins)


def get_provisioning(ctx: Ctx, property_id: uuid.UUID,
                     company_id: uuid.UUID) -> AdminProvisioningOut:
    with read_scope(ctx):
        access = company_access(ctx, property_id, company_id)
        return _provisioning_out(access.company, _admin_ids(company_id))


def set_identity_provider(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                          body: IdentityProviderIn) -> tuple[AdminProvisioningOut, bool]:
    """Set or clear the company's `preferences.sso_provider` (staff), which decides
    `requires_provisioning` and whether its last ADMIN may go. Audited, with its event
    `hotel:pms:company:identity_provider_set`; the same value again changes nothing.
    Returns (the provisioning state, changed)."""
    with unit_of_work(ctx) as uow:
        access = company_access(ctx, property_id, company_id, lock=True)
        company = access.company
        if _sso_provider(company) == body.sso_provider:
            return _provisioning_out(company, _admin_ids(company_id)), False
        before = to_data(profile_out(company))
        prefs = {**(company.preferences or {}), "sso_provider": body.sso_provider}
        if body.sso_provider is None:
            prefs.pop("sso_provider")
        company.preferences = prefs
        company.save()
        out = _provisioning_out(company, _admin_ids(company_id))
        data = {"company_profile_id": str(company_id), "sso_provider": body.sso_provider,
                "requires_provisioning": out.requires_provisioning}
        uow.audit("company.identity_provider_set", company, before=before, after=data)
        uow.emit(event_type("company", "identity_provider_set"), company, data,
                 property_id=property_id)
        return out, True


def provision_admin(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                    body: AdminProvisioningIn) -> tuple[AdminProvisioningOut, bool]:
    """Resolve or create the traveler by email, bind it as ADMIN, stamp
    `preferences.provisioned_admin_at` and emit `hotel:pms:company:admin_provisioned`, in one
    transaction. The same admin again changes nothing and emits nothing (changed False);
    another one while an ADMIN is bound is refused (409 company_admin_exists).

    Returns: (the provisioning state, changed).
    """
    with unit_of_work(ctx) as uow:
        return provision_in(uow, ctx, property_id, company_id, body)


def provision_in(uow: UnitOfWork, ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                 body: AdminProvisioningIn) -> tuple[AdminProvisioningOut, bool]:
    """`provision_admin` inside the caller's unit of work (the concurrency tests hold it)."""
    access = company_access(ctx, property_id, company_id, lock=True)
    company = access.company
    email = body.email.strip().lower()
    traveler = Profile.get_or_none(Profile.email_normalized == email)
    if traveler is not None and traveler.kind != "GUEST":
        raise ValidationFailed("this email belongs to a profile that is not a traveler",
                               errors=[{"field": "email", "message": "not a GUEST profile"}])
    admins = _admin_ids(company_id)
    if admins:
        if traveler is not None and traveler.id in admins:
            return _provisioning_out(company, admins), False
        raise CompanyAdminExists("this company already has an ADMIN; add users through "
                                 "its users instead", admin_count=len(admins))
    created = traveler is None
    if traveler is None:  # the profile service's create, in this unit of work
        traveler = profiles.create_in(uow, property_id, msgspec.convert(
            {"kind": "GUEST", "first_name": body.first_name, "last_name": body.last_name,
             "email": body.email}, ProfileIn))
        if traveler is None:  # a concurrent request took the email first: fold onto it
            created = False
            traveler = Profile.get_or_none(Profile.email_normalized == email)
            if traveler is None or traveler.kind != "GUEST":
                raise Conflict("a concurrent change took this email; retry",
                               code="profile_conflict")
    existing = CompanyUser.get_or_none(CompanyUser.company_profile_id == company_id,
                                       CompanyUser.traveler_profile_id == traveler.id)
    if existing is not None:  # bound with another role: promoted to ADMIN
        before = _set_role(uow, existing, CompanyRole.ADMIN, property_id)
        binding = existing
    else:
        before = None
        binding = bind(uow, company, traveler.id, CompanyRole.ADMIN, property_id)
    before_company = to_data(profile_out(company))
    stamp = ctx.now.astimezone(UTC).isoformat().replace("+00:00", "Z")
    company.preferences = {**(company.preferences or {}), "provisioned_admin_at": stamp}
    company.save()
    data = {"company_profile_id": str(company_id), "traveler_profile_id": str(traveler.id),
            "company_user_id": str(binding.id), "traveler_created": created,
            "previous_binding": before, "provisioned_admin_at": stamp}
    uow.audit("company.admin_provisioned", company, before=before_company, after=data)
    uow.emit(event_type("company", "admin_provisioned"), company, data, property_id=property_id)
    return _provisioning_out(company, [*admins, traveler.id]), True

