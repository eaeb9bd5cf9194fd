"""No card number reaches any table, log or event: Luhn-valid numbers posted in every free-text
field of several endpoints are refused with 422 card_data_refused; afterwards the database tables
and the captured logs are scanned for the digits."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest

from pms.db.database import db, is_postgres
from pms.db.scope import unscoped
from pms.domain.luhn import card_number_paths, contains_card_number, luhn_valid
from tests.helpers import assert_problem


def fresh_card(length: int = 16) -> str:
    """A random Luhn-valid card number (unique per test, so the scans find only ours)."""
    body = "4" + "".join(random.choice("0123456789") for _ in range(length - 2))
    for check in "0123456789":
        if luhn_valid(body + check):
            return body + check
    raise AssertionError


def spaced(card: str) -> str:
    return " ".join(card[i:i + 4] for i in range(0, len(card), 4))


def dashed(card: str) -> str:
    return "-".join(card[i:i + 4] for i in range(0, len(card), 4))


# -- unit: the detector --------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["4111111111111111", "4111 1111 1111 1111", "4111-1111-1111-1111",
                                  "card 5500 0000 0000 0004 exp 12/29", "378282246310005",
                                  "room 12 4111 1111 1111 1111", "6011111111111117000"[:16]])
def test_detects_card_numbers(text):
    assert contains_card_number(text)


@pytest.mark.parametrize("text", ["4111111111111112", "2026-11-21", "+49 30 1234567",
                                  "12345678-1234-5678-1234-567812345678", "123456789012",
                                  "Room 101, 2 adults", "99999999999999999999999",
                                  "0000000000000000", "floor=0000000000000000",
                                  "1234567890123452"])
def test_ignores_non_card_digits(text):
    assert not contains_card_number(text)


@pytest.mark.parametrize("text", [
    "+4111111111111111", "+4111 1111 1111 1111", "4111.1111.1111.1111", "4111/1111/1111/1111",
    "4111_1111_1111_1111", "4111\t1111\t1111\t1111", "4111\n1111\n1111\n1111",
    "4111  1111  1111  1111", "4111 - 1111 - 1111 - 1111", "４１１１１１１１１１１１１１１１",
    "４１１１　１１１１　１１１１　１１１１", "4111\u200b1111\u200b1111\u200b1111",
    "\u0664\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661",
])
def test_card_guard_sees_through_plus_signs_separators_and_unicode_digits(text):
    assert contains_card_number(text)


def test_card_guard_requires_a_card_brand_prefix_and_length_not_only_luhn():
    # Luhn-valid, but no card: all zeros, an unknown prefix, a Visa prefix at a foreign length.
    for digits in ("0000000000000000", "1234567890123452", "41111111111111113"):
        assert luhn_valid(digits)
        assert not contains_card_number(digits)


def test_card_guard_phone_exemption_applies_only_to_phone_fields():
    phone = "+378282246310005"  # 15 digits after "+": a possible E.164 number, and an Amex
    assert contains_card_number(phone)
    assert not contains_card_number(phone, phone=True)
    assert contains_card_number("+4111111111111111", phone=True)  # 16 digits: no phone
    doc = {"contacts": {"phone": phone}, "notes": phone, "guest": {"mobile_phone": phone}}
    assert card_number_paths(doc) == ["notes"]


def test_a_payment_method_token_whose_word_runs_into_card_digits_is_a_token():
    card = "4111111111111111"
    glued = [f"pm_holder_ab{card}cd", f"pm_holder_{card}cd", f"tok{card}", f"pm_ab{card}"]
    for token in glued:
        assert contains_card_number(token)  # in a free-text field: refused
        assert not contains_card_number(token, token=True)
        assert card_number_paths({"payment_method_id": token, "notes": token}) == ["notes"]
        assert card_number_paths({"payer": {"company_payment_method_id": token}}) == []
    # a number standing on its own is a card number in a reference field too
    for typed in (card, spaced(card), f"pm_{card}", f"pm {spaced(card)}", f"pm_x_{card}_visa",
                  f"pm_ab12 {card}", f"+{card}"):
        assert contains_card_number(typed, token=True), typed
        assert card_number_paths({"payment_method_id": typed}) == ["payment_method_id"]


def test_paths_name_the_fields_and_numbers_count():
    doc = {"a": "x", "b": {"c": ["ok", "4111 1111 1111 1111"]}, "n": 4111111111111111}
    assert card_number_paths(doc) == ["b.c[1]", "n"]


# -- API: every free-text field of several endpoints ---------------------------------------------

def _property_body() -> dict[str, Any]:
    return {"propertyCode": "CARD1", "timezone": "Europe/Berlin", "currencyCode": "EUR",
            "name": "Hotel", "displayAddress": {"line1": "Main 1", "city": "Berlin"},
            "contacts": {"website": "https://example.com"}}


def _set(body: dict[str, Any], path: str, value: str) -> dict[str, Any]:
    import copy

    out = copy.deepcopy(body)
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return out


CASES = [
    ("/v1/properties", _property_body(), ["name", "displayAddress.line1", "displayAddress.city",
                                          "contacts.website", "propertyCode"]),
    ("{p}/room-types", {"code": "DBL", "name": "Double", "description": "nice"},
     ["name", "description", "code"]),
    ("{p}/rate-plans", {"code": "BAR", "name": "Best", "description": "flex"},
     ["name", "description"]),
    ("{p}/items", {"code": "W", "name": "Water", "category": "mini bar", "price": "3.50"},
     ["name"]),
    ("{p}/profiles", {"first_name": "Ada", "last_name": "L", "email": "a@example.com",
                      "address": {"line1": "x"}},
     ["first_name", "last_name", "company_name", "external_ref", "address.line1", "phone"]),
]


@pytest.fixture
def card() -> str:
    return fresh_card()


def _scan_tables(needles: list[str]) -> list[str]:
    hits: list[str] = []
    with unscoped():
        db.connect(reuse_if_open=True)
        if is_postgres():
            tables = [r[0] for r in db.execute_sql(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                "current_schema()").fetchall()]
        else:
            tables = [r[0] for r in db.execute_sql(
                "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]
        for table in tables:
            try:
                rows = db.execute_sql(f'SELECT * FROM "{table}"').fetchall()
            except Exception:  # noqa: BLE001 - RLS-hidden tables read as empty
                continue
            for row in rows:
                text = " ".join(str(v) for v in row)
                hits.extend(f"{table}: {n}" for n in needles if n in text)
    return hits


def test_card_numbers_in_any_field_are_refused_and_never_stored_or_logged(api, card, caplog):
    caplog.set_level(logging.DEBUG)
    prop = api.post("/v1/properties", _set(_property_body(), "propertyCode", "OK1"))
    assert prop.status_code == 201, prop.text
    base = f"/v1/properties/{prop.json['id']}"
    forms = [card, spaced(card), dashed(card), f"call me, card {spaced(card)} thanks"]
    for path, body, fields in CASES:
        for field in fields:
            for form in forms:
                resp = api.post(path.format(p=base), _set(body, field, form),
                                headers={"Idempotency-Key": f"k-{field}-{len(form)}"})
                problem = assert_problem(resp, 422, "card_data_refused")
                assert card not in resp.text and spaced(card) not in resp.text
                assert problem["errors"][0]["field"] == field
    # a number in a query string is refused too
    assert_problem(api.get(f"{base}/room-types", params={"q": card}), 422, "card_data_refused")
    # a raw (non-JSON) body is scanned as text
    assert_problem(api.post(f"{base}/items", body=f"garbage {card}".encode(),
                            headers={"Content-Type": "application/json"}), 422,
                   "card_data_refused")
    needles = [card, spaced(card), dashed(card)]
    assert _scan_tables(needles) == []
    logged = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert not any(n in logged for n in needles)


def test_ordinary_bodies_still_pass(api):
    resp = api.post("/v1/properties", _property_body())
    assert resp.status_code == 201, resp.text


def test_card_numbers_in_cashiering_bodies_are_refused_and_never_stored(api, ctx, card, caplog):
    from tests.factories import make_fb_stay

    caplog.set_level(logging.DEBUG)
    hotel, _res, folio = make_fb_stay(ctx)
    base = f"/v1/properties/{hotel.id}"
    f = f"{base}/folios/{folio.id}"
    charge = api.post(f"{f}/charges", {"transaction_code": "FB", "amount": "10"}).json
    line = next(c for c in charge["charges"] if c["kind"] == "charge")["id"]
    cases = [
        (f"{f}/charges", {"transaction_code": "FB", "amount": "10", "description": "x"},
         ["description", "transaction_code"]),
        (f"{f}/charges/{line}/correction", {"reason": "x"}, ["reason"]),
        (f"{f}/allowances", {"transaction_code": "FB", "amount": "1", "reason": "x"}, ["reason"]),
        (f"{f}/payments", {"amount": "1", "method": "CARD", "payment_method_id": "pm_x"},
         ["payment_method_id"]),
        (f"{f}/payments", {"amount": "1", "method": "VOUCHER", "voucher_code": "x"},
         ["voucher_code"]),
        (f"{f}/pre-authorizations", {"amount": "1", "payment_method_id": "pm_x"},
         ["payment_method_id"]),
        (f"{base}/gift-vouchers", {"amount": "5", "recipient_name": "x", "code": "G1"},
         ["recipient_name", "code"]),
        (f"{base}/transaction-codes", {"code": "SPA", "name": "x", "category": "other"},
         ["name"]),
    ]
    for path, body, fields in cases:
        for field in fields:
            for form in (card, spaced(card), dashed(card)):
                resp = api.post(path, _set(body, field, form))
                problem = assert_problem(resp, 422, "card_data_refused")
                assert problem["errors"][0]["field"] == field and card not in resp.text
    needles = [card, spaced(card), dashed(card)]
    assert _scan_tables(needles) == []  # every table, the outbox and the audit journal included
    logged = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert not any(n in logged for n in needles)


def test_a_payment_with_a_token_whose_word_holds_card_digits_is_taken(api, ctx, card):
    from tests.factories import make_fb_stay

    hotel, _res, folio = make_fb_stay(ctx)
    f = f"/v1/properties/{hotel.id}/folios/{folio.id}"
    assert api.post(f"{f}/charges", {"transaction_code": "FB", "amount": "10"}).status_code == 201
    token = f"pm_visa_ab{card}cd"  # a token's word: the payments service's, not a typed card
    paid = api.post(f"{f}/payments", {"amount": "4", "method": "CARD",
                                      "payment_method_id": token})
    assert paid.status_code == 201, paid.text
    # the control: the same word anywhere else, or the number on its own, is refused
    assert_problem(api.post(f"{f}/charges", {"transaction_code": "FB", "amount": "1",
                                             "description": token}), 422, "card_data_refused")
    assert_problem(api.post(f"{f}/payments", {"amount": "1", "method": "CARD",
                                              "payment_method_id": f"pm_{card}"}),
                   422, "card_data_refused")
