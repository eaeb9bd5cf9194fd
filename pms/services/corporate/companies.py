"""Corporate accounts: who may act on a company, company users, admin provisioning.

A company is a COMPANY profile of the env; every row here is guarded by its id (the path's
`{profile_id}`). `company_access` decides who the caller is for that company:
- staff (no holder): their scopes decide (the route's `@endpoint`); role None;
- a traveler session (client_kind `user`, holder_id = its profile): the role of its binding to
  this company; no binding -> 404, as for a company that does not exist (no probing);
- a token whose holder_id is the company's own profile: ADMIN;
- any other holder session (guest, kiosk, ...): 404.
What a role may do is the table of `pms.domain.companies` (README "Corporate accounts").

Every change locks the company's profile row first (FOR UPDATE on PostgreSQL; SQLite's write
transaction is exclusive), so "the last ADMIN" and "two provisionings at once" are decided one
at a time per company.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, timedelta
from decimal import Decimal

import msgspec

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.pagination import Page, paginate
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.companies import CompanyAction, CompanyRole, may
from pms.domain.currencies import is_iso_4217
from pms.domain.money import exact
from pms.errors import (
    AlreadyExists,
    CompanyAdminExists,
    CompanyRoleForbidden,
    Conflict,
    Forbidden,
    LastCompanyAdmin,
    NotFound,
    ReceivableAccountInUse,
    ValidationFailed,
)
from pms.events import event_type
from pms.models import (
    CompanyBilling,
    CompanyCreditOverride,
    CompanyInvitation,
    CompanyPaymentMethod,
    CompanyReceivableAccount,
    CompanyUser,
    Profile,
    Property,
    Reservation,
)
from pms.schemas.common import to_data
from pms.schemas.companies import (
    AdminProvisioningIn,
    AdminProvisioningOut,
    CompanyInvitationOut,
    CompanyUserIn,
    CompanyUserOut,
    CompanyUserRoleIn,
    IdentityProviderIn,
    ReceivableAccountIn,
    ReceivableAccountOut,
    company_user_out,
    invitation_out,
    receivable_account_out,
)
from pms.schemas.profiles import PreferencesOut, ProfileIn, profile_out
from pms.services.catalog.catalog import load_property
from pms.services.profiles import profiles

NO_COMPANY = "no such company"
# how long a company ADMIN's invitation waits for the traveler's answer
INVITATION_TTL = timedelta(days=14)
INVITATION_PENDING = "PENDING"


@dataclass(frozen=True)
class Access:
    """The caller, for one company: staff (role None) or a company role."""

    company: Profile
    role: CompanyRole | None

    @property
    def staff(self) -> bool:
        return self.role is None

    def require(self, action: CompanyAction) -> None:
        if self.role is not None and not may(self.role, action):
            raise CompanyRoleForbidden(f"a company {self.role.value} may not {action.value}")

    def allows(self, action: CompanyAction) -> bool:
        return self.role is None or may(self.role, action)


def load_company(company_id: uuid.UUID, *, lock: bool = False) -> Profile:
    """The env's COMPANY profile or NotFound (call inside a scope / unit of work)."""
    query = Profile.select().where(Profile.id == company_id, Profile.kind == "COMPANY")
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound(NO_COMPANY)
    return row


def company_access(ctx: Ctx, property_id: uuid.UUID | None, company_id: uuid.UUID, *,
                   lock: bool = False) -> Access:
    """The property, the company and the caller's role for it (module docstring); NotFound
    for a holder that is not bound to the company. `property_id` None: an env-level route
    (`/v1/companies/{id}/...`). Call inside a scope / unit of work."""
    if property_id is not None:
        load_property(property_id)
    holder = ctx.holder_id
    if holder is not None and ctx.client_kind != "user":
        raise NotFound(NO_COMPANY)
    if holder is None or holder == company_id:
        return Access(load_company(company_id, lock=lock), None if holder is None
                      else CompanyRole.ADMIN)
    binding = CompanyUser.get_or_none(CompanyUser.company_profile_id == company_id,
                                      CompanyUser.traveler_profile_id == holder)
    if binding is None:
        raise NotFound(NO_COMPANY)
    return Access(load_company(company_id, lock=lock), CompanyRole(binding.role))


