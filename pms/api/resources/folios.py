"""Folio reads: the folio of a reservation, and the folio of the in-house stay in a room."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.spec import endpoint
from pms.routes import Route
from pms.schemas.folios import FolioByRoomQuery, FolioOut
from pms.services import folios


class ReservationFolio:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", response=FolioOut, summary="Folio of the reservation",
              description="The guest folio (opened at check-in) with its charges, payments and "
                          "balance. 404 before check-in.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        resp.media = folios.get_reservation_folio(req.context.ctx, property_id, id)


class FoliosByRoom:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("folios:read", query=FolioByRoomQuery, response=FolioOut,
              summary="Folio of the in-house stay in a room",
              description="Opens the OPEN folio of the CHECKED_IN stay in `room_number`.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: FolioByRoomQuery) -> None:
        resp.media = folios.folio_for_room(req.context.ctx, property_id, query.room_number)


ROUTES = [
    Route("/v1/properties/{property_id:uuid}/reservations/{id:uuid}/folio", ReservationFolio),
    Route("/v1/properties/{property_id:uuid}/folios", FoliosByRoom),
]
