"""Reservations: create, read, list, edit, cancel, pre-check-in, walk-in, boarding pass, and the
comments, messages and service requests of a reservation (scope `reservations`)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.folds import hand_back_reservation
from pms.api.route import Route
from pms.api.spec import endpoint
from pms.queries import reservations as q
from pms.schemas import reservations as s
from pms.schemas.common import ListQuery, Page
from pms.services.kiosk import kiosk_walk_in
from pms.services.reservations import reservation_notes, reservations

BASE = "/v1/properties/{property_id:uuid}"
ITEM = BASE + "/reservations/{id:uuid}"


def _location(property_id: Any, row: Any) -> str:
    return f"/v1/properties/{property_id}/reservations/{row.id}"


class Reservations:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("reservations:read", query=s.ReservationQuery, response=Page[s.ReservationOut],
              guest="own",
              summary="List reservations",
              description="Filters: guest_profile_id, upcoming (arrival_date on or after the "
                          "property's today and not CANCELLED/CHECKED_OUT/NO_SHOW), last_name "
                          "(case-insensitive, exact), confirmation, status, arrival_date, "
                          "block_id (a room block's reservations).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: s.ReservationQuery) -> None:
        page = q.list_reservations(req.context.ctx, property_id, query)
        resp.media = Page(data=[s.reservation_out(r) for r in page.items],
                          next_cursor=page.next_cursor)

    @endpoint("reservations:write", body=s.ReservationIn, response=s.ReservationOut, status=201,
              errors=(409, 422, 503), summary="Create a reservation", guest="own",
              also_status=(200,),
              description="Prices the stay and sells its nights in one transaction. A "
                          "confirmation_number that already exists returns that reservation "
                          "with 200 (duplicate submissions fold; inventory is taken once) to the "
                          "caller that made it, holding reservations:read; anyone else gets "
                          "409 confirmation_number_taken.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.ReservationIn) -> None:
        row, created = reservations.create_reservation(req.context.ctx, property_id, body)
        if not created:
            hand_back_reservation(req.context.ctx, row)
        resp.media = s.reservation_out(row)
        resp.status = 201 if created else 200
        resp.location = _location(property_id, row)

    @endpoint("reservations:read", response=s.ReservationOut, summary="One reservation",
              guest="own")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any) -> None:  # noqa: A002
        resp.media = s.reservation_out(reservations.get_reservation(req.context.ctx,
                                                                    property_id, id))

    @endpoint("reservations:write", body=s.ReservationPatch, response=s.ReservationOut,
              errors=(409, 422, 503), guest="own", summary="Edit dates, occupancy, room type or rate plan",
              description="Re-checked and re-priced atomically. 409 reservation_not_editable "
                          "for CANCELLED, CHECKED_OUT and NO_SHOW.")
    def on_put_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any, body: s.ReservationPatch) -> None:  # noqa: A002
        resp.media = s.reservation_out(reservations.edit_reservation(
            req.context.ctx, property_id, id, body))


class Cancel:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("reservations:write", response=s.ReservationOut, errors=(409, 503),
              summary="Cancel a reservation", guest="own",
              description="Releases the nights; cancellation_fee follows the rate plan's "
                          "cancellation_policy (deadline_hours before the arrival day).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any) -> None:  # noqa: A002
        resp.media = s.reservation_out(reservations.cancel_reservation(
            req.context.ctx, property_id, id))


class PreCheckIn:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("reservations:write", body=s.RegistrationIn, response=s.ReservationOut,
              errors=(409, 422), summary="Store the pre-arrival registration", guest="own")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.RegistrationIn) -> None:  # noqa: A002
        resp.media = s.reservation_out(reservation_notes.pre_check_in(
            req.context.ctx, property_id, id, body))


class WalkIn:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("reservations:write", body=s.WalkInIn, response=s.WalkInOut, status=201,
              errors=(402, 409, 422), summary="Walk-in (express booking)", kiosk="stand_in",
              description="A CONFIRMED reservation arriving today, source WALKIN, channel "
                          "KIOSK, from the given or the first available room type; then use "
                          "the normal check-in route. With payment_method_id (required for "
                          "kiosk tokens) the stay's total is pre-authorized on its guest folio "
                          "(a payment intent with manual confirmation) before the answer: "
                          "`guarantee` AUTHORIZED, or PENDING when the payments service did "
                          "not answer; a declined guarantee cancels the reservation (402 "
                          "payment_declined). At a kiosk: WALK_IN mode (409 "
                          "kiosk_mode_disabled), no lockdown (409 kiosk_locked), public plans "
                          "only.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.WalkInIn) -> None:
        row, payment = kiosk_walk_in.walk_in(req.context.ctx, property_id, body,
                                             payments_client=getattr(self.deps.platform,
                                                                     "payments", None))
        resp.media = kiosk_walk_in.walk_in_out(row, payment)
        resp.status = 201
        resp.location = _location(property_id, row)


class BoardingPass:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("reservations:read", response=s.BoardingPassOut,
              summary="Boarding pass: room, dates, guest, key count", guest="own")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        resp.media = q.boarding_pass(req.context.ctx, property_id, id)


def _child_resource(name: str, body_in: type, out: type, lister: Any, creator: Any,
                    render: Any, label: str, guest: str) -> type:
    class Resource:
        def __init__(self, deps: Any) -> None:
            self.deps = deps

        @endpoint("reservations:read", query=ListQuery, response=Page[out],
                  summary=f"List the {label}s of a reservation", guest=guest)
        def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                   id: Any, query: ListQuery) -> None:  # noqa: A002
            page = lister(req.context.ctx, property_id, id, limit=query.limit,
                          cursor=query.cursor)
            resp.media = Page(data=[render(r) for r in page.items], next_cursor=page.next_cursor)

        @endpoint("reservations:write", body=body_in, response=out, status=201,
                  summary=f"Add a {label} to a reservation", guest=guest)
        def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any, body: Any) -> None:  # noqa: A002
            resp.media = render(creator(req.context.ctx, property_id, id, body))
            resp.status = 201

    Resource.__name__ = Resource.__qualname__ = name
    return Resource


Comments = _child_resource("Comments", s.CommentIn, s.CommentOut, q.list_comments,
                           reservation_notes.add_comment, s.comment_out, "comment",
                           guest="deny")  # staff notes: never shown to the guest
Messages = _child_resource("Messages", s.MessageIn, s.MessageOut, q.list_messages,
                           reservation_notes.add_message, s.message_out, "message",
                           guest="own")
ServiceRequests = _child_resource("ServiceRequests", s.ServiceRequestIn, s.ServiceRequestOut,
                                  q.list_service_requests, reservation_notes.add_service_request,
                                  s.service_request_out, "service request", guest="own")

ROUTES = [
    Route(BASE + "/reservations", Reservations),
    Route(ITEM, Reservations, "item"),
    Route(ITEM + "/cancel", Cancel),
    Route(ITEM + "/pre-check-in", PreCheckIn),
    Route(ITEM + "/boarding-pass", BoardingPass),
    Route(ITEM + "/comments", Comments),
    Route(ITEM + "/messages", Messages),
    Route(ITEM + "/service-requests", ServiceRequests),
    Route(BASE + "/walk-in", WalkIn),
]
