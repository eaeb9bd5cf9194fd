"""The company a stay is booked for (`company_profile_id` on the reservation), through the HTTP
API on SQLite and PostgreSQL: kept whether or not it is billed, set by staff on an edit or
cleared, audited with the edit's event; a holder cannot put its stay on a company it is not a
user of, nor change it; a billed stay keeps its company; a negotiated stay keeps one the plan
is negotiated for."""

from __future__ import annotations

from typing import Any

from pms.devkeys import mint_token
from tests.factories import load_rates, make_booking_hotel, make_rate_plan, reservation_body
from tests.helpers import assert_problem, audit_actions, outbox_rows, owned_method, random_ref


def _profile(api: Any, prop: Any, **body: Any) -> str:
    resp = api.post(f"/v1/properties/{prop}/profiles", body)
    assert resp.status_code == 201, resp.text
    return resp.json["id"]


def test_staff_set_and_clear_the_company_of_a_stay_audited_with_its_event(api, ctx):
    hotel = make_booking_hotel(ctx)
    res = f"/v1/properties/{hotel.id}/reservations"
    company = _profile(api, hotel.id, kind="COMPANY", company_name=random_ref("Co"))
    made = api.post(res, reservation_body(hotel)).json
    assert made["company_profile_id"] is None
    resp = api.put(f"{res}/{made['id']}", {"company_profile_id": company})
    assert resp.status_code == 200, resp.text
    assert resp.json["company_profile_id"] == company
    event = [e for e in outbox_rows(ctx) if e.type == "hotel:pms:reservation:updated"][-1]
    assert event.data["company_profile_id"] == company
    assert audit_actions(ctx)[-1] == "reservation.updated"
    assert api.get(f"{res}/{made['id']}").json["company_profile_id"] == company
    # the same company again changes nothing of it; null clears it
    resp = api.put(f"{res}/{made['id']}", {"company_profile_id": None})
    assert resp.status_code == 200 and resp.json["company_profile_id"] is None, resp.text
    # a profile that is not a company: 422 naming the field
    guest = _profile(api, hotel.id, first_name="Gil", last_name="Guest")
    refused = assert_problem(api.put(f"{res}/{made['id']}", {"company_profile_id": guest}), 422)
    assert [e["field"] for e in refused["errors"]] == ["company_profile_id"]


def test_a_holder_cannot_name_a_company_it_is_not_a_user_of_nor_change_it(api, ctx):
    hotel = make_booking_hotel(ctx)
    res = f"/v1/properties/{hotel.id}/reservations"
    company = _profile(api, hotel.id, kind="COMPANY", company_name=random_ref("Co"))
    guest = _profile(api, hotel.id, first_name="Gil", last_name="Guest",
                     email=f"{random_ref('g')}@example.com")
    token = mint_token(api.settings, env_id=api.env_id, client_kind="guest", holder_id=guest)
    body = reservation_body(hotel, company_profile_id=company)
    body.pop("guest")
    assert_problem(api.post(res, body, token=token), 404)
    body.pop("company_profile_id")
    made = api.post(res, body, token=token)
    assert made.status_code == 201, made.text
    refused = assert_problem(api.put(f"{res}/{made.json['id']}", {"company_profile_id": company},
                                     token=token), 422, "field_not_allowed")
    assert refused["errors"][0]["field"] == "company_profile_id"
    # bound to the company, a traveler's booking names it (the control)
    assert api.post(f"/v1/properties/{hotel.id}/companies/{company}/users",
                    {"traveler_profile_id": guest, "role": "TRAVELER"}).status_code == 201
    user = mint_token(api.settings, env_id=api.env_id, client_kind="user", holder_id=guest)
    made = api.post(res, {**body, "company_profile_id": company}, token=user)
    assert made.status_code == 201, made.text
    assert made.json["company_profile_id"] == company


def test_a_billed_stay_keeps_its_company_and_a_negotiated_one_a_company_of_its_plan(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=4)
    res = f"/v1/properties/{hotel.id}/reservations"
    neg = make_rate_plan(ctx, hotel.id, negotiated=True, code=random_ref("NEG"))
    load_rates(ctx, hotel.id, neg.id, hotel.room_type.id, amount="90.00")
    company = _profile(api, hotel.id, kind="COMPANY", company_name=random_ref("Co"),
                       preferences={"negotiated_rate_plan_ids": [str(neg.id)]})
    other = _profile(api, hotel.id, kind="COMPANY", company_name=random_ref("Other"))
    base = f"/v1/properties/{hotel.id}/companies/{company}"
    pm = api.post(f"{base}/payment-methods", {"payment_method_id": owned_method(company)})
    assert pm.status_code == 201, pm.text
    assert api.post(f"{base}/payment-methods/{pm.json['id']}/approve",
                    {"approval": "POSTPAY"}).status_code == 200
    billed = api.post(res, reservation_body(hotel, company_profile_id=company,
                                            company_payment_method_id=pm.json["id"])).json
    assert billed["company_profile_id"] == company
    problem = assert_problem(api.put(f"{res}/{billed['id']}", {"company_profile_id": other}),
                             409, "company_billed_stay")
    assert problem["company_profile_id"] == company
    assert_problem(api.put(f"{res}/{billed['id']}", {"company_profile_id": None}), 409,
                   "company_billed_stay")
    # once the routing is removed the company may change (the control)
    assert api.delete(f"{res}/{billed['id']}/company-billing").status_code == 204
    assert api.get(f"{res}/{billed['id']}").json["company_profile_id"] == company  # kept
    resp = api.put(f"{res}/{billed['id']}", {"company_profile_id": other})
    assert resp.status_code == 200 and resp.json["company_profile_id"] == other, resp.text
    # a stay on the negotiated plan: only a company the plan is negotiated for
    stay = api.post(res, reservation_body(hotel, rate_plan_id=str(neg.id),
                                          company_profile_id=company)).json
    for wrong in (other, None):
        assert_problem(api.put(f"{res}/{stay['id']}", {"company_profile_id": wrong}), 422,
                       "rate_plan_not_negotiated_for_company")
    assert api.get(f"{res}/{stay['id']}").json["company_profile_id"] == company
