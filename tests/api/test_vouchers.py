"""Transaction codes (CRUD with tax-rule validation) and gift vouchers (issue, balance, lookup)."""

from __future__ import annotations

from tests.helpers import assert_problem, outbox_types


def _property(api):
    resp = api.post("/v1/properties", {"propertyCode": "TC1", "timezone": "Europe/Berlin",
                                       "currencyCode": "EUR"})
    assert resp.status_code == 201, resp.text
    return f"/v1/properties/{resp.json['id']}"


def test_transaction_code_crud_with_tax_rules(api):
    base = _property(api)
    body = {"code": "FB", "name": "Restaurant", "category": "F&B", "ledger_account": "fnb_revenue",
            "tax_rules": [{"code": "VAT7", "kind": "percentage", "rate": "7", "inclusive": True}]}
    created = api.post(f"{base}/transaction-codes", body)
    assert created.status_code == 201, created.text
    assert created.json["tax_rules"][0]["rate"] == "7"
    tid = created.json["id"]
    assert_problem(api.post(f"{base}/transaction-codes", body), 409, "already_exists")
    changed = api.put(f"{base}/transaction-codes/{tid}", {"name": "Bar"})
    assert changed.status_code == 200 and changed.json["name"] == "Bar"
    listed = api.get(f"{base}/transaction-codes")
    assert [r["code"] for r in listed.json["data"]] == ["FB"]
    assert api.delete(f"{base}/transaction-codes/{tid}").status_code == 204


def test_transaction_code_refuses_bad_tax_rules_and_categories(api):
    base = _property(api)
    bad_kind = {"code": "X", "name": "X", "category": "other",
                "tax_rules": [{"code": "T", "kind": "weird", "rate": "1"}]}
    assert_problem(api.post(f"{base}/transaction-codes", bad_kind), 422)
    bad_pct = {"code": "X", "name": "X", "category": "other",
               "tax_rules": [{"code": "T", "kind": "percentage", "rate": "150"}]}
    assert_problem(api.post(f"{base}/transaction-codes", bad_pct), 422)
    dup = {"code": "X", "name": "X", "category": "other",
           "tax_rules": [{"code": "T", "kind": "percentage", "rate": "5"},
                         {"code": "T", "kind": "percentage", "rate": "6"}]}
    assert_problem(api.post(f"{base}/transaction-codes", dup), 422)
    assert_problem(api.post(f"{base}/transaction-codes",
                            {"code": "X", "name": "X", "category": "spa"}), 422)


def test_gift_voucher_issue_balance_and_lookup(api):
    base = _property(api)
    resp = api.post(f"{base}/gift-vouchers", {"amount": "50", "code": "XMAS1"})
    assert resp.status_code == 201, resp.text
    assert resp.json["balance"] == "50.00" and resp.json["currency"] == "EUR"
    assert resp.json["status"] == "ACTIVE"
    got = api.get(f"{base}/gift-vouchers/{resp.json['id']}")
    assert got.json["balance"] == "50.00"
    found = api.get(f"{base}/gift-vouchers", params={"code": "XMAS1"})
    assert [v["id"] for v in found.json["data"]] == [resp.json["id"]]
    assert_problem(api.post(f"{base}/gift-vouchers", {"amount": "10", "code": "XMAS1"}), 409)
    assert_problem(api.post(f"{base}/gift-vouchers", {"amount": "0"}), 422)
    assert_problem(api.post(f"{base}/gift-vouchers", {"amount": "-5"}), 422)
    assert "hotel:pms:gift_voucher:issued" in outbox_types(api_ctx(api))


def api_ctx(api):
    from pms.context import Ctx

    return Ctx(env_id=api.env_id)
