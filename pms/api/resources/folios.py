"""Folios and cashiering: the folio of a reservation or of the in-house stay in a room, one folio,
charges (post, correct, move), allowances, payments, pre-authorizations, the invoice (JSON, PDF
or EN 16931 XML), the auditor's export of a period and the folios of a stay (split billing).
Responders call one service each."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas import cashiering as cs
from pms.schemas.common import Page
from pms.schemas.fiscal_exports import AuditExportIn
from pms.schemas.folios import (
    FiscalDocumentOut,
    FiscalVerificationOut,
    FolioByRoomQuery,
    FolioOut,
    InvoiceQuery,
    PaymentResultOut,
    payment_out,
)
from pms.schemas.jobs import JobOut, job_out
from pms.services.cashiering import (
    cashiering,
    einvoice,
    facturx,
    fiscal_export,
    folios,
    invoices,
    payments,
)


class ReservationFolio:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", response=FolioOut, summary="Folio of the reservation", guest="own",
              description="The guest folio (opened at check-in) with its charges, payments and "
                          "balance. 404 before check-in.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        resp.media = folios.get_reservation_folio(req.context.ctx, property_id, id)


class FoliosByRoom:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", query=FolioByRoomQuery, response=FolioOut, guest="own",
              summary="Folio of the in-house stay in a room",
              description="Opens the OPEN folio of the CHECKED_IN stay in `room_number`.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: FolioByRoomQuery) -> None:
        resp.media = folios.folio_for_room(req.context.ctx, property_id, query.room_number)


ROUTES = [
    Route("/v1/properties/{property_id:uuid}/reservations/{id:uuid}/folio", ReservationFolio),
    Route("/v1/properties/{property_id:uuid}/folios", FoliosByRoom),
]


# -- cashiering -------------------------------------------------------------------------


def _client(deps: Any, name: str) -> Any:
    return getattr(deps.platform, name, None)


class FolioItem:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", response=FolioOut, summary="One folio with its lines and balance",
              guest="own")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        resp.media = cashiering.get_folio(req.context.ctx, property_id, id)


class FolioCharges:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:write", body=cs.ChargeIn, response=FolioOut, status=201, errors=(409,),
              summary="Post a charge by transaction code",
              description="Taxes of the code become their own lines. 409 folio_closed on a "
                          "closed folio.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
                body: cs.ChargeIn) -> None:  # noqa: A002
        resp.media = cashiering.post_charge(req.context.ctx, property_id, id, body,
                                            ledger=_client(self.deps, "ledger"))
        resp.status = 201


class ChargeCorrection:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:write", body=cs.CorrectionIn, response=FolioOut, status=201, errors=(409,),
              summary="Correct a charge with reversal lines (never an edit or a delete)")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
                charge_id: Any, body: cs.CorrectionIn) -> None:  # noqa: A002
        resp.media = cashiering.correct_charge(req.context.ctx, property_id, id, charge_id, body,
                                               ledger=_client(self.deps, "ledger"))
        resp.status = 201


class ChargeMove:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:write", body=cs.MoveChargeIn, response=FolioOut, status=201, errors=(409,),
              summary="Move a charge to another open folio of the stay (split billing)")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
                charge_id: Any, body: cs.MoveChargeIn) -> None:  # noqa: A002
        resp.media = cashiering.move_charge(req.context.ctx, property_id, id, charge_id, body)
        resp.status = 201


class FolioAllowances:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:write", body=cs.AllowanceIn, response=FolioOut, status=201, errors=(409,),
              summary="Grant an allowance (a credit line with its taxes reversed)")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
                body: cs.AllowanceIn) -> None:  # noqa: A002
        resp.media = cashiering.post_allowance(req.context.ctx, property_id, id, body,
                                               ledger=_client(self.deps, "ledger"))
        resp.status = 201


def _payment_response(resp: falcon.Response, result: Any) -> None:
    folio, payment = result
    resp.media = PaymentResultOut(payment=payment_out(payment), folio=folio)
    resp.status = 202 if payment.status == "PENDING" else 201


class FolioPayments:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:write", body=cs.PaymentIn, response=PaymentResultOut, status=201,
              errors=(402, 409), also_status=(202,), summary="Take a payment (card via the payments service, cash, "
                                         "bank transfer, gift voucher)",
              description="Card payments are charges on the payments service, called after the "
                          "PENDING payment is committed. 201 CAPTURED; 202 PENDING when the "
                          "payments service did not answer (reconciled later); 402 "
                          "payment_declined. Only payment_method_id references are accepted. "
                          "Staff only: a guest pays through a pre-authorization (SPEC rule 8), "
                          "never by declaring a cash payment.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
                body: cs.PaymentIn) -> None:  # noqa: A002
        _payment_response(resp, payments.post_payment(
            req.context.ctx, property_id, id, body, payments=_client(self.deps, "payments"),
            ledger=_client(self.deps, "ledger")))


class FolioPreAuthorizations:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:write", body=cs.PreAuthorizationIn, response=PaymentResultOut, status=201,
              errors=(402, 409), guest="own", also_status=(202,), summary="Pre-authorize an amount (payment intent with manual "
                                         "confirmation)")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
                body: cs.PreAuthorizationIn) -> None:  # noqa: A002
        _payment_response(resp, payments.pre_authorize(
            req.context.ctx, property_id, id, body, payments=_client(self.deps, "payments")))


class FolioInvoice:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:write", response=dict, status=201, errors=(409,), also_status=(200,),
              summary="Issue the numbered invoice of a closed folio",
              description="201 on first issue, 200 with the same invoice afterwards; 409 "
                          "folio_not_closed for an open folio.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any) -> None:  # noqa: A002
        document, created = invoices.issue_invoice(req.context.ctx, property_id, id)
        resp.media = document
        resp.status = 201 if created else 200

    @endpoint("folios:read", query=InvoiceQuery, response=dict, guest="own", errors=(409,),
              also_media=("application/pdf", "application/xml"),
              summary="The issued invoice as JSON, or as PDF with format=pdf",
              description="`format=xml`: a company's invoice as an EN 16931 e-invoice, "
                          "`format=facturx`: as a Factur-X PDF (PDF/A-3 with the XML "
                          "embedded), as GET .../fiscal-documents/{id}.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
               query: InvoiceQuery) -> None:  # noqa: A002
        document = invoices.get_invoice(req.context.ctx, property_id, id)
        _answer_document(resp, document, query)


class FolioDocuments:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", response=Page[FiscalDocumentOut], guest="own",
              summary="The folio's fiscal documents: its invoices and credit notes, as issued",
              description="An invoice cancelled by a credit note stays listed; the credit note "
                          "names it (`refers_to_id`) and the reason.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        resp.media = Page(data=invoices.folio_documents(req.context.ctx, property_id, id))


class FiscalDocument:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", query=InvoiceQuery, response=dict, errors=(409,),
              also_media=("application/pdf", "application/xml"),
              summary="A fiscal document (invoice or credit note) as JSON, or PDF with format=pdf",
              description="The document as frozen at issue: never changed afterwards. "
                          "`format=xml`: a company's document as an EN 16931 e-invoice "
                          "(Factur-X/ZUGFeRD CII XML, EN 16931 profile); `format=facturx`: "
                          "the Factur-X PDF (the printable document, declared PDF/A-3, "
                          "with that XML embedded as factur-x.xml); 409 "
                          "einvoice_needs_company for a private guest's, 409 "
                          "einvoice_identity_incomplete when the seller's or buyer's frozen "
                          "identity lacks a country or a tax id.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
               query: InvoiceQuery) -> None:  # noqa: A002
        document = invoices.get_document(req.context.ctx, property_id, id)
        _answer_document(resp, document, query)


class FiscalJournalVerification:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", response=FiscalVerificationOut,
              summary="Verify the property's fiscal journal (its hash chain and documents)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any) -> None:
        resp.media = invoices.verify_journal(req.context.ctx, property_id)


def _answer_document(resp: falcon.Response, document: dict[str, Any],
                     query: InvoiceQuery) -> None:
    if query.format == "xml":
        resp.content_type = "application/xml"
        resp.data = einvoice.cii_xml(document)
        resp.downloadable_as = f"einvoice-{document['number']}.xml"
    elif query.format == "facturx":
        resp.content_type = "application/pdf"
        resp.data = facturx.facturx_pdf(document)
        resp.downloadable_as = f"facturx-{document['number']}.pdf"
    elif query.format == "pdf":
        kind = "credit-note" if document.get("kind") == invoices.CREDIT_NOTE else "invoice"
        resp.content_type = "application/pdf"
        resp.data = invoices.invoice_pdf(document)
        resp.downloadable_as = f"{kind}-{document['number']}.pdf"
    else:
        resp.media = document


class AuditExports:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", body=AuditExportIn, response=JobOut, status=202,
              summary="Export a period's documents, lines, payments and journal for an auditor",
              description="202 with the job: poll GET .../fiscal-exports/{job_id} (its "
                          "progress), then download .../archive: a zip of CSV files "
                          "(documents, lines, payments, journal), the documents as frozen "
                          "(documents.jsonl) and manifest.json (rows and sha256 of each file, "
                          "the period's first and last chain hash). `pms-cli fiscal "
                          "verify-audit --dir` checks it offline.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: AuditExportIn) -> None:
        job = fiscal_export.start(req.context.ctx, property_id, body.date_from, body.date_to)
        resp.media = job_out(job)
        resp.status = 202
        resp.location = f"/v1/properties/{property_id}/fiscal-exports/{job.id}"

    @endpoint("folios:read", response=JobOut,
              summary="An auditor's export job: status, progress and, once done, its manifest")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    job_id: Any) -> None:
        resp.media = job_out(fiscal_export.load(req.context.ctx, property_id, job_id))

    @endpoint("folios:read", response=dict, errors=(409,), also_media=("application/zip",),
              summary="The export's archive (409 job_not_finished before it succeeded)")
    def on_get_archive(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       job_id: Any) -> None:
        resp.content_type = "application/zip"
        resp.data = fiscal_export.download(req.context.ctx, property_id, job_id,
                                           store=self.deps.platform.storage)
        resp.downloadable_as = f"fiscal-export-{job_id}.zip"


class StayFolios:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", response=Page[FolioOut], guest="own",
              summary="Every folio of a stay (guest folio first; one page)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        resp.media = Page(data=cashiering.list_stay_folios(req.context.ctx, property_id, id))

    @endpoint("folios:write", body=cs.ExtraFolioIn, response=FolioOut, status=201, errors=(409,),
              summary="Open an extra folio of the stay (split billing)")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
                body: cs.ExtraFolioIn) -> None:  # noqa: A002
        out = cashiering.open_extra_folio(req.context.ctx, property_id, id, body)
        resp.media = out
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/folios/{out.id}"


_f = "/v1/properties/{property_id:uuid}/folios/{id:uuid}"
_x = "/v1/properties/{property_id:uuid}/fiscal-exports"
ROUTES += [
    Route(_f, FolioItem),
    Route(_f + "/charges", FolioCharges),
    Route(_f + "/charges/{charge_id:uuid}/correction", ChargeCorrection),
    Route(_f + "/charges/{charge_id:uuid}/move", ChargeMove),
    Route(_f + "/allowances", FolioAllowances),
    Route(_f + "/payments", FolioPayments),
    Route(_f + "/pre-authorizations", FolioPreAuthorizations),
    Route(_f + "/invoice", FolioInvoice),
    Route(_f + "/documents", FolioDocuments),
    Route("/v1/properties/{property_id:uuid}/fiscal-documents/{id:uuid}", FiscalDocument),
    Route("/v1/properties/{property_id:uuid}/fiscal-journal/verification",
          FiscalJournalVerification),
    Route("/v1/properties/{property_id:uuid}/reservations/{id:uuid}/folios", StayFolios),
    Route(_x, AuditExports),
    Route(_x + "/{job_id:uuid}", AuditExports, "item"),
    Route(_x + "/{job_id:uuid}/archive", AuditExports, "archive"),
]