# -- company users --------------------------------------------------------------------------

def list_users(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID, *, limit: int = 50,
               cursor: str | None = None) -> Page[CompanyUserOut]:
    """Every binding of the company, one page (keyset on created_at, id); a TRAVELER sees
    only its own."""
    with read_scope(ctx):
        access = company_access(ctx, property_id, company_id)
        query = CompanyUser.select().where(CompanyUser.company_profile_id == company_id)
        if not access.allows(CompanyAction.LIST_USERS):
            access.require(CompanyAction.LIST_OWN_USER)
            query = query.where(CompanyUser.traveler_profile_id == ctx.holder_id)
        page = paginate(query, CompanyUser, limit=limit, cursor=cursor)
    return Page(items=[company_user_out(r) for r in page.items], next_cursor=page.next_cursor)


def _check_traveler(traveler_id: uuid.UUID, company_id: uuid.UUID) -> Profile:
    row = Profile.get_or_none(Profile.id == traveler_id)
    if row is None or row.kind != "GUEST" or row.id == company_id:
        raise ValidationFailed(
            "traveler_profile_id must name a GUEST profile of this environment",
            errors=[{"field": "traveler_profile_id", "message": "unknown traveler profile"}])
    return row


def bind(uow: UnitOfWork, company: Profile, traveler_id: uuid.UUID, role: CompanyRole,
          property_id: uuid.UUID) -> CompanyUser:
    """The binding, audited, with its `hotel:pms:company_user:added` event (every path that
    binds a traveler: add_user, admin provisioning)."""
    row = CompanyUser.build(company_profile_id=company.id, traveler_profile_id=traveler_id,
                            role=role.value, version=1)
    row.save(force_insert=True)
    uow.record("company_user", "added", row, to_data(company_user_out(row)),
               property_id=property_id)
    return row


def _set_role(uow: UnitOfWork, row: CompanyUser, role: CompanyRole,
              property_id: uuid.UUID) -> dict:
    """A binding's role changed, audited, with its `hotel:pms:company_user:role_changed`
    event (the row's version bumped). Returns the binding as it was."""
    before = to_data(company_user_out(row))
    row.role = role.value
    row.save()
    uow.record("company_user", "role_changed", row, to_data(company_user_out(row)),
               before=before, property_id=property_id)
    return before


def add_user(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
             body: CompanyUserIn) -> CompanyUserOut | CompanyInvitationOut:
    """Bind a traveler profile to the company with a role: staff bind at once; a company
    ADMIN only invites (the traveler's consent makes the binding, pms.services.corporate.
    invitations), so a company cannot claim any guest of the env as its own.

    Raises: NotFound (property, company, caller not bound); CompanyRoleForbidden;
        ValidationFailed (no such traveler); AlreadyExists (already bound to this company, or
        already invited and the invitation still open).
    """
    with unit_of_work(ctx) as uow:
        access = company_access(ctx, property_id, company_id, lock=True)
        access.require(CompanyAction.ADD_USER)
        _check_traveler(body.traveler_profile_id, company_id)
        refuse_if_bound(company_id, body.traveler_profile_id)
        if not access.staff:
            return invitation_out(_invite(uow, ctx, access.company, body, property_id), ctx.now)
        row = bind(uow, access.company, body.traveler_profile_id, CompanyRole(body.role),
                    property_id)
    return company_user_out(row)


def refuse_if_bound(company_id: uuid.UUID, traveler_id: uuid.UUID) -> None:
    if CompanyUser.get_or_none(CompanyUser.company_profile_id == company_id,
                               CompanyUser.traveler_profile_id == traveler_id):
        raise AlreadyExists("this traveler is already a user of this company")


