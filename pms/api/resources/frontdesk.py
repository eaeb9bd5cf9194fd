"""Front desk: check-in, check-out, revert, no-show, split, room assignment and the in-house list
(scope `frontdesk`)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.queries import reservations as q
from pms.schemas import reservations as s
from pms.schemas.common import ListQuery, Page
from pms.services.frontdesk import checkin, checkout
from pms.services.reservations import stays

BASE = "/v1/properties/{property_id:uuid}"
ITEM = BASE + "/reservations/{id:uuid}"


class CheckIn:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:write", body=s.CheckInIn, response=s.ReservationOut,
              errors=(409, 422, 503), summary="Check in", guest="own", kiosk="session",
              description="Send {} to take the assigned room or the first free room of the "
                          "booked type. The room must be of that type, vacant and in order; "
                          "an OPEN folio is opened with the stay.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.CheckInIn) -> None:  # noqa: A002
        resp.media = s.reservation_out(checkin.check_in(req.context.ctx, property_id, id, body))


class CheckOut:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:write", response=s.ReservationOut, errors=(409, 503),
              summary="Check out", guest="own", kiosk="session",
              description="Posts the room nights not yet charged; 409 folio_not_closable (with "
                          "balance and currency) while the folio has a balance, else closes "
                          "it, revokes active keys and leaves the room vacant and dirty. A stay "
                          "billed to a company settles the company's share first: "
                          "BILL_TO_COMPANY moves it to the company's receivable account (409 "
                          "credit_limit_exceeded over its credit limit), POSTPAY charges the "
                          "company's card after the stay.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any) -> None:  # noqa: A002
        resp.media = s.reservation_out(checkout.check_out(
            req.context.ctx, property_id, id, payments=getattr(self.deps.platform, "payments", None),
            ledger=getattr(self.deps.platform, "ledger", None)))


class Revert:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:write", body=s.RevertIn, response=s.ReservationOut, errors=(409,),
              summary="Revert a check-in or check-out of the current business date",
              description="CHECKED_IN goes back to CONFIRMED, CHECKED_OUT back to CHECKED_IN; "
                          "the reason is kept on the audit row. A check-out's direct bill to a "
                          "company is reversed: the folio owes the amount again and the "
                          "company's receivable account drops by it.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.RevertIn) -> None:  # noqa: A002
        resp.media = s.reservation_out(checkout.revert(
            req.context.ctx, property_id, id, body,
            ledger=getattr(self.deps.platform, "ledger", None)))


class NoShow:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:write", response=s.ReservationOut, errors=(409,),
              summary="Mark a reservation NO_SHOW (releases its nights; no-show fee)")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any) -> None:  # noqa: A002
        resp.media = s.reservation_out(stays.no_show(req.context.ctx, property_id, id))


class Split:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:write", body=s.SplitIn, response=s.SplitOut, status=201,
              errors=(409, 422), summary="Split a stay into two consecutive reservations")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.SplitIn) -> None:  # noqa: A002
        first, second = stays.split(req.context.ctx, property_id, id, body)
        resp.media = s.SplitOut(reservation=s.reservation_out(first),
                                new_reservation=s.reservation_out(second))
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/reservations/{second.id}"


class RoomAssignment:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:write", body=s.RoomAssignIn, response=s.ReservationOut,
              errors=(409, 422), summary="Assign a room, or move an in-house guest")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any, body: s.RoomAssignIn) -> None:  # noqa: A002
        resp.media = s.reservation_out(stays.assign_room(req.context.ctx, property_id, id, body))


class InHouse:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("frontdesk:read", query=ListQuery, response=Page[s.ReservationOut],
              summary="In-house list (CHECKED_IN stays)",
              description="Staff only: guest sessions get 403 guest_not_allowed.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: ListQuery) -> None:
        page = q.in_house(req.context.ctx, property_id, limit=query.limit, cursor=query.cursor)
        resp.media = Page(data=[s.reservation_out(r) for r in page.items],
                          next_cursor=page.next_cursor)


ROUTES = [
    Route(ITEM + "/check-in", CheckIn),
    Route(ITEM + "/check-out", CheckOut),
    Route(ITEM + "/revert", Revert),
    Route(ITEM + "/no-show", NoShow),
    Route(ITEM + "/split", Split),
    Route(ITEM + "/room", RoomAssignment),
    Route(BASE + "/in-house", InHouse),
]
