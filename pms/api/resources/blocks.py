"""Room blocks (scope `blocks`): the block and its allocation grid, transitions with
dry runs, pick-up, cut-off, wash and the pick-up receipt. Staff only."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.folds import hand_back_reservation
from pms.api.resources.jobs import started_or_done
from pms.api.route import Route
from pms.api.spec import endpoint
from pms.api.transitions import transition_resource
from pms.domain.states import BLOCK_TRIGGERS
from pms.schemas import room_blocks as s
from pms.schemas.common import Page
from pms.schemas.jobs import JobOut
from pms.schemas.reservations import ReservationOut, reservation_out
from pms.services.groups import (
    block_attrition,
    block_bulk,
    block_changes,
    block_dates,
    block_master_folio,
    pickups,
    room_blocks,
    rooming_lists,
)

BASE = "/v1/properties/{property_id:uuid}/blocks"
HELD = ("Unpicked rooms of a deducting block (DEFINITE, ACTUAL; TENTATIVE with the property "
        "setting blocks.tentative_deducts_inventory) are held out of house availability: "
        "sellable = min(physical - OOO - OOS, sell limit) - sold - held by blocks.")


class Blocks:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:read", query=s.BlockQuery, response=Page[s.BlockOut],
              summary="List room blocks (by status, arrival range, code, company)",
              description="Each block with its grid (one read for the page's grids).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: s.BlockQuery) -> None:
        data, cursor = room_blocks.list_blocks(req.context.ctx, property_id, query)
        resp.media = Page(data=data, next_cursor=cursor)

    @endpoint("blocks:write", body=s.BlockIn, response=s.BlockOut, status=201, errors=(409,),
              summary="Create a room block (INQUIRY) with its allocation grid",
              description="The cut-off date defaults to the arrival date. " + HELD)
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.BlockIn) -> None:
        out = room_blocks.create_block(req.context.ctx, property_id, body)
        resp.media = out
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/blocks/{out.id}"

    @endpoint("blocks:read", response=s.BlockOut, summary="One room block with its grid")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any) -> None:  # noqa: A002
        resp.media = room_blocks.get_block(req.context.ctx, property_id, id)

    @endpoint("blocks:write", body=s.BlockPatch, response=s.BlockOut, errors=(409,),
              summary="Rename a block, move its cut-off date, change its company")
    def on_put_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any, body: s.BlockPatch) -> None:  # noqa: A002
        resp.media = room_blocks.update_block(req.context.ctx, property_id, id, body)

    on_patch_item = on_put_item

    @endpoint("blocks:write", status=204, errors=(409,),
              summary="Delete an inquiry, or a cancelled or lost block with nothing picked up")
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       id: Any) -> None:  # noqa: A002
        room_blocks.delete_block(req.context.ctx, property_id, id)
        resp.status = 204


def _move_block(ctx: Any, property_id: Any, block_id: Any, trigger: str, *,
                query: s.TransitionQuery) -> s.BlockChangeOut:
    return block_changes.transition(ctx, property_id, block_id, trigger, dry_run=query.dry_run,
                                  cancel_picked=query.cancel_picked)


BlockTransition = transition_resource(
    "BlockTransition", BLOCK_TRIGGERS, _move_block, scope="blocks:write",
    query=s.TransitionQuery, response=s.BlockChangeOut, errors=(409,),
    summary="Move a room block: {trigger}",
    description="Per BLOCK_MACHINE (409 invalid_transition otherwise); dry_run=true "
                "answers what would happen and changes nothing. Going DEFINITE "
                "re-checks availability under the booking's night locks (409 "
                "room_type_unavailable naming the nights short); release and cancel "
                "with picked-up rooms are 409 block_has_pickup (cancel: send "
                "cancel_picked=true to cancel them too). " + HELD)


class BlockAllocation:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:write", body=s.AllocationIn, query=s.DryRunQuery,
              response=s.BlockChangeOut, errors=(409,),
              summary="Set cells of the block's allocation grid",
              description="Never below the rooms picked up (409 allocation_below_pickup); "
                          "more rooms held are checked under the night locks (409 "
                          "room_type_unavailable).")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any, body: s.AllocationIn, query: s.DryRunQuery) -> None:  # noqa: A002
        resp.media = block_changes.set_allocation(req.context.ctx, property_id, id, body,
                                                dry_run=query.dry_run)


class BlockWash:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:write", body=s.WashIn, query=s.DryRunQuery, response=s.BlockChangeOut,
              errors=(409,), summary="Wash the block: reduce unpicked rooms by rooms or percent")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.WashIn, query: s.DryRunQuery) -> None:  # noqa: A002
        resp.media = block_changes.wash(req.context.ctx, property_id, id, body,
                                      dry_run=query.dry_run)


class BlockCutOff:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:write", query=s.DryRunQuery, response=s.BlockChangeOut, errors=(409,),
              summary="Cut the block off now: unpicked rooms go back to the house",
              description="Irreversible (a repeat is 409 block_cut_off); the night audit cuts "
                          "off blocks whose cut-off date has come.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, query: s.DryRunQuery) -> None:  # noqa: A002
        resp.media = block_changes.cut_off(req.context.ctx, property_id, id,
                                         dry_run=query.dry_run)


class BlockReservations:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:read", query=s.BlockReservationQuery, response=Page[ReservationOut],
              errors=(404,), summary="The block's reservations (its rooming list)",
              description="Every reservation picked up into the block, whatever its status "
                          "(filter by status), in cursor pages; the same rows as GET "
                          ".../reservations?block_id=.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any, query: s.BlockReservationQuery) -> None:  # noqa: A002
        page = room_blocks.list_block_reservations(req.context.ctx, property_id, id, query)
        resp.media = Page(data=[reservation_out(r) for r in page.items],
                          next_cursor=page.next_cursor)

    @endpoint("blocks:write", body=s.PickupIn, response=s.PickupOut, status=201,
              also_status=(200,),
              errors=(409,), summary="Pick up a room from the block (a reservation in it)",
              description="At the block's rate plan, dates inside the block's. A held room "
                          "becomes a sold one (house availability unchanged); never beyond "
                          "the allocation (409 block_allocation_exhausted naming the nights). "
                          "A confirmation_number already picked up in this block answers that "
                          "reservation with 200 (a repeat folds); one of a reservation outside "
                          "the block is refused (409 confirmation_number_taken).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.PickupIn) -> None:  # noqa: A002
        row, created = pickups.pick_up_folding(req.context.ctx, property_id, id, body)
        if not created:
            hand_back_reservation(req.context.ctx, row)
        resp.media = s.PickupOut(block_id=id, reservation=reservation_out(row))
        resp.status = 201 if created else 200
        resp.location = f"/v1/properties/{property_id}/reservations/{row.id}"


class BlockOverpick:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:write", body=s.PickupIn, response=s.PickupOut, status=201,
              also_status=(200,), errors=(409,), also=("blocks:overpick",),
              summary="Pick up a room beyond the block's allocation (an overpick)",
              description="Needs hotel:pms:blocks:overpick besides blocks:write (403 "
                          "missing_scope; the env's policies decide it per property). As a "
                          "pick-up, except that a night whose allocation is exhausted sells a "
                          "room from the house (409 room_type_unavailable naming the nights "
                          "when the house has none) and counts it picked above the allotment; "
                          "audited as block.overpicked. A cancelled overpicked room goes back "
                          "to the house.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.PickupIn) -> None:  # noqa: A002
        row, created = pickups.pick_up_folding(req.context.ctx, property_id, id, body,
                                                   overpick=True)
        if not created:
            hand_back_reservation(req.context.ctx, row)
        resp.media = s.PickupOut(block_id=id, reservation=reservation_out(row))
        resp.status = 201 if created else 200
        resp.location = f"/v1/properties/{property_id}/reservations/{row.id}"


class BlockDates:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:write", body=s.BlockDatesIn, query=s.DryRunQuery,
              response=s.BlockChangeOut, errors=(409,),
              summary="Move or extend the block's dates",
              description="The same number of nights at other dates moves the grid with "
                          "them (each night's allotment and own cut-off shift); other dates "
                          "keep the nights inside them, drop the rest and add new nights at "
                          "0 rooms (or as `allocation` says). The held rooms follow under "
                          "the night locks (409 room_type_unavailable naming the nights "
                          "short). Reservations of the block with a night outside the new "
                          "dates are 409 block_pickups_outside_dates naming them, unless "
                          "move_pickups=true on a move: every CONFIRMED one moves by the same "
                          "days with the block, in one transaction (each re-priced, with its "
                          "own event). " + HELD)
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.BlockDatesIn, query: s.DryRunQuery) -> None:  # noqa: A002
        resp.media = block_dates.change_dates(req.context.ctx, property_id, id, body,
                                              dry_run=query.dry_run)


class BlockMasterFolioSettle:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:write", response=s.MasterFolioSettledOut, errors=(409,),
              also=("folios:write",),
              summary="Settle the block's master folio when the block has ended",
              description="Closes the master folio (paid through the folio routes) once no "
                          "reservation of the block is CONFIRMED or CHECKED_IN (409 "
                          "block_in_progress naming them); a balance owed is 409 "
                          "folio_not_closable, a credit 409 folio_credit_balance, a closed "
                          "folio 409 folio_closed.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any) -> None:  # noqa: A002
        resp.media = block_master_folio.settle_master_folio(req.context.ctx, property_id, id)


class BlockRoomingList:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:write", body=s.RoomingListIn, response=JobOut, status=202,
              responses={200: s.RoomingListOut},
              summary="Load a rooming list into the block (a job)",
              description="202 with the job (poll /v1/jobs/{id}, its progress, then its "
                          "result: every row's outcome). dry_run=true answers 200 with every "
                          "row's outcome and changes nothing. all_or_nothing validates every "
                          "row first and applies none when one is refused; per_row applies "
                          "what it can. Refused rows name what blocks them (code, nights).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.RoomingListIn) -> None:  # noqa: A002
        started_or_done(resp, *rooming_lists.rooming_list(req.context.ctx, property_id, id, body))

    @endpoint("blocks:read", query=s.RoomingExportQuery, response=s.RoomingExportOut,
              errors=(404,), also_media=("text/csv",),
              summary="The block's rooming list as it stands (JSON, or CSV with format=csv)",
              description="Every stay of the block that is not cancelled or a no-show (or of "
                          "one `status`), by arrival and name, with its room number once "
                          "assigned. Each JSON row carries `pickup`, the row as POST "
                          ".../rooming-list takes it: a list sent back folds into the stays "
                          "it names. `format=csv`: the same rows as a spreadsheet (UTF-8, "
                          "header row; a cell starting with =, +, -, @ is written as text).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any, query: s.RoomingExportQuery) -> None:  # noqa: A002
        export = rooming_lists.export_rooming_list(req.context.ctx, property_id, id,
                                                   query.status)
        if query.format == "csv":
            resp.content_type = "text/csv; charset=utf-8"
            resp.data = rooming_lists.rooming_list_csv(export)
            resp.downloadable_as = f"rooming-list-{export.code}.csv"
        else:
            resp.media = export


BULK = ("202 with the job (poll /v1/jobs/{id}, its progress, then its result: every row's "
        "outcome); dry_run=true answers 200 with every row's outcome and changes nothing. "
        "Each reservation changes in its own short transaction with its own event and audit "
        "row; all_or_nothing validates every row first and applies none when one is refused; "
        "per_row applies what it can. Refused rows name what blocks them (code, nights). ")


class BlockBulkCancel:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:write", body=s.BulkCancelIn, response=JobOut, status=202,
              responses={200: s.BulkOut}, summary="Cancel the block's reservations (a job)",
              description=BULK + "Before the block's cut-off a cancelled room goes back to the "
                          "block, after it to the house. Left out, reservation_ids means every "
                          "CONFIRMED reservation of the block.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.BulkCancelIn) -> None:  # noqa: A002
        started_or_done(resp, *block_bulk.start_bulk(req.context.ctx, property_id, id,
                                                     block_bulk.BULK_CANCEL, body))


class BlockBulkDateChange:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:write", body=s.BulkDateChangeIn, response=JobOut, status=202,
              responses={200: s.BulkOut},
              summary="Move the block's reservations' dates (a job)",
              description=BULK + "shift_days, or arrival_date and departure_date; the new "
                          "dates lie inside the block's; each move re-checks the block's "
                          "allocation and the house's availability under the night locks and "
                          "is re-priced at the block's rate plan.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.BulkDateChangeIn) -> None:  # noqa: A002
        started_or_done(resp, *block_bulk.start_bulk(req.context.ctx, property_id, id,
                                                     block_bulk.BULK_DATE_CHANGE, body))


class BlockPickup:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:read", response=s.PickupReceiptOut,
              summary="The block's pick-up per room type and night, with the house's "
                      "availability arithmetic as a receipt")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        resp.media = pickups.pickup_receipt(req.context.ctx, property_id, id)


class BlockAttrition:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("blocks:read", response=s.AttritionOut, errors=(404,),
              summary="The block's pick-up and attrition: contracted, current, picked, "
                      "percentages, room revenue and wash history",
              description="contracted is the grid before washes (current + washed); "
                          "pickup_percent is picked of contracted; room_revenue sums the room "
                          "totals of the block's stays that are not cancelled or no-show; "
                          "washes lists every wash (when, who, rooms, reason), oldest first.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any) -> None:  # noqa: A002
        resp.media = block_attrition.attrition(req.context.ctx, property_id, id)


ROUTES = [
    Route(BASE, Blocks),
    Route(BASE + "/{id:uuid}", Blocks, "item"),
    Route(BASE + "/{id:uuid}/allocation", BlockAllocation),
    Route(BASE + "/{id:uuid}/wash", BlockWash),
    Route(BASE + "/{id:uuid}/cut-off", BlockCutOff),
    Route(BASE + "/{id:uuid}/reservations", BlockReservations),
    Route(BASE + "/{id:uuid}/pickup", BlockPickup),
    Route(BASE + "/{id:uuid}/attrition", BlockAttrition),
    Route(BASE + "/{id:uuid}/rooming-list", BlockRoomingList),
    Route(BASE + "/{id:uuid}/overpicks", BlockOverpick),
    Route(BASE + "/{id:uuid}/dates", BlockDates),
    Route(BASE + "/{id:uuid}/master-folio/settle", BlockMasterFolioSettle),
    Route(BASE + "/{id:uuid}/reservations/bulk-cancel", BlockBulkCancel),
    Route(BASE + "/{id:uuid}/reservations/bulk-date-change", BlockBulkDateChange),
    *[Route(BASE + f"/{{id:uuid}}/{t}", BlockTransition, t) for t in BLOCK_TRIGGERS],
]
