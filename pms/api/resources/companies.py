"""Corporate accounts: company users, invitations, admin provisioning, company payment methods,
a stay's company billing; and `ROUTES`, every corporate route (the receivable and credit routes
live in `company_receivables`, the terms and production routes in `company_terms`).

Every route is guarded by the company profile id in the path (`pms.services.corporate.companies`).
Holder sessions (guest="own") reach the company-user and payment-method routes; only a traveler
session bound to the company (or the company's own profile) is served, anyone else gets 404.
Approving, rejecting, suspending and admin provisioning are staff-only (guest="deny").
"""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.resources.company_receivables import (
    CompanyReceivable,
    CreditOverrides,
    ReceivableAccount,
    ReceivableInvoices,
    ReceivableItems,
    ReceivablePayments,
    ReceivableReports,
    ReceivableWriteOffs,
)
from pms.api.resources.company_terms import (
    CompanyBookings,
    CompanyProduction,
    ContractRouting,
    RateLinks,
)
from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.common import ListQuery, Page
from pms.schemas.companies import (
    AdminProvisioningIn,
    AdminProvisioningOut,
    ApproveIn,
    CompanyBillingIn,
    CompanyBillingOut,
    CompanyInvitationOut,
    CompanyPaymentMethodIn,
    CompanyPaymentMethodOut,
    CompanyPaymentMethodQuery,
    CompanyUserIn,
    CompanyUserOut,
    CompanyUserRoleIn,
    IdentityProviderIn,
    ReasonIn,
)
from pms.services.corporate import (
    admin_provisioning,
    companies,
    company_direct_bill,
    invitations,
)
from pms.services.corporate import company_payment_methods as cpm

BASE = "/v1/properties/{property_id:uuid}/companies/{profile_id:uuid}"
# env-level: what is the company's across the chain (its receivable, its production)
ENV_BASE = "/v1/companies/{profile_id:uuid}"
INVITATIONS = "/v1/properties/{property_id:uuid}/profiles/{id:uuid}/company-invitations"


class CompanyUsers:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("company_users:read", query=ListQuery, response=Page[CompanyUserOut], guest="own",
              summary="The company's users (traveler bindings with a role)",
              description="A TRAVELER sees only its own binding. Holder sessions not bound to "
                          "the company get 404.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, query: ListQuery) -> None:
        page = companies.list_users(req.context.ctx, property_id, profile_id,
                                    limit=query.limit, cursor=query.cursor)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("company_users:write", body=CompanyUserIn, response=CompanyUserOut, status=201,
              guest="own", errors=(409,), also_status=(202,),
              summary="Bind a traveler profile to the company with a role",
              description="Staff bind at once (201, the binding). A company ADMIN invites: "
                          "202 with a PENDING invitation (CompanyInvitationOut) the traveler "
                          "accepts or declines through .../profiles/{id}/company-invitations; "
                          "the binding exists only after acceptance. One binding per company "
                          "and traveler (409 already_exists); a traveler may belong to many "
                          "companies.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                profile_id: Any, body: CompanyUserIn) -> None:
        out = companies.add_user(req.context.ctx, property_id, profile_id, body)
        resp.media = out
        if isinstance(out, CompanyInvitationOut):
            resp.status = 202
            resp.location = (f"/v1/properties/{property_id}/profiles/"
                             f"{out.traveler_profile_id}/company-invitations/{out.id}")
            return
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/companies/{profile_id}/users/{out.id}"

    @endpoint("company_users:write", status=204, guest="own", errors=(409,),
              summary="Remove a company user",
              description="Company ADMIN or staff. The last ADMIN of a company without "
                          "preferences.sso_provider cannot be removed (409 last_company_admin).")
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       profile_id: Any, id: Any) -> None:  # noqa: A002
        companies.remove_user(req.context.ctx, property_id, profile_id, id)
        resp.status = 204

    @endpoint("company_users:write", body=CompanyUserRoleIn, response=CompanyUserOut,
              guest="own", errors=(404, 409),
              summary="Change a company user's role",
              description="Company ADMIN or staff; the same role again changes nothing. The "
                          "last ADMIN of a company without preferences.sso_provider keeps the "
                          "role (409 last_company_admin).")
    def on_patch_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                      profile_id: Any, id: Any, body: CompanyUserRoleIn) -> None:  # noqa: A002
        out, _changed = companies.change_role(req.context.ctx, property_id, profile_id, id, body)
        resp.media = out


