"""Stay feedback (scope `feedback`) and a guest profile's payment-method references
(scope `profiles`). Guest sessions reach only their own stays and their own profile."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas import feedback as s
from pms.schemas.common import ListQuery, Page
from pms.services.frontdesk import feedback
from pms.services.profiles import guest_payment_methods

BASE = "/v1/properties/{property_id:uuid}"


class Feedback:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("feedback:read", query=s.FeedbackQuery, response=Page[s.FeedbackOut],
              guest="own", summary="Feedback of the property, or of one stay (reservation_id)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               query: s.FeedbackQuery) -> None:
        page = feedback.list_feedback(req.context.ctx, property_id, query)
        resp.media = Page(data=[feedback.feedback_out(r) for r in page.items],
                          next_cursor=page.next_cursor)

    @endpoint("feedback:write", body=s.FeedbackIn, response=s.FeedbackOut, status=201,
              also_status=(200,), errors=(409,), guest="own",
              summary="Rate a stay (one rating per reservation; a repeat updates it)",
              description="201 for the first rating of the stay, 200 when it updates the "
                          "existing one (SPEC: a duplicate is not an error). Only CHECKED_IN "
                          "and CHECKED_OUT stays may be rated (else 409 feedback_not_allowed).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: s.FeedbackIn) -> None:
        row, created = feedback.submit(req.context.ctx, property_id, body)
        resp.media = feedback.feedback_out(row)
        resp.status = 201 if created else 200


class PaymentMethods:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("profiles:read", query=ListQuery, response=Page[s.PaymentMethodOut], guest="own",
              summary="The profile's payment methods (payments-service token references)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any, query: ListQuery) -> None:  # noqa: A002
        page = guest_payment_methods.list_methods(req.context.ctx, property_id, id, query)
        resp.media = Page(data=[guest_payment_methods.method_out(r) for r in page.items],
                          next_cursor=page.next_cursor)

    @endpoint("profiles:write", body=s.PaymentMethodIn, response=s.PaymentMethodOut,
              status=201, errors=(409, 422, 503), guest="own",
              summary="Keep a reference to a payments-service token",
              description="payment_method_id and what the payments service reports of it "
                          "(brand, last4, exp_month, exp_year); never a card number. The "
                          "payments service must report the method as the profile's (else 422 "
                          "payment_method_not_allowed); a company profile is refused (422 "
                          "profile_is_company: its methods are the company's). 409 "
                          "already_exists when the profile holds it already.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.PaymentMethodIn) -> None:  # noqa: A002
        row = guest_payment_methods.add_method(
            req.context.ctx, property_id, id, body,
            payments=getattr(self.deps.platform, "payments", None))
        resp.media = guest_payment_methods.method_out(row)
        resp.status = 201

    @endpoint("profiles:write", query=s.PaymentMethodQuery, status=204, guest="own",
              summary="Forget a reference (the payments-service token is not deleted)")
    def on_delete(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                  id: Any, query: s.PaymentMethodQuery) -> None:  # noqa: A002
        guest_payment_methods.remove_method(req.context.ctx, property_id, id,
                                            query.payment_method_id)
        resp.status = 204


ROUTES = [
    Route(BASE + "/feedback", Feedback),
    Route(BASE + "/profiles/{id:uuid}/payment-methods", PaymentMethods),
]