def _invite(uow: UnitOfWork, ctx: Ctx, company: Profile, body: CompanyUserIn,
            property_id: uuid.UUID) -> CompanyInvitation:
    """A PENDING invitation for `INVITATION_TTL`, with `company_invitation:created`. One open
    invitation per company and traveler (decided under the company's lock)."""
    open_one = CompanyInvitation.select().where(
        CompanyInvitation.company_profile_id == company.id,
        CompanyInvitation.traveler_profile_id == body.traveler_profile_id,
        CompanyInvitation.status == INVITATION_PENDING,
        CompanyInvitation.expires_at > ctx.now).exists()
    if open_one:
        raise AlreadyExists("this traveler has an open invitation from this company")
    row = CompanyInvitation.build(
        company_profile_id=company.id, traveler_profile_id=body.traveler_profile_id,
        property_id=property_id, role=CompanyRole(body.role).value, status=INVITATION_PENDING,
        expires_at=ctx.now + INVITATION_TTL, invited_by=f"{ctx.client_kind}:{ctx.sub}",
        version=1)
    row.save(force_insert=True)
    uow.record("company_invitation", "created", row, to_data(invitation_out(row, ctx.now)),
               property_id=property_id)
    return row


def remove_user(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                binding_id: uuid.UUID) -> None:
    """Unbind a company user (ADMIN only, or staff). The last bound ADMIN stays while the
    company has no `preferences.sso_provider` (409 last_company_admin)."""
    with unit_of_work(ctx) as uow:
        access = company_access(ctx, property_id, company_id, lock=True)
        row = CompanyUser.get_or_none(CompanyUser.id == binding_id,
                                      CompanyUser.company_profile_id == company_id)
        if row is None:
            raise NotFound("no such company user")
        access.require(CompanyAction.REMOVE_USER)
        _keep_last_admin(access.company, row, "the last ADMIN of a company without an "
                         "identity provider cannot be removed")
        data = to_data(company_user_out(row))
        uow.audit("company_user.removed", row, before=data)
        uow.emit(event_type("company_user", "removed"), row, data, property_id=property_id)
        CompanyUser.delete().where(CompanyUser.id == row.id).execute()


def change_role(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                binding_id: uuid.UUID, body: CompanyUserRoleIn) -> tuple[CompanyUserOut, bool]:
    """Change a company user's role (ADMIN only, or staff), audited, with its event
    `hotel:pms:company_user:role_changed` (the binding's version bumped). The same role again
    changes nothing. The last bound ADMIN of a company without `preferences.sso_provider` is
    not demoted (409 last_company_admin). Returns (the binding, changed)."""
    with unit_of_work(ctx) as uow:
        access = company_access(ctx, property_id, company_id, lock=True)
        row = CompanyUser.get_or_none(CompanyUser.id == binding_id,
                                      CompanyUser.company_profile_id == company_id)
        if row is None:
            raise NotFound("no such company user")
        access.require(CompanyAction.ADD_USER)
        role = CompanyRole(body.role)
        if row.role == role.value:
            return company_user_out(row), False
        _keep_last_admin(access.company, row, "the last ADMIN of a company without an "
                         "identity provider keeps the ADMIN role")
        _set_role(uow, row, role, property_id)
        return company_user_out(row), True


def _keep_last_admin(company: Profile, row: CompanyUser, detail: str) -> None:
    """Refuse to remove or demote `row` when it is the last ADMIN of a company without an
    identity provider (409 last_company_admin): someone must be able to manage its users."""
    if row.role != CompanyRole.ADMIN or _sso_provider(company):
        return
    admins = CompanyUser.select().where(
        CompanyUser.company_profile_id == row.company_profile_id,
        CompanyUser.role == CompanyRole.ADMIN.value).count()
    if admins <= 1:
        raise LastCompanyAdmin(detail)


def _sso_provider(company: Profile) -> str | None:
    return (company.preferences or {}).get("sso_provider")


