"""Refunds of a folio's credit: `POST /v1/properties/{property_id}/folios/{id}/refunds` (staff
only). The responder calls one service; the rules live in `pms.services.cashiering.refunds`."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.refunds import RefundIn, RefundResultOut, refund_out
from pms.services.cashiering import refunds


class FolioRefunds:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:write", body=RefundIn, response=RefundResultOut, status=201,
              errors=(409,), also_status=(202,),
              summary="Refund the folio's credit (to the card of a payment, or in cash)",
              description="Gives back what the guest paid beyond the charges (the room nights a "
                          "check-out now would post included), so that check-out can close the "
                          "folio (409 folio_credit_balance otherwise). CARD refunds the captured "
                          "card payment `payment_id` through the payments service, called after "
                          "the PENDING refund is committed; CASH records money handed back at "
                          "the desk. 201 with the refund (status CAPTURED: the money went back); "
                          "202 PENDING when the payments service did not answer (reconciled "
                          "later). 409 refund_exceeds_credit (more than the credit, `credit` in "
                          "the problem), refund_exceeds_payment (more than the payment has "
                          "left, `refundable`), payment_not_refundable (not a captured charge), "
                          "refund_declined (the payments service declined; recorded FAILED), "
                          "folio_closed. 422 for a card refund without payment_id, a cash "
                          "refund with one, or a payment_id that names no card payment of this "
                          "folio. Send an Idempotency-Key to retry safely.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
                body: RefundIn) -> None:  # noqa: A002
        folio, row = refunds.refund(req.context.ctx, property_id, id, body,
                                    payments=getattr(self.deps.platform, "payments", None),
                                    ledger=getattr(self.deps.platform, "ledger", None))
        resp.media = RefundResultOut(refund=refund_out(row), folio=folio)
        resp.status = 202 if row.status == "PENDING" else 201


ROUTES = [
    Route("/v1/properties/{property_id:uuid}/folios/{id:uuid}/refunds", FolioRefunds),
]
