"""Corporate accounts (issue 31): company users, admin provisioning, company payment methods.

Every route is guarded by the company profile id in the path (`pms.services.corporate.companies`).
Holder sessions (guest="own") reach the company-user and payment-method routes; only a traveler
session bound to the company (or the company's own profile) is served, anyone else gets 404.
Approving, rejecting, suspending and admin provisioning are staff-only (guest="deny").
"""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.common import ListQuery, Page
from pms.schemas.companies import (
    AdminProvisioningIn,
    AdminProvisioningOut,
    ApproveIn,
    CompanyBillingIn,
    CompanyBillingOut,
    CompanyPaymentMethodIn,
    CompanyPaymentMethodOut,
    CompanyPaymentMethodQuery,
    CompanyUserIn,
    CompanyUserOut,
    CreditOverrideIn,
    CreditOverrideOut,
    RateLinksIn,
    RateLinksOut,
    ReasonIn,
    ReceivableAccountIn,
    ReceivableAccountOut,
    ReceivableAccountView,
    ReceivablePaymentIn,
    ReceivablePaymentOut,
)
from pms.services.corporate import (
    companies,
    company_direct_bill,
    credit_overrides,
    rate_links,
    receivables,
)
from pms.services.corporate import company_payment_methods as cpm

BASE = "/v1/properties/{property_id:uuid}/companies/{profile_id:uuid}"


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
              guest="own", errors=(409,),
              summary="Bind a traveler profile to the company with a role",
              description="Company ADMIN or staff. One binding per company and traveler (409 "
                          "already_exists); a traveler may belong to many companies.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                profile_id: Any, body: CompanyUserIn) -> None:
        out = companies.add_user(req.context.ctx, property_id, profile_id, body)
        resp.media = out
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


class AdminProvisioning:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", response=AdminProvisioningOut,
              summary="Whether the company needs an admin provisioned",
              description="requires_provisioning is true when the company has no "
                          "preferences.sso_provider and no bound ADMIN.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any) -> None:
        resp.media = companies.get_provisioning(req.context.ctx, property_id, profile_id)

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
        out, _changed = companies.provision_admin(req.context.ctx, property_id, profile_id, body)
        resp.media = out


class ReceivableAccount:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", response=ReceivableAccountView,
              summary="The company's receivable account: limit, balance and exposure",
              description="open_balance is what the company owes on the account; exposure is "
                          "what its credit limit is checked against, by part (receivable, "
                          "open_folios, future_stays); available is the limit plus ACTIVE "
                          "unexpired credit overrides less the exposure.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any) -> None:
        resp.media = receivables.get_account(req.context.ctx, property_id, profile_id)

    @endpoint("companies:write", body=ReceivableAccountIn, response=ReceivableAccountOut,
              status=200, also_status=(201,),
              summary="Create or change the company's receivable account",
              description="Staff. 201 when created, 200 when changed or unchanged (the same "
                          "values write nothing). Approving a payment method to "
                          "BILL_TO_COMPANY needs it (409 receivable_account_required).")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, body: ReceivableAccountIn) -> None:
        out, created = companies.set_receivable_account(req.context.ctx, property_id,
                                                        profile_id, body)
        resp.media = out
        resp.status = 201 if created else 200


class ReceivablePayments:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:write", body=ReceivablePaymentIn, response=ReceivablePaymentOut,
              status=201, errors=(404, 409),
              summary="Record a company's payment against its receivable account (staff)",
              description="Lowers open_balance (and so the exposure: the credit limit frees "
                          "up); posted to the ledger (credit company_receivable:<company>) "
                          "after commit. In the account's currency (422 currency_mismatch); "
                          "never more than the company owes (409 receivable_overpaid). A "
                          "retry with the same Idempotency-Key is answered once.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                profile_id: Any, body: ReceivablePaymentIn) -> None:
        resp.media = receivables.receive_payment(
            req.context.ctx, property_id, profile_id, body,
            ledger=getattr(self.deps.platform, "ledger", None))
        resp.status = 201