class TravelerInvitations:
    """A traveler's invitations from companies, under the traveler's own profile."""

    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("profiles:read", query=ListQuery, response=Page[CompanyInvitationOut],
              guest="own", summary="The profile's invitations from companies (every status)",
              description="A guest token reaches only its own profile's (404 otherwise).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any, query: ListQuery) -> None:  # noqa: A002
        page = invitations.list_for_traveler(req.context.ctx, property_id, id, query)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("profiles:write", response=CompanyInvitationOut, guest="own", errors=(404, 409),
              summary="Accept a company's invitation: the traveler is bound with its role",
              description="The traveler's own token (or staff on their behalf). Emits "
                          "company_user:added and company_invitation:accepted. 409 "
                          "invitation_not_pending / invitation_expired.")
    def on_post_accept(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       id: Any, invitation_id: Any) -> None:  # noqa: A002
        resp.media = invitations.answer(req.context.ctx, property_id, id, invitation_id,
                                        accept=True)

    @endpoint("profiles:write", response=CompanyInvitationOut, guest="own", errors=(404, 409),
              summary="Decline a company's invitation: nothing is bound",
              description="The traveler's own token (or staff on their behalf). Emits "
                          "company_invitation:declined. 409 invitation_not_pending / "
                          "invitation_expired.")
    def on_post_decline(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                        id: Any, invitation_id: Any) -> None:  # noqa: A002
        resp.media = invitations.answer(req.context.ctx, property_id, id, invitation_id,
                                        accept=False)


class AdminProvisioning:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", response=AdminProvisioningOut,
              summary="Whether the company needs an admin provisioned",
              description="requires_provisioning is true when the company has no "
                          "preferences.sso_provider and no bound ADMIN.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any) -> None:
        resp.media = admin_provisioning.get_provisioning(req.context.ctx, property_id,
                                                         profile_id)

    @endpoint("companies:write", body=AdminProvisioningIn, response=AdminProvisioningOut,
              errors=(409,),
              summary="Provision the company's first ADMIN",
              description="Resolves or creates the traveler by email, binds it as ADMIN, stamps "
                          "preferences.provisioned_admin_at and emits "
                          "hotel:pms:company:admin_provisioned, in one transaction. The same "
                          "admin again changes nothing; another one while an ADMIN is bound "
                          "answers 409 company_admin_exists.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, body: AdminProvisioningIn) -> None:
        out, _changed = admin_provisioning.provision_admin(req.context.ctx, property_id,
                                                           profile_id, body)
        resp.media = out


class IdentityProvider:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:write", body=IdentityProviderIn, response=AdminProvisioningOut,
              summary="Set or clear the company's identity provider (staff)",
              description="preferences.sso_provider (null clears it): with one, the company "
                          "needs no provisioned ADMIN and its last ADMIN may go. The same "
                          "value again changes nothing. Answers the provisioning state.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, body: IdentityProviderIn) -> None:
        out, _changed = admin_provisioning.set_identity_provider(req.context.ctx, property_id,
                                                                 profile_id, body)
        resp.media = out


class PaymentMethods:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("company_payment_methods:read", query=CompanyPaymentMethodQuery,
              response=Page[CompanyPaymentMethodOut], guest="own",
              summary="The company's payment methods",
              description="usable=true is the corporate checkout's list: POSTPAY and "
                          "BILL_TO_COMPANY methods only (a TRAVELER always gets that list).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, query: CompanyPaymentMethodQuery) -> None:
        page = cpm.list_methods(req.context.ctx, property_id, profile_id, usable=query.usable,
                                limit=query.limit, cursor=query.cursor)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("company_payment_methods:write", body=CompanyPaymentMethodIn,
              response=CompanyPaymentMethodOut, status=201, guest="own",
              errors=(409, 422, 503),
              summary="Submit a payment method (a payments-service reference) for approval",
              description="Company ADMIN or staff; born PENDING. The payments service must "
                          "report the method as the company's (else 422 "
                          "payment_method_not_allowed); the answer carries the card summary "
                          "it reports (brand, last4, exp_month, exp_year) for the approver.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                profile_id: Any, body: CompanyPaymentMethodIn) -> None:
        out = cpm.submit(req.context.ctx, property_id, profile_id, body,
                         payments=self.deps.platform.payments)
        resp.media = out
        resp.status = 201
        resp.location = (f"/v1/properties/{property_id}/companies/{profile_id}"
                         f"/payment-methods/{out.id}")

    @endpoint("company_payment_methods:write", status=204, guest="own", errors=(409,),
              summary="Remove a payment method reference (any state)",
              description="409 payment_method_in_use (naming reservation_ids) while CONFIRMED "
                          "or CHECKED_IN stays are routed through it.")
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       profile_id: Any, id: Any) -> None:  # noqa: A002
        cpm.remove(req.context.ctx, property_id, profile_id, id)
        resp.status = 204

    @endpoint("company_payment_methods:write", body=ApproveIn,
              response=CompanyPaymentMethodOut, errors=(409,),
              summary="Approve (staff): PENDING -> POSTPAY | BILL_TO_COMPANY, or re-classify",
              description="POSTPAY <-> BILL_TO_COMPANY re-classification too; other moves "
                          "answer 409 invalid_transition.")
    def on_post_approve(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                        profile_id: Any, id: Any, body: ApproveIn) -> None:  # noqa: A002
        trigger = "approve_postpay" if body.approval == "POSTPAY" else "approve_bill_to_company"
        resp.media = cpm.move(req.context.ctx, property_id, profile_id, id, trigger)

    @endpoint("company_payment_methods:write", body=ReasonIn,
              response=CompanyPaymentMethodOut, errors=(409,),
              summary="Reject a PENDING method (staff), with a reason")
    def on_post_reject(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       profile_id: Any, id: Any, body: ReasonIn) -> None:  # noqa: A002
        resp.media = cpm.move(req.context.ctx, property_id, profile_id, id, "reject",
                              reason=body.reason)

    @endpoint("company_payment_methods:write", body=ReasonIn,
              response=CompanyPaymentMethodOut, errors=(409,),
              summary="Suspend an approved method to REJECTED (staff), with a reason")
    def on_post_suspend(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                        profile_id: Any, id: Any, body: ReasonIn) -> None:  # noqa: A002
        resp.media = cpm.move(req.context.ctx, property_id, profile_id, id, "suspend",
                              reason=body.reason)

    @endpoint("company_payment_methods:write", response=CompanyPaymentMethodOut, guest="own",
              errors=(409, 422, 503),
              summary="Resubmit a REJECTED method to PENDING (company ADMIN)",
              description="The card summary is asked again of the payments service (422 "
                          "payment_method_not_allowed when it is no longer the company's).")
    def on_post_resubmit(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                         profile_id: Any, id: Any) -> None:  # noqa: A002
        resp.media = cpm.resubmit(req.context.ctx, property_id, profile_id, id,
                                  payments=self.deps.platform.payments)


class StayCompanyBilling:
    """A stay's folio routed to a company: who pays what before check-out."""

    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("reservations:read", response=CompanyBillingOut, errors=(404,),
              summary="What the company pays and what the guest pays of a stay billed to it",
              description="balance is what check-out would settle now (the in-house guest "
                          "folio's balance_due, projected room nights included; before "
                          "check-in the stay's guaranteed total); company_pays is the part up "
                          "to the cap, guest_pays the rest. 404 for a stay not billed to a "
                          "company.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        resp.media = company_direct_bill.get_stay_billing(req.context.ctx, property_id, id)

    @endpoint("reservations:write", body=CompanyBillingIn, response=CompanyBillingOut,
              errors=(409,),
              summary="Route a stay's folio to a company (staff)",
              description="Through an approved payment method of the company, with an "
                          "optional cap. A BILL_TO_COMPANY method is checked against the "
                          "company's credit limit for what the company takes over (409 "
                          "credit_limit_exceeded with credit_limit, exposure by part and "
                          "needed). A CONFIRMED or CHECKED_IN stay only (409 "
                          "reservation_not_editable). The same routing again changes nothing.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,  # noqa: A002
               body: CompanyBillingIn) -> None:
        out, _changed = company_direct_bill.route_stay(req.context.ctx, property_id, id, body)
        resp.media = out

    @endpoint("reservations:write", status=204, errors=(404, 409),
              summary="Remove a stay's routing to a company (staff)",
              description="The guest pays the whole folio again and the stay leaves the "
                          "company's exposure. A CONFIRMED or CHECKED_IN stay only (409 "
                          "reservation_not_editable: after check-out the share is on the "
                          "company's receivable account; reverting the check-out reverses "
                          "it). 404 for a stay not billed to a company.")
    def on_delete(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                  id: Any) -> None:  # noqa: A002
        company_direct_bill.unroute_stay(req.context.ctx, property_id, id)
        resp.status = 204


ROUTES = [
    Route("/v1/properties/{property_id:uuid}/reservations/{id:uuid}/company-billing",
          StayCompanyBilling),
    Route(BASE + "/users", CompanyUsers),
    Route(BASE + "/users/{id:uuid}", CompanyUsers, "item"),
    Route(INVITATIONS, TravelerInvitations),
    Route(INVITATIONS + "/{invitation_id:uuid}/accept", TravelerInvitations, "accept"),
    Route(INVITATIONS + "/{invitation_id:uuid}/decline", TravelerInvitations, "decline"),
    Route(BASE + "/admin-provisioning", AdminProvisioning),
    Route(BASE + "/identity-provider", IdentityProvider),
    Route(BASE + "/receivable-account", ReceivableAccount),
    Route(ENV_BASE + "/receivable", CompanyReceivable),
    Route(ENV_BASE + "/production", CompanyProduction),
    Route(BASE + "/bookings", CompanyBookings),
    Route(BASE + "/receivable-account/payments", ReceivablePayments),
    Route(BASE + "/receivable-account/items", ReceivableItems),
    Route(BASE + "/receivable-account/items/{id:uuid}/apply", ReceivableItems, "apply"),
    Route(BASE + "/receivable-account/invoices", ReceivableInvoices),
    Route(BASE + "/receivable-account/invoices/{id:uuid}", ReceivableInvoices, "item"),
    Route(BASE + "/receivable-account/write-offs", ReceivableWriteOffs),
    Route(BASE + "/receivable-account/aging", ReceivableReports, "aging"),
    Route(BASE + "/receivable-account/statement", ReceivableReports, "statement"),
    Route(BASE + "/routing-instructions", ContractRouting),
    Route(BASE + "/rate-links", RateLinks),
    Route(BASE + "/credit-overrides", CreditOverrides),
    Route(BASE + "/credit-overrides/{id:uuid}/approve", CreditOverrides, "approve"),
    Route(BASE + "/credit-overrides/{id:uuid}/decline", CreditOverrides, "decline"),
    Route(BASE + "/credit-overrides/{id:uuid}/revoke", CreditOverrides, "revoke"),
    Route(BASE + "/payment-methods", PaymentMethods),
    Route(BASE + "/payment-methods/{id:uuid}", PaymentMethods, "item"),
    Route(BASE + "/payment-methods/{id:uuid}/approve", PaymentMethods, "approve"),
    Route(BASE + "/payment-methods/{id:uuid}/reject", PaymentMethods, "reject"),
    Route(BASE + "/payment-methods/{id:uuid}/suspend", PaymentMethods, "suspend"),
    Route(BASE + "/payment-methods/{id:uuid}/resubmit", PaymentMethods, "resubmit"),
]
