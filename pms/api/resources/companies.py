"""Corporate accounts: company users, admin provisioning, company payment methods.

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
    AgingOut,
    AgingQuery,
    ApplyIn,
    ApproveIn,
    ArItemOut,
    ArItemQuery,
    CompanyBillingIn,
    CompanyBillingOut,
    CompanyBookingOut,
    CompanyBookingQuery,
    CompanyInvitationOut,
    CompanyPaymentMethodIn,
    CompanyPaymentMethodOut,
    CompanyPaymentMethodQuery,
    CompanyUserIn,
    CompanyUserOut,
    CompanyUserRoleIn,
    CreditOverrideIn,
    CreditOverrideOut,
    EnvLevelQuery,
    IdentityProviderIn,
    InvoiceIn,
    InvoiceOut,
    ProductionOut,
    ProductionQuery,
    RateLinksIn,
    RateLinksOut,
    ReasonIn,
    ReceivableAccountIn,
    ReceivableAccountOut,
    ReceivableAccountView,
    ReceivablePaymentIn,
    ReceivablePaymentOut,
    RoutingIn,
    RoutingOut,
    StatementOut,
    StatementQuery,
    WriteOffIn,
)
from pms.schemas.folios import InvoiceQuery
from pms.services.corporate import (
    companies,
    company_direct_bill,
    credit_overrides,
    invitations,
    production,
    rate_links,
    receivable_ledger,
    receivables,
    routing,
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
        out, _changed = companies.set_identity_provider(req.context.ctx, property_id,
                                                        profile_id, body)
        resp.media = out


class ReceivableAccount:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", response=ReceivableAccountView,
              summary="The company's receivable account: limit, balance and exposure",
              description="open_balance is what the company owes on the account; exposure is "
                          "what its credit limit is checked against, by part (receivable, "
                          "open_folios, future_stays); available is the limit plus ACTIVE "
                          "unexpired credit overrides less the exposure; overdue is what is "
                          "open on invoices past their due date (each as of its property's "
                          "business date); payment_terms_days the account's terms.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any) -> None:
        resp.media = receivables.get_account(req.context.ctx, property_id, profile_id)

    @endpoint("companies:write", body=ReceivableAccountIn, response=ReceivableAccountOut,
              status=200, also_status=(201,), errors=(409,),
              also=("company_receivables:write",),
              summary="Create or change the company's receivable account",
              description="Staff. The account is env-level (one credit limit for the chain, "
                          "also at PUT /v1/companies/{profile_id}/receivable): this path "
                          "needs hotel:pms:company_receivables:write besides companies:write "
                          "(403 missing_scope), and the env's policies must allow both at no "
                          "property in particular (403 policy_denied for a user limited to "
                          "some properties). "
                          "201 when created, 200 when changed or unchanged (the same "
                          "values write nothing). Approving a payment method to "
                          "BILL_TO_COMPANY needs it (409 receivable_account_required). The "
                          "currency is ISO 4217 (422 unknown_currency) and one a property of "
                          "the env keeps (422 currency_not_used); it changes only while "
                          "nothing is open on the account (409 receivable_account_in_use "
                          "naming the balance, routed stays and ACTIVE overrides).")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, body: ReceivableAccountIn) -> None:
        out, created = companies.set_receivable_account(req.context.ctx, property_id,
                                                        profile_id, body)
        resp.media = out
        resp.status = 201 if created else 200


class CompanyReceivable:
    """The company's receivable (credit limit and currency) at env level: one account for the
    chain's properties, so no property's path or policy decides it."""

    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("company_receivables:read", query=EnvLevelQuery, response=ReceivableAccountView,
              summary="The company's receivable account (env-level): limit, balance, exposure",
              description="As GET .../properties/{property_id}/companies/{profile_id}/"
                          "receivable-account, decided for the company at no property. A "
                          "property_id in the query is refused (422). 404 without an account.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, profile_id: Any,
               query: EnvLevelQuery) -> None:
        resp.media = receivables.get_account(req.context.ctx, None, profile_id)

    @endpoint("company_receivables:write", query=EnvLevelQuery, body=ReceivableAccountIn,
              response=ReceivableAccountOut, status=200, also_status=(201,), errors=(409,),
              summary="Create or change the company's receivable account (env-level, staff)",
              description="The credit limit and its currency, for every property of the env, "
                          "and the payment terms (payment_terms_days, 0..365; omitted: kept, "
                          "30 for a new account): an invoice issued later is due that many "
                          "days after its issue date (issued ones keep theirs); a change is "
                          "the account's updated event. "
                          "Needs hotel:pms:company_receivables:write; the env's policies are "
                          "asked for it and hotel:pms:companies:write at no property (a rule "
                          "limited to some properties does not allow it). 201 when created, "
                          "200 when changed or unchanged; the currency rules of the property "
                          "path (422 unknown_currency, currency_not_used; 409 "
                          "receivable_account_in_use). Its events carry no propertyid.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, profile_id: Any,
               query: EnvLevelQuery, body: ReceivableAccountIn) -> None:
        out, created = companies.set_receivable_account(req.context.ctx, None, profile_id, body)
        resp.media = out
        resp.status = 201 if created else 200


class CompanyProduction:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", query=ProductionQuery, response=ProductionOut,
              summary="The company's production: room nights and room revenue by property "
                      "and month",
              description="Staff. The nights from from_date to to_date (both included, at "
                          "most 1096 days) of the stays booked for the company (its "
                          "reservations' company_profile_id, billed to it or not) that are "
                          "CONFIRMED, CHECKED_IN or CHECKED_OUT, each at its nightly room "
                          "price, in the property's currency; sums per currency. Env-level: "
                          "property_id narrows it to one property (and is decided for it).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, profile_id: Any,
               query: ProductionQuery) -> None:
        resp.media = production.production(req.context.ctx, profile_id, query)


class CompanyBookings:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("reservations:read", query=CompanyBookingQuery,
              response=Page[CompanyBookingOut], guest="own",
              summary="The company's bookings at the property (\"our bookings\")",
              description="Stays booked for the company, billed to it or not, in booking "
                          "order; filters status, arrival_from, arrival_to, "
                          "traveler_profile_id. A company ADMIN (or the company's own "
                          "token), BOOKER or VIEWER sees every one; a TRAVELER only its own "
                          "stays; staff all. A holder not bound to the company gets 404. No "
                          "prices (they are on the reservation).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, query: CompanyBookingQuery) -> None:
        page = production.list_bookings(req.context.ctx, property_id, profile_id, query)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)


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


class ContractRouting:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", response=RoutingOut,
              summary="The company's contract routing: which folio lines it pays",
              description="categories and transaction_codes name the lines the company pays "
                          "(a tax line goes with the line it taxes); all null: whole folios.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any) -> None:
        resp.media = routing.get_routing(req.context.ctx, property_id, profile_id)

    @endpoint("companies:write", body=RoutingIn, response=RoutingOut,
              summary="Set the company's contract routing (staff)",
              description="e.g. {\"categories\": [\"room\", \"tax\"]}: the company pays "
                          "room nights and their taxes, the guest the incidentals. Copied "
                          "onto every stay billed to the company from now on (booking, or a "
                          "routing naming no instructions of its own); booked stays keep "
                          "theirs.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, body: RoutingIn) -> None:
        resp.media = routing.set_routing(req.context.ctx, property_id, profile_id, body)


class ReceivableItems:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", query=ArItemQuery, response=Page[ArItemOut],
              summary="The company's receivable entries (open items with open=true)",
              description="DIRECT_BILL (a check-out's share: stay, folio, lines, date), "
                          "PAYMENT, REVERSAL, WRITE_OFF; amount signed, open_amount what is "
                          "left to match (owed of a bill, unapplied of a credit).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, query: ArItemQuery) -> None:
        page = receivable_ledger.list_items(req.context.ctx, property_id, profile_id,
                                            open_only=query.open, limit=query.limit,
                                            cursor=query.cursor)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("companies:write", body=ApplyIn, response=InvoiceOut, errors=(404, 409),
              summary="Apply a credit (a PAYMENT or REVERSAL item) to an invoice (staff)",
              description="Oldest open items of the invoice first; amount defaults to as "
                          "much as both have (409 receivable_item_not_open past either).")
    def on_post_apply(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                      profile_id: Any, id: Any, body: ApplyIn) -> None:  # noqa: A002
        resp.media = receivable_ledger.apply_credit(req.context.ctx, property_id, profile_id,
                                                    id, body)


class ReceivableInvoices:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", query=ListQuery, response=Page[InvoiceOut],
              summary="The company's invoices")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any, query: ListQuery) -> None:
        page = receivable_ledger.list_invoices(req.context.ctx, property_id, profile_id,
                                               limit=query.limit, cursor=query.cursor)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("companies:write", body=InvoiceIn, response=InvoiceOut, status=201,
              errors=(404, 409),
              summary="Issue an invoice grouping open items (staff)",
              description="The named open items, or every open item of the property not "
                          "invoiced yet (up to through_date). Numbered <series>-<property "
                          "code>-<n>, gapless per property and series. due_on is the issue "
                          "date plus the account's payment_terms_days (due_days overrides "
                          "them for this invoice), frozen on the invoice. 409 "
                          "receivable_item_not_open for an item invoiced or closed, or none.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                profile_id: Any, body: InvoiceIn) -> None:
        out = receivable_ledger.issue_invoice(req.context.ctx, property_id, profile_id, body)
        resp.media = out
        resp.status = 201
        resp.location = (f"/v1/properties/{property_id}/companies/{profile_id}"
                         f"/receivable-account/invoices/{out.id}")

    @endpoint("companies:read", query=InvoiceQuery, response=InvoiceOut, errors=(404, 409),
              also_media=("application/pdf", "application/xml"),
              summary="One invoice with its items and what is open of it",
              description="`format=xml`: the invoice as an EN 16931 e-invoice (Factur-X CII, "
                          "a collective invoice of the direct bills' folio lines as their "
                          "stays' invoices froze them); `format=facturx`: as a Factur-X PDF "
                          "with that XML embedded. 409 einvoice_needs_stay_invoices when a "
                          "stay has no invoice of its own yet.")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    profile_id: Any, id: Any, query: InvoiceQuery) -> None:  # noqa: A002
        ctx = req.context.ctx
        if query.format in ("xml", "facturx"):
            from pms.services.cashiering import einvoice, facturx

            document = receivable_ledger.invoice_einvoice(ctx, property_id, profile_id, id)
            if query.format == "xml":
                resp.content_type, resp.data = "application/xml", einvoice.cii_xml(document)
                resp.downloadable_as = f"einvoice-{document['number']}.xml"
            else:
                resp.content_type = "application/pdf"
                resp.data = facturx.facturx_pdf(document)
                resp.downloadable_as = f"facturx-{document['number']}.pdf"
            return
        resp.media = receivable_ledger.get_invoice(ctx, property_id, profile_id, id)


class ReceivableWriteOffs:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:write", body=WriteOffIn, response=ArItemOut, status=201,
              errors=(404, 409),
              summary="Write off (part of) an open direct bill (staff)",
              description="A WRITE_OFF entry; open_balance drops by it (what was already "
                          "paid of it is held as credit); posted to the ledger (debit "
                          "ar_write_off, credit company_receivable:<company>).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                profile_id: Any, body: WriteOffIn) -> None:
        resp.media = receivable_ledger.write_off(
            req.context.ctx, property_id, profile_id, body,
            ledger=getattr(self.deps.platform, "ledger", None))
        resp.status = 201


class ReceivableReports:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("companies:read", query=AgingQuery, response=AgingOut, errors=(404,),
              summary="The company's open items by age (current, 30, 60, 90+ days)",
              description="As of the property's business date by default; net (open items "
                          "less unapplied credit) equals open_balance less credit_balance. "
                          "The flat buckets age by days since billed; `buckets` follow "
                          "basis: billed (the default, the same buckets) or due (days past "
                          "the due date of the item's invoice: current is not yet due, then "
                          "1-30, 31-60, 61-90, 90+ days overdue; an item not invoiced yet "
                          "is current). overdue: what is open past its due date.")
    def on_get_aging(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                     profile_id: Any, query: AgingQuery) -> None:
        resp.media = receivable_ledger.aging(req.context.ctx, property_id, profile_id,
                                             query.as_of, query.basis)

    @endpoint("companies:read", query=StatementQuery, response=StatementOut, errors=(404,),
              summary="The company's statement: entries with a running balance",
              description="Opening balance, every entry dated in the period (with the "
                          "number and due date of the invoice it is on), closing "
                          "balance; over all time the closing balance is what the ledger's "
                          "company_receivable:<company> holds.")
    def on_get_statement(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                         profile_id: Any, query: StatementQuery) -> None:
        resp.media = receivable_ledger.statement(req.context.ctx, property_id, profile_id,
                                                 query.from_date, query.to_date)


class RateLinks:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("rate_links:read", response=RateLinksOut,
              summary="The negotiated rate plans linked to the company",
              description="The company profile's preferences.negotiated_rate_plan_ids (what "
                          "the corporate search and the rate fence read), with each plan's "
                          "code and name and the link's valid_from / valid_to (null: open); "
                          "a deleted plan drops out. Staff only.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               profile_id: Any) -> None:
        resp.media = rate_links.get_rate_links(req.context.ctx, property_id, profile_id)

    @endpoint("rate_links:write", body=RateLinksIn, response=RateLinksOut,
              summary="Link the company to negotiated rate plans (replaces the list)",
              description="Every id must be a negotiated plan of the environment (422 on "
                          "rate_plan_ids); [] unlinks all. Either rate_plan_ids (links valid on "
                          "every date) or links, each {rate_plan_id, valid_from, valid_to} "
                          "(inclusive dates, either optional; 422 invalid_rate_link when "
                          "valid_from is after valid_to). From the next request on, the "
                          "company's corporate search offers exactly these plans, a dated "
                          "link's only for stays whose every night falls within its dates, "
                          "and a booking outside them is refused (422 "
                          "rate_link_not_valid_for_stay). The same links again change "
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
              also=("credit_overrides:approve",),
              summary="Approve a requested override (a staff user other than the requester)",
              description="A user token (a person) with hotel:pms:credit_overrides:approve "
                          "besides companies:write (403 missing_scope); 403 "
                          "second_staff_required for the requester itself or a machine token.")
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