class RateLinks:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("rate_links:read", response=RateLinksOut,
              summary="The negotiated rate plans linked to the company",
              description="The company profile's preferences.negotiated_rate_plan_ids (what "
                          "the corporate search and the rate fence read), with each plan's "
                          "code and name; a deleted plan drops out. Staff only.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any) -> None:
        resp.media = rate_links.get_rate_links(req.context.ctx, property_id, profile_id)

    @endpoint("rate_links:write", body=RateLinksIn, response=RateLinksOut,
              summary="Link the company to negotiated rate plans (replaces the list)",
              description="Every id must be a negotiated plan of the environment (422 on "
                          "rate_plan_ids); [] unlinks all. From the next request on, the "
                          "company's corporate search offers exactly these plans and its "
                          "bookings on others are refused. The same list again changes "
                          "nothing. Staff only: a company never links itself to a price.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, body: RateLinksIn) -> None:
        resp.media = rate_links.set_rate_links(req.context.ctx, property_id, profile_id, body)


class CreditOverrides:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", query=ListQuery, response=Page[CreditOverrideOut],
              summary="The company's credit overrides")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, query: ListQuery) -> None:
        page = credit_overrides.list_overrides(req.context.ctx, property_id, profile_id,
                                               limit=query.limit, cursor=query.cursor)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("companies:write", body=CreditOverrideIn, response=CreditOverrideOut, status=201,
              summary="Request credit above the company's limit until an expiry (staff)",
              description="REQUESTED until a second staff user approves it; an ACTIVE, "
                          "unexpired override raises the limit of the exposure check.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                profile_id: Any, body: CreditOverrideIn) -> None:
        out = credit_overrides.request_override(req.context.ctx, property_id, profile_id, body)
        resp.media = out
        resp.status = 201
        resp.location = (f"/v1/properties/{property_id}/companies/{profile_id}"
                         f"/credit-overrides/{out.id}")

    @endpoint("companies:write", response=CreditOverrideOut, errors=(409,),
              summary="Approve a requested override (a staff user other than the requester)",
              description="403 second_staff_required for the requester itself.")
    def on_post_approve(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                        profile_id: Any, id: Any) -> None:  # noqa: A002
        resp.media = credit_overrides.decide(req.context.ctx, property_id, profile_id, id,
                                             "approve")

    @endpoint("companies:write", response=CreditOverrideOut, errors=(409,),
              summary="Decline a requested override")
    def on_post_decline(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                        profile_id: Any, id: Any) -> None:  # noqa: A002
        resp.media = credit_overrides.decide(req.context.ctx, property_id, profile_id, id,
                                             "decline")

    @endpoint("companies:write", response=CreditOverrideOut, errors=(409,),
              summary="Revoke an active override")
    def on_post_revoke(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       profile_id: Any, id: Any) -> None:  # noqa: A002
        resp.media = credit_overrides.decide(req.context.ctx, property_id, profile_id, id,
                                             "revoke")


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
              response=CompanyPaymentMethodOut, status=201, guest="own", errors=(409,),
              summary="Submit a payment method (a payments-service reference) for approval",
              description="Company ADMIN or staff; born PENDING.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                profile_id: Any, body: CompanyPaymentMethodIn) -> None:
        out = cpm.submit(req.context.ctx, property_id, profile_id, body)
        resp.media = out
        resp.status = 201
        resp.location = (f"/v1/properties/{property_id}/companies/{profile_id}"
                         f"/payment-methods/{out.id}")

    @endpoint("company_payment_methods:write", status=204, guest="own",
              summary="Remove a payment method reference (any state)")
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
              errors=(409,), summary="Resubmit a REJECTED method to PENDING (company ADMIN)")
    def on_post_resubmit(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                         profile_id: Any, id: Any) -> None:  # noqa: A002
        resp.media = cpm.move(req.context.ctx, property_id, profile_id, id, "resubmit")


class StayCompanyBilling:
    """A stay's folio routed to a company (issue 31): who pays what before check-out."""

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
    Route(BASE + "/admin-provisioning", AdminProvisioning),
    Route(BASE + "/receivable-account", ReceivableAccount),
    Route(BASE + "/receivable-account/payments", ReceivablePayments),
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
