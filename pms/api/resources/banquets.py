"""Function spaces (scope `properties`), event resource items (`properties`), banquet events,
their transitions, resources and posting (scope `events`). Staff only."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.api.transitions import transition_resource
from pms.schemas import banquets as s
from pms.schemas.common import ListQuery, Page
from pms.services.groups import banquets, function_diary

BASE = "/v1/properties/{property_id:uuid}"


class FunctionSpaces:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("properties:read", query=ListQuery, response=Page[s.FunctionSpaceOut],
              summary="List function spaces")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: ListQuery) -> None:
        page = banquets.list_spaces(req.context.ctx, property_id, query)
        resp.media = Page(data=[banquets.space_out(r) for r in page.items],
                          next_cursor=page.next_cursor)

    @endpoint("properties:write", body=s.FunctionSpaceIn, response=s.FunctionSpaceOut,
              status=201, errors=(409,), summary="Create a function space",
              description="Capacities per setup style; a combination lists two or more "
                          "element spaces (booking it books each element); out-of-order "
                          "periods refuse events over them.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.FunctionSpaceIn) -> None:
        row = banquets.create_space(req.context.ctx, property_id, body)
        resp.media = banquets.space_out(row)
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/function-spaces/{row.id}"

    @endpoint("properties:read", response=s.FunctionSpaceOut, summary="One function space")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any) -> None:  # noqa: A002
        resp.media = banquets.space_out(banquets.get_space(req.context.ctx, property_id, id))

    @endpoint("properties:write", body=s.FunctionSpacePatch, response=s.FunctionSpaceOut,
              errors=(409,), summary="Change a function space (fields left out keep their values)")
    def on_put_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any, body: s.FunctionSpacePatch) -> None:  # noqa: A002
        resp.media = banquets.space_out(
            banquets.update_space(req.context.ctx, property_id, id, body))

    on_patch_item = on_put_item

    @endpoint("properties:write", status=204, errors=(409,),
              summary="Delete a function space no event or combination uses")
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       id: Any) -> None:  # noqa: A002
        banquets.delete_space(req.context.ctx, property_id, id)
        resp.status = 204


class SpaceSlots:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("events:read", query=s.SpaceSlotsQuery, response=s.SpaceSlotsOut,
              errors=(404, 422), summary="A function space's busy and free slots",
              description="Over [from_at, to_at) (at most 31 days): the intervals booked by "
                          "holding events (setup and tear-down included) or out of order, on "
                          "the space or any part of a combination, and the free ones between "
                          "them.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any, query: s.SpaceSlotsQuery) -> None:  # noqa: A002
        resp.media = function_diary.free_slots(req.context.ctx, property_id, id, query)


class ResourceItems:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("properties:read", query=ListQuery, response=Page[s.ResourceItemOut],
              summary="List event resource items (equipment, menus) with their stock")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: ListQuery) -> None:
        page = banquets.list_items(req.context.ctx, property_id, query)
        resp.media = Page(data=[banquets.item_out(r) for r in page.items],
                          next_cursor=page.next_cursor)

    @endpoint("properties:write", body=s.ResourceItemIn, response=s.ResourceItemOut,
              status=201, errors=(409,), summary="Create an event resource item")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.ResourceItemIn) -> None:
        row = banquets.create_item(req.context.ctx, property_id, body)
        resp.media = banquets.item_out(row)
        resp.status = 201

    @endpoint("properties:write", body=s.ResourceItemPatch, response=s.ResourceItemOut,
              errors=(409,), summary="Rename, reprice or restock an event resource item")
    def on_put_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any, body: s.ResourceItemPatch) -> None:  # noqa: A002
        resp.media = banquets.item_out(
            banquets.update_item(req.context.ctx, property_id, id, body))

    on_patch_item = on_put_item


class Events:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("events:read", query=s.BanquetEventQuery, response=Page[s.BanquetEventOut],
              errors=(422,), summary="List banquet events (by status, space, time window)",
              description="With from_at/to_at, the function diary: the events whose time "
                          "[start_at, end_at) overlaps the window.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: s.BanquetEventQuery) -> None:
        page = function_diary.list_events(req.context.ctx, property_id, query)
        resp.media = Page(data=[banquets.event_out(r) for r in page.items],
                          next_cursor=page.next_cursor)

    @endpoint("events:write", body=s.BanquetEventIn, response=s.BanquetEventOut, status=201,
              summary="Create a banquet event (INQUIRY)",
              description="Attendees must fit the setup style's capacity of the space (422). "
                          "`block_id` links the event to a room block of the property: its "
                          "dates must lie inside the block's, give or take two shoulder days "
                          "(422 block_id).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.BanquetEventIn) -> None:
        row = banquets.create_event(req.context.ctx, property_id, body)
        resp.media = banquets.event_out(row)
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/events/{row.id}"

    @endpoint("events:read", response=s.BanquetEventOut, summary="One banquet event")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any) -> None:  # noqa: A002
        resp.media = banquets.event_out(banquets.get_event(req.context.ctx, property_id, id))

    @endpoint("events:write", body=s.BanquetEventPatch, response=s.BanquetEventOut,
              errors=(409,), summary="Change a banquet event",
              description="409 space_taken (naming conflicting_event_id), stock_exhausted, "
                          "space_out_of_order, or invalid_transition for a CLOSED, CANCELLED "
                          "or LOST event.")
    def on_put_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any, body: s.BanquetEventPatch) -> None:  # noqa: A002
        resp.media = banquets.event_out(
            banquets.update_event(req.context.ctx, property_id, id, body))

    on_patch_item = on_put_item

    @endpoint("events:write", status=204, errors=(409,),
              summary="Delete a banquet event that has posted nothing")
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       id: Any) -> None:  # noqa: A002
        banquets.delete_event(req.context.ctx, property_id, id)
        resp.status = 204


def _move_event(ctx: Any, property_id: Any, event_id: Any, trigger: str) -> s.BanquetEventOut:
    return banquets.event_out(banquets.transition(ctx, property_id, event_id, trigger))


EventTransition = transition_resource(
    "EventTransition", banquets.TRIGGERS, _move_event, scope="events:write",
    response=s.BanquetEventOut, errors=(409,), summary="Move a banquet event: {trigger}",
    description="Per EVENT_MACHINE (409 invalid_transition otherwise); into "
                "TENTATIVE, DEFINITE or ACTUAL the event books its space (409 "
                "space_taken naming conflicting_event_id).")


class EventResources:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("events:read", response=s.EventResourceList, summary="The event's resources")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        resp.media = s.EventResourceList(
            data=banquets.list_resources(req.context.ctx, property_id, id))

    @endpoint("events:write", body=s.EventResourceIn, response=s.EventResourceOut, status=201,
              errors=(409,), summary="Book equipment or a menu for the event",
              description="A repeat for the same item sets its quantity. While the event "
                          "deducts, the item's stock bounds overlapping bookings (409 "
                          "stock_exhausted).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.EventResourceIn) -> None:  # noqa: A002
        resp.media = banquets.book_resource(req.context.ctx, property_id, id, body)
        resp.status = 201

    @endpoint("events:write", query=s.EventResourceQuery, status=204, errors=(409,),
              summary="Release the event's booking of an item")
    def on_delete(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                  id: Any, query: s.EventResourceQuery) -> None:  # noqa: A002
        banquets.release_resource(req.context.ctx, property_id, id, query.item_id)
        resp.status = 204


class EventPost:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("events:write", response=s.EventPostResult, errors=(409,),
              summary="Post an ACTUAL event's resources to its folio (idempotent)",
              description="Per event and resource only the difference from what was posted "
                          "is posted (a change of actual attendees posts the difference).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any) -> None:  # noqa: A002
        resp.media = banquets.post_event(req.context.ctx, property_id, id)


ROUTES = [
    Route(BASE + "/function-spaces", FunctionSpaces),
    Route(BASE + "/function-spaces/{id:uuid}", FunctionSpaces, "item"),
    Route(BASE + "/function-spaces/{id:uuid}/slots", SpaceSlots),
    Route(BASE + "/event-resource-items", ResourceItems),
    Route(BASE + "/event-resource-items/{id:uuid}", ResourceItems, "item"),
    Route(BASE + "/events", Events),
    Route(BASE + "/events/{id:uuid}", Events, "item"),
    Route(BASE + "/events/{id:uuid}/resources", EventResources),
    Route(BASE + "/events/{id:uuid}/post", EventPost),
    *[Route(BASE + f"/events/{{id:uuid}}/{t}", EventTransition, t) for t in banquets.TRIGGERS],
]
