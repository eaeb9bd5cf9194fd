"""Inventory over HTTP: counts and sell limits per room type and night, and maintenance periods
(out of order / out of service). Scope `inventory`."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.queries import inventory as q
from pms.schemas import inventory as s
from pms.schemas.common import Page
from pms.services.housekeeping import maintenance
from pms.services.inventory import inventory

BASE = "/v1/properties/{property_id:uuid}"


class Inventory:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("inventory:read", query=s.InventoryQuery, response=s.InventoryOut,
              errors=(404, 422), summary="Inventory per room type and night",
              description="from_date..to_date inclusive, at most 366 days. physical counts the "
                          "rooms of the type; out_of_order / out_of_service count active "
                          "maintenance periods; sellable = min(physical - out_of_order - "
                          "out_of_service, sell_limit) - sold, never below zero.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: s.InventoryQuery) -> None:
        resp.media = q.list_inventory(req.context.ctx, property_id, query)

    @endpoint("inventory:write", body=s.SellLimitIn, response=s.SellLimitOut,
              errors=(404, 422, 503), summary="Set or clear the sell limit of a room type",
              description="The limit can lower what may be sold, even below what is already "
                          "sold; it never raises availability above the rooms in service. "
                          "null removes it. Answers the inventory of the range after the change "
                          "and `affected_blocks`: the room blocks holding rooms on nights where "
                          "rooms sold and held now exceed the limit (the limit is kept, the "
                          "blocks keep their rooms).")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               body: s.SellLimitIn) -> None:
        resp.media = inventory.set_sell_limits(req.context.ctx, property_id, body)


class MaintenancePeriods:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("inventory:read", query=s.MaintenanceQuery, response=Page[s.MaintenanceOut],
              summary="List maintenance periods")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: s.MaintenanceQuery) -> None:
        page, rooms = maintenance.list_maintenance(req.context.ctx, property_id, query)
        resp.media = Page(data=[s.maintenance_out(m, rooms[m.room_id]) for m in page.items],
                          next_cursor=page.next_cursor)

    @endpoint("inventory:write", body=s.MaintenanceIn, response=s.MaintenanceCreatedOut,
              status=201,
              errors=(404, 409, 422, 503), summary="Take a room out of order or out of service",
              description="For the nights from_date..to_date (inclusive). Refused with 409 "
                          "maintenance_conflict, listing `reservations` in the way and the "
                          "`nights` concerned, when the room is held by a live reservation on "
                          "those nights, when a night would have more rooms sold than rooms "
                          "left in service, or when the room already has an active period "
                          "overlapping them. An out-of-order period that leaves a night with "
                          "more rooms sold and held by room blocks than rooms in service is "
                          "kept: `affected_blocks` names the blocks holding rooms on those "
                          "nights.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.MaintenanceIn) -> None:
        row, room, affected = maintenance.create_maintenance(req.context.ctx, property_id,
                                                             body, with_blocks=True)
        resp.media = s.MaintenanceCreatedOut(
            **{f: getattr(s.maintenance_out(row, room), f)
               for f in s.MaintenanceOut.__struct_fields__}, affected_blocks=affected)
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/maintenance/{row.id}"

    @endpoint("inventory:read", response=s.MaintenanceOut, summary="One maintenance period")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any) -> None:  # noqa: A002
        row, room = maintenance.get_maintenance(req.context.ctx, property_id, id)
        resp.media = s.maintenance_out(row, room)

    @endpoint("inventory:write", status=204, errors=(404, 503),
              summary="End a maintenance period (the room is back in service)",
              description="The period stays listed with active=false.")
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       id: Any) -> None:  # noqa: A002
        maintenance.end_maintenance(req.context.ctx, property_id, id)
        resp.status = 204


ROUTES = [
    Route(BASE + "/inventory", Inventory),
    Route(BASE + "/maintenance", MaintenancePeriods),
    Route(BASE + "/maintenance/{id:uuid}", MaintenancePeriods, "item"),
]
