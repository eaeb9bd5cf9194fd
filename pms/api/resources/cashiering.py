"""Transaction codes (`/transaction-codes`) and gift vouchers (`/gift-vouchers`) of a property.

Transaction codes reuse the catalog's property-child resource (list, create, get, update,
delete); vouchers are issued, listed (optionally by code) and read with their balance. Redeeming
a voucher is a folio payment with method VOUCHER (see the folio resources).
"""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.resources.catalog import child_resource
from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas import cashiering as s
from pms.schemas.common import Page
from pms.services.cashiering import vouchers
from pms.services.cashiering.transaction_codes import TRANSACTION_CODE

TransactionCodes, _tc = child_resource(TRANSACTION_CODE, "transaction-codes", "folios",
                                       s.TransactionCodeIn, s.TransactionCodePatch,
                                       s.TransactionCodeOut)


class GiftVouchers:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", query=s.VoucherQuery, response=Page[s.GiftVoucherOut],
              summary="List gift vouchers (filter by code to look one up)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: s.VoucherQuery) -> None:
        page = vouchers.list_vouchers(req.context.ctx, property_id, code=query.code,
                                      limit=query.limit, cursor=query.cursor)
        resp.media = Page(data=[s.gift_voucher_out(v) for v in page.items],
                          next_cursor=page.next_cursor)

    @endpoint("folios:write", body=s.GiftVoucherIn, response=s.GiftVoucherOut, status=201,
              summary="Issue a gift voucher", errors=(409,))
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.GiftVoucherIn) -> None:
        row = vouchers.issue_voucher(req.context.ctx, property_id, body)
        resp.media = s.gift_voucher_out(row)
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/gift-vouchers/{row.id}"

    @endpoint("folios:read", response=s.GiftVoucherOut, summary="One gift voucher and its balance")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any) -> None:  # noqa: A002
        resp.media = s.gift_voucher_out(vouchers.get_voucher(req.context.ctx, property_id, id))


_base = "/v1/properties/{property_id:uuid}/gift-vouchers"
ROUTES = [*_tc, Route(_base, GiftVouchers), Route(_base + "/{id:uuid}", GiftVouchers, "item")]
