"""Corporate accounts: who may act on a company, company users (admin provisioning:
`admin_provisioning`; the receivable account: `receivable_accounts`).

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
from datetime import timedelta

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.pagination import Page, paginate
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.companies import CompanyAction, CompanyRole, may
from pms.errors import (
    AlreadyExists,
    CompanyRoleForbidden,
    LastCompanyAdmin,
    NotFound,
    ValidationFailed,
)
from pms.events import event_type
from pms.models import (
    CompanyInvitation,
    CompanyUser,
    Profile,
)
from pms.schemas.common import to_data
from pms.schemas.companies import (
    CompanyInvitationOut,
    CompanyUserIn,
    CompanyUserOut,
    CompanyUserRoleIn,
    company_user_out,
    invitation_out,
)
from pms.services.catalog.catalog import load_property

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