# -- admin provisioning ---------------------------------------------------------------------

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


# -- acting for a company in searches and bookings (the rate fence, pms.services.rates.rate_fence) ----



def may_act_for_company(ctx: Ctx, company_id: uuid.UUID, *, booking: bool) -> bool:
    """Whether the caller may search (booking False) or book (True) for the company; call
    inside a scope. Staff and channels (no holder) always; the company's own profile token; a
    traveler session bound to it (any role searches; ADMIN, BOOKER and TRAVELER book)."""
    holder = ctx.holder_id
    if holder is None or holder == company_id:
        return True
    if ctx.client_kind != "user":
        return False
    binding = CompanyUser.get_or_none(CompanyUser.company_profile_id == company_id,
                                      CompanyUser.traveler_profile_id == holder)
    action = CompanyAction.BOOK_OWN if booking else CompanyAction.SEARCH_CORPORATE
    return binding is not None and may(binding.role, action)


def may_book_for_traveler(ctx: Ctx, company_id: uuid.UUID, traveler_id: uuid.UUID) -> bool:
    """Whether a holder session may book a stay for ANOTHER traveler of the company: the
    company's own token or a bound ADMIN or BOOKER, for a traveler bound to the company (call
    inside a scope). A TRAVELER books only for itself (the holder rule)."""
    holder = ctx.holder_id
    if holder is None:
        return True
    if holder != company_id:
        if ctx.client_kind != "user":
            return False
        binding = CompanyUser.get_or_none(CompanyUser.company_profile_id == company_id,
                                          CompanyUser.traveler_profile_id == holder)
        if binding is None or not may(binding.role, CompanyAction.BOOK_FOR_TRAVELER):
            return False
    return CompanyUser.get_or_none(CompanyUser.company_profile_id == company_id,
                                   CompanyUser.traveler_profile_id == traveler_id) is not None


# -- receivable account (the credit limit and its currency) ---------------------------------
# The receivable is the company's, not a property's: one credit limit for the chain, checked on
# every property's bookings. So it is env-level: `/v1/companies/{id}/receivable` with its own
# scope (`company_receivables`), decided by the env's policies for no property. The older
# property path (`/v1/properties/{p}/companies/{id}/receivable-account`) still writes it, and
# then needs the same env-level permission: a user whose policies limit it to one property
# cannot change the chain's credit limit from that property's path.

RECEIVABLE_SCOPE = "hotel:pms:company_receivables"


def authorize_receivable(ctx: Ctx, company_id: uuid.UUID, *, write: bool) -> None:
    """The env-level permission on the company's receivable: the token carries
    `hotel:pms:company_receivables:{read|write}` (403 missing_scope) and the env's policies
    allow it and `hotel:pms:companies:{read|write}` for the company at no property in
    particular (403 policy_denied: a rule limited to some properties does not hold)."""
    # (imported here: the policies module reads company roles through this one)
    from pms.services.admin.policy_decision import authorize

    mode = "write" if write else "read"
    scope = f"{RECEIVABLE_SCOPE}:{mode}"
    if scope not in ctx.scopes:
        raise Forbidden(f"the company's receivable is env-level: it needs the scope {scope}",
                        code="missing_scope")
    authorize(ctx, (f"hotel:pms:companies:{mode}", scope), company_id=company_id)


