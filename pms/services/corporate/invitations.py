"""A traveler's answer to a company's invitation (the consent part of company users).

A company ADMIN who adds a guest profile creates an invitation (`companies.add_user`); the
binding exists only once the traveler accepts it through their own profile
(`.../profiles/{id}/company-invitations/{invitation_id}/accept`). Declining, or letting
`expires_at` pass, binds nothing. Staff, who may bind directly, may also answer on the
traveler's behalf; any other holder reaches only its own invitations (another's answer 404).

Accept and decline lock the company's row, then the invitation's, in that order (the order
every company change takes), so of two answers at once one wins and the other reads a decided
invitation (409 invitation_not_pending).
"""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.domain.companies import CompanyRole
from pms.errors import Conflict, NotFound
from pms.models import CompanyInvitation
from pms.schemas.common import ListQuery, to_data
from pms.schemas.companies import CompanyInvitationOut, invitation_out
from pms.services.corporate import companies
from pms.services.profiles.guest_payment_methods import own_profile

NO_INVITATION = "no such invitation"


def list_for_traveler(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID,
                      query: ListQuery) -> Page[CompanyInvitationOut]:
    """The profile's invitations, every status, oldest first."""
    with read_scope(ctx):
        own_profile(ctx, property_id, profile_id)
        rows = CompanyInvitation.select().where(
            CompanyInvitation.traveler_profile_id == profile_id)
        page = paginate(rows, CompanyInvitation, limit=query.limit, cursor=query.cursor)
    return Page(items=[invitation_out(r, ctx.now) for r in page.items],
                next_cursor=page.next_cursor)


def answer(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID,
           invitation_id: uuid.UUID, *, accept: bool) -> CompanyInvitationOut:
    """Accept (the binding, `company_user:added`, is made in the same transaction) or decline
    a PENDING invitation, with `company_invitation:accepted` / `:declined`.

    Raises: NotFound (no such profile or invitation, or not the caller's); Conflict
        invitation_not_pending (answered already), invitation_expired; AlreadyExists (bound
        meanwhile, by staff).
    """
    with unit_of_work(ctx) as uow:
        own_profile(ctx, property_id, profile_id)
        found = CompanyInvitation.get_or_none(CompanyInvitation.id == invitation_id,
                                              CompanyInvitation.traveler_profile_id == profile_id)
        if found is None:
            raise NotFound(NO_INVITATION)
        company = companies.load_company(found.company_profile_id, lock=True)
        row = for_update(CompanyInvitation.select().where(
            CompanyInvitation.id == invitation_id)).first()
        if row.status != companies.INVITATION_PENDING:
            raise Conflict(f"this invitation is {row.status} already",
                           code="invitation_not_pending")
        if row.expires_at <= ctx.now:
            raise Conflict("this invitation has expired; ask the company to invite again",
                           code="invitation_expired")
        before = to_data(invitation_out(row, ctx.now))
        binding_id = None
        if accept:
            companies.refuse_if_bound(company.id, profile_id)
            binding_id = companies.bind(uow, company, profile_id, CompanyRole(row.role),
                                         row.property_id).id
        row.status = "ACCEPTED" if accept else "DECLINED"
        row.decided_at = ctx.now
        row.save()
        out = invitation_out(row, ctx.now, binding_id)
        uow.record("company_invitation", "accepted" if accept else "declined", row,
                   to_data(out), before=before, property_id=property_id)
    return out
