"""A company's receivable account (property and env level), its payments, open items,
invoices, write-offs, aging and statement, and its credit overrides.

Staff routes guarded by the company profile id in the path
(`pms.services.corporate.companies`); the routes are listed in
`pms.api.resources.companies.ROUTES`.
"""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.spec import endpoint
from pms.schemas.common import ListQuery, Page
from pms.schemas.companies import (
    AgingOut,
    AgingQuery,
    ApplyIn,
    ArItemOut,
    ArItemQuery,
    CreditOverrideIn,
    CreditOverrideOut,
    EnvLevelQuery,
    InvoiceIn,
    InvoiceOut,
    ReceivableAccountIn,
    ReceivableAccountOut,
    ReceivableAccountView,
    ReceivablePaymentIn,
    ReceivablePaymentOut,
    StatementOut,
    StatementQuery,
    WriteOffIn,
)
from pms.schemas.folios import InvoiceQuery
from pms.services.corporate import (
    credit_overrides,
    receivable_accounts,
    receivable_ledger,
    receivables,
)


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
        out, created = receivable_accounts.set_receivable_account(req.context.ctx, property_id,
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
        out, created = receivable_accounts.set_receivable_account(req.context.ctx, None,
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