def set_receivable_account(ctx: Ctx, property_id: uuid.UUID | None, company_id: uuid.UUID,
                           body: ReceivableAccountIn) -> tuple[ReceivableAccountOut, bool]:
    """Create or change the company's receivable account (staff, with the env-level
    permission: `authorize_receivable`): its credit limit, currency and payment terms
    (`payment_terms_days`, omitted: kept, 30 for a new account; an invoice issued later is due
    that many days after its issue, an issued one keeps its due date). The same values again
    change nothing and emit nothing; a change is the account's `updated` event.
    `property_id`: the path's property (None on the env-level route). Returns
    (account, created)."""
    authorize_receivable(ctx, company_id, write=True)
    if not is_iso_4217(body.currency):
        raise ValidationFailed(f"{body.currency} is not an ISO 4217 currency",
                               code="unknown_currency",
                               errors=[{"field": "currency", "message": "not ISO 4217"}])
    limit = exact(body.credit_limit, body.currency, "credit_limit")
    with unit_of_work(ctx) as uow:
        company_access(ctx, property_id, company_id, lock=True)
        if not Property.select(Property.id).where(
                Property.currency_code == body.currency).exists():
            raise ValidationFailed(
                f"no property of this environment keeps its accounts in {body.currency}",
                code="currency_not_used",
                errors=[{"field": "currency", "message": "not a currency of the properties"}])
        row = CompanyReceivableAccount.get_or_none(
            CompanyReceivableAccount.company_profile_id == company_id)
        if row is None:
            row = CompanyReceivableAccount.build(
                company_profile_id=company_id, credit_limit=limit, currency=body.currency,
                payment_terms_days=30 if body.payment_terms_days is None
                else body.payment_terms_days, version=1)
            row.save(force_insert=True)
            out = receivable_account_out(row)
            uow.record("company_receivable_account", "created", row, to_data(out),
                       property_id=property_id)
            return out, True
        terms = (row.payment_terms_days if body.payment_terms_days is None
                 else body.payment_terms_days)
        if (row.credit_limit, row.currency, row.payment_terms_days) == (limit, body.currency,
                                                                       terms):
            return receivable_account_out(row), False
        if row.currency != body.currency:
            _refuse_currency_change(ctx, row)
        before = to_data(receivable_account_out(row))
        row.credit_limit, row.currency, row.payment_terms_days = limit, body.currency, terms
        row.save()
        out = receivable_account_out(row)
        uow.record("company_receivable_account", "updated", row, to_data(out), before=before,
                   property_id=property_id)
        return out, False


def _refuse_currency_change(ctx: Ctx, row: CompanyReceivableAccount) -> None:
    """A receivable account's currency changes only while nothing is open on it: no balance or
    credit, no CONFIRMED or CHECKED_IN stay routed to the company through a BILL_TO_COMPANY
    method, no ACTIVE unexpired credit override (409 receivable_account_in_use naming them)."""
    company_id = row.company_profile_id
    billed = CompanyPaymentMethod.select(CompanyPaymentMethod.id).where(
        CompanyPaymentMethod.company_profile_id == company_id,
        CompanyPaymentMethod.status == "BILL_TO_COMPANY")
    stays = [str(r.reservation_id) for r in CompanyBilling.select(CompanyBilling.reservation_id)
             .join(Reservation, on=(Reservation.id == CompanyBilling.reservation_id))
             .where(CompanyBilling.company_profile_id == company_id,
                    CompanyBilling.company_payment_method_id.in_(billed),
                    Reservation.status.in_(("CONFIRMED", "CHECKED_IN")))
             .order_by(CompanyBilling.reservation_id)]
    overrides = [str(r.id) for r in CompanyCreditOverride.select(CompanyCreditOverride.id).where(
        CompanyCreditOverride.company_profile_id == company_id,
        CompanyCreditOverride.status == "ACTIVE", CompanyCreditOverride.expires_at > ctx.now)
        .order_by(CompanyCreditOverride.id)]
    balance = Decimal(row.open_balance or 0)
    credit = Decimal(row.credit_balance or 0)
    if balance or credit or stays or overrides:
        raise ReceivableAccountInUse(
            f"the account's currency ({row.currency}) cannot change while anything is open "
            "on it", currency=row.currency, open_balance=f"{balance:.2f}",
            credit_balance=f"{credit:.2f}", routed_reservation_ids=stays,
            active_override_ids=overrides)


def has_receivable_account(company_id: uuid.UUID) -> bool:
    """Call inside a scope / unit of work."""
    return CompanyReceivableAccount.get_or_none(
        CompanyReceivableAccount.company_profile_id == company_id) is not None
