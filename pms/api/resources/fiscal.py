"""Fiscal documents beyond the folio's invoice: a document's state at its fiscal provider, and
the receipt (or advance invoice) of a captured payment. Responders call one service each; the
documents themselves are read through the folio routes (`.../documents`,
`.../fiscal-documents/{id}`)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.fiscal import FiscalizationOut
from pms.services.cashiering import fiscalization, receipts


class DocumentFiscalization:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", response=FiscalizationOut,
              summary="A fiscal document's state at its fiscal provider",
              description="PENDING until the provider answers (retried while it cannot be "
                          "reached), then ACCEPTED with its signature, counter and signing "
                          "time, or REJECTED / CORRECTION_NEEDED (resent with "
                          "`pms-cli fiscal resend`).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        resp.media = fiscalization.get_fiscalization(req.context.ctx, property_id, id)


class PaymentReceipt:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:write", response=dict, status=201, errors=(409,), also_status=(200,),
              summary="Issue the receipt of a captured payment (a deposit invoice before the "
                      "stay)",
              description="201 on first issue, 200 with the same document afterwards. A "
                          "payment taken before the arrival date gets a DEPOSIT_INVOICE "
                          "(`<code>-D-000001`), any other a RECEIPT (`<code>-R-000001`); 409 "
                          "payment_not_receiptable for a refund, a pre-authorization or a "
                          "payment not captured.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
                payment_id: Any) -> None:  # noqa: A002
        document, created = receipts.issue_receipt(req.context.ctx, property_id, id, payment_id)
        resp.media = document
        resp.status = 201 if created else 200


ROUTES = [
    Route("/v1/properties/{property_id:uuid}/fiscal-documents/{id:uuid}/fiscalization",
          DocumentFiscalization),
    Route("/v1/properties/{property_id:uuid}/folios/{id:uuid}/payments/{payment_id:uuid}"
          "/receipt", PaymentReceipt),
]
