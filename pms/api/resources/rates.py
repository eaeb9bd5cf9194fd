"""Rates over HTTP: rate schedules and restrictions of a rate plan, property-wide restrictions,
promo codes and promo validation. Scope `rates` (validate is a read)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.errors import ValidationFailed
from pms.schemas import inventory as si
from pms.schemas import rates as s
from pms.schemas.common import ListQuery, Page
from pms.services.inventory import allotments
from pms.services.rates import rates
from pms.services.references import body_reference

BASE = "/v1/properties/{property_id:uuid}"


class RatePlanRates:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("rates:write", body=s.RatesIn, response=s.RatesWritten, errors=(404, 422),
              summary="Load nightly rates",
              description="Sets the amount of one room of each given type for every night "
                          "from_date..to_date (inclusive; optionally only some ISO weekdays) "
                          "under this rate plan. Existing nights are replaced. Amounts are in "
                          "the rate plan's currency, quantized to its minor units.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
               body: s.RatesIn) -> None:  # noqa: A002
        resp.media = rates.set_rates(req.context.ctx, property_id, id, body)

    @endpoint("rates:read", query=s.RatesQuery, response=s.RatesOut,
              summary="Nightly rates of a rate plan (at most 366 days)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
               query: s.RatesQuery) -> None:  # noqa: A002
        resp.media = rates.list_rates(req.context.ctx, property_id, id, query)


def _plan_id(path_id: Any, body: s.RestrictionIn) -> Any:
    if body.rate_plan_id is not None and body.rate_plan_id != path_id:
        raise ValidationFailed("rate_plan_id in the body differs from the path",
                               errors=[{"field": "rate_plan_id", "message": "leave it out here"}])
    return path_id


class RatePlanRestrictions:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("rates:write", body=s.RestrictionIn, response=s.RestrictionsWritten,
              errors=(404, 422), summary="Set the restrictions of a rate plan",
              description="Replaces this plan's restrictions for from_date..to_date (one room "
                          "type, or every room type when room_type_id is left out). min_los and "
                          "max_los are counted from the arrival date; closed applies to any "
                          "night of a stay; closed_to_departure applies to the departure date. "
                          "All flags off and no LOS clears the range.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
               body: s.RestrictionIn) -> None:  # noqa: A002
        resp.media = rates.set_restrictions(req.context.ctx, property_id, _plan_id(id, body), body)

    @endpoint("rates:read", query=s.RestrictionQuery, response=s.RestrictionsOut,
              summary="Restrictions that apply to a rate plan (its own and every plan's)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
               query: s.RestrictionQuery) -> None:  # noqa: A002
        resp.media = rates.list_restrictions(req.context.ctx, property_id, id, query)


class RatePlanAllotments:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("rates:write", body=si.AllotmentIn, response=si.AllotmentsOut,
              errors=(404, 422), summary="Set a rate plan's allotment of a room type",
              description="At most `allotment` rooms of the room type are sold on this "
                          "rate plan each night from_date..to_date (inclusive; optionally only "
                          "some ISO weekdays), besides the room type's own sell limit; null "
                          "removes it. A search leaves the plan out on a night with none left "
                          "(reason allotment_exhausted) and a booking past it is refused (409 "
                          "allotment_exhausted, nights). Cancels and no-shows give rooms back.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
               body: si.AllotmentIn) -> None:  # noqa: A002
        resp.media = allotments.set_allotments(req.context.ctx, property_id, id, body)

    @endpoint("rates:read", query=si.AllotmentQuery, response=si.AllotmentsOut,
              summary="A rate plan's allotments, sold and left (at most 366 days)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any, id: Any,
               query: si.AllotmentQuery) -> None:  # noqa: A002
        resp.media = allotments.list_allotments(req.context.ctx, property_id, id, query)


class PropertyRestrictions:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("rates:write", body=s.RestrictionIn, response=s.RestrictionsWritten,
              errors=(404, 422), summary="Set restrictions for one or every rate plan",
              description="Like the rate plan's restrictions; rate_plan_id left out means the "
                          "rule applies to every rate plan of the property.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               body: s.RestrictionIn) -> None:
        with body_reference("rate_plan_id", "no such rate plan"):  # the body names the plan
            resp.media = rates.set_restrictions(req.context.ctx, property_id, body.rate_plan_id,
                                                body)

    @endpoint("rates:read", query=s.RestrictionQuery, response=s.RestrictionsOut,
              summary="Every restriction of the property in a date range")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: s.RestrictionQuery) -> None:
        resp.media = rates.list_restrictions(req.context.ctx, property_id, None, query)


class PromoCodes:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("rates:read", query=ListQuery, response=Page[s.PromoCodeOut],
              summary="List promo codes")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: ListQuery) -> None:
        page = rates.list_promos(req.context.ctx, property_id, limit=query.limit,
                                 cursor=query.cursor)
        resp.media = Page(data=[s.promo_code_out(r) for r in page.items],
                          next_cursor=page.next_cursor)

    @endpoint("rates:write", body=s.PromoCodeIn, response=s.PromoCodeOut, status=201,
              errors=(409, 422), summary="Create a promo code",
              description="PERCENT discounts a percentage of the room total; FIXED takes an "
                          "amount (in `currency`, default the property's) off the room total "
                          "per stay. valid_from/valid_to bound the arrival date.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.PromoCodeIn) -> None:
        row = rates.create_promo(req.context.ctx, property_id, body)
        resp.media = s.promo_code_out(row)
        resp.status = 201
        resp.location = f"/v1/properties/{property_id}/promo-codes/{row.id}"

    @endpoint("rates:read", response=s.PromoCodeOut, summary="One promo code")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any) -> None:  # noqa: A002
        resp.media = s.promo_code_out(rates.get_promo(req.context.ctx, property_id, id))

    @endpoint("rates:write", body=s.PromoCodePatch, response=s.PromoCodeOut, errors=(422,),
              summary="Change a promo code (fields left out keep their values)")
    def on_put_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any, body: s.PromoCodePatch) -> None:  # noqa: A002
        resp.media = s.promo_code_out(rates.update_promo(req.context.ctx, property_id, id, body))

    @endpoint("rates:write", status=204, summary="Delete a promo code")
    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       id: Any) -> None:  # noqa: A002
        rates.delete_promo(req.context.ctx, property_id, id)
        resp.status = 204


class PromoValidate:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("rates:read", body=s.PromoValidateIn, guest="open",
              kiosk="open", anonymous="open", response=s.PromoValidationOut,
              errors=(404, 422), summary="Price a promo code for a stay without committing",
              description="Returns the stay's price with and without the code, `valid`, and "
                          "every reason the code or the stay does not apply. Writes nothing.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.PromoValidateIn) -> None:
        resp.media = rates.validate_promo(req.context.ctx, property_id, body)


ROUTES = [
    Route(BASE + "/rate-plans/{id:uuid}/rates", RatePlanRates),
    Route(BASE + "/rate-plans/{id:uuid}/restrictions", RatePlanRestrictions),
    Route(BASE + "/rate-plans/{id:uuid}/allotments", RatePlanAllotments),
    Route(BASE + "/restrictions", PropertyRestrictions),
    Route(BASE + "/promo-codes", PromoCodes),
    Route(BASE + "/promo-codes/{id:uuid}", PromoCodes, "item"),
    Route(BASE + "/promo/validate", PromoValidate),
]
