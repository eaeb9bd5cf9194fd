"""Housekeeping routes: the room board, hk_status marks per room, and tasks (CONTRACT §6)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.common import Page
from pms.schemas.housekeeping import (
    HkStatusIn,
    RoomBoardEntry,
    RoomBoardQuery,
    TaskIn,
    TaskOut,
    TaskQuery,
    TaskUpdateIn,
)
from pms.services.housekeeping import housekeeping as hk

BASE = "/v1/properties/{property_id:uuid}/housekeeping"


class RoomBoard:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("housekeeping:read", query=RoomBoardQuery, response=Page[RoomBoardEntry],
              summary="Room board: every room with its hk_status and open tasks")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: RoomBoardQuery) -> None:
        page = hk.room_board(req.context.ctx, property_id, query)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("housekeeping:write", body=HkStatusIn, response=RoomBoardEntry, errors=(409,),
              summary="Change a room's hk_status",
              description="CLEAN, DIRTY, INSPECTED, OUT_OF_ORDER, OUT_OF_SERVICE. Moves outside "
                          "the transition table answer 409 invalid_transition (an out-of-order "
                          "room comes back DIRTY before it can be CLEAN). Repeating the current "
                          "status is not an error and writes nothing.")
    def on_put_room(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    room_number: str, body: HkStatusIn) -> None:
        resp.media = hk.set_hk_status(req.context.ctx, property_id, room_number, body)


class Tasks:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("housekeeping:read", query=TaskQuery, response=Page[TaskOut],
              summary="Housekeeping tasks of a property")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: TaskQuery) -> None:
        page = hk.list_tasks(req.context.ctx, property_id, query)
        resp.media = Page(data=page.items, next_cursor=page.next_cursor)

    @endpoint("housekeeping:write", body=TaskIn, response=TaskOut, status=201,
              summary="Create a task by hand (inspection, deep clean, ...)")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: TaskIn) -> None:
        out = hk.create_task(req.context.ctx, property_id, body)
        resp.media = out
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/housekeeping/tasks/{out.id}"

    @endpoint("housekeeping:read", response=TaskOut, summary="One housekeeping task")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any) -> None:  # noqa: A002
        resp.media = hk.get_task(req.context.ctx, property_id, id)

    @endpoint("housekeeping:write", body=TaskUpdateIn, response=TaskOut, errors=(409,),
              summary="Assign, annotate or move a task (OPEN, IN_PROGRESS, DONE, CANCELLED)")
    def on_put_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any, body: TaskUpdateIn) -> None:  # noqa: A002
        resp.media = hk.update_task(req.context.ctx, property_id, id, body)


ROUTES = [
    Route(BASE, RoomBoard),
    Route(BASE + "/tasks", Tasks),
    Route(BASE + "/tasks/{id:uuid}", Tasks, "item"),
    Route(BASE + "/{room_number}", RoomBoard, "room"),
]
