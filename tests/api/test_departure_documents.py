"""No departure without a document that covers every charge, through the HTTP API on SQLite
and PostgreSQL: with the property's `invoicing.invoice_at_check_out` on, check-out issues the
invoice of the folio it closes in its own transaction (numbered, chained, naming every charge,
the room night posted at check-out included); a revert cancels it with a credit note, and the
next check-out issues the next invoice, covering the charge posted since. Off (the default) and
the env's rule switched off for the property are the controls: no document is issued."""

from __future__ import annotations

from tests.api.test_fiscal_documents import _settle_and_check_out, _verification, stay  # noqa: F401
from tests.api.test_settings import MODULES, _patch


def _rule(api, on: bool, property_id=None) -> None:
    params = {"property_id": str(property_id)} if property_id else None
    etag = api.get(MODULES, params=params).headers["etag"]
    resp = _patch(api, {"invoicing": {"invoice_at_check_out": on}}, etag, params=params)
    assert resp.status_code == 200, resp.text


def _documents(api, stay):  # noqa: F811
    return api.get(f"{stay['f']}/documents").json["data"]


def _charge_ids(api, stay) -> set[str]:  # noqa: F811
    return {c["id"] for c in api.get(stay["f"]).json["charges"]}


def test_check_out_issues_the_invoice_covering_every_charge(api, stay):  # noqa: F811
    _rule(api, True, stay["hotel"].id)
    assert api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "30.00",
                                             "description": "Dinner"}).status_code == 201
    _settle_and_check_out(api, stay)
    [doc] = _documents(api, stay)
    assert doc["kind"] == "INVOICE" and doc["number"].endswith("-000001")
    invoice = api.get(f"{stay['f']}/invoice").json
    assert invoice["id"] == doc["id"]
    charges = _charge_ids(api, stay)
    assert any(c["category"] == "room" for c in api.get(stay["f"]).json["charges"])
    assert {line["id"] for line in invoice["lines"]} == charges  # every charge, the night too
    again = api.post(f"{stay['f']}/invoice")
    assert again.status_code == 200 and again.json["id"] == invoice["id"]
    check = _verification(api, stay)
    assert check["ok"] and check["documents"] == 1

    # corrected: the revert's credit note, a charge posted since, the next check-out's invoice
    assert api.post(f"{stay['res']}/revert", {"reason": "minibar forgotten"}).status_code == 200
    assert api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "8.00",
                                             "description": "Minibar"}).status_code == 201
    _settle_and_check_out(api, stay)
    kinds = [d["kind"] for d in _documents(api, stay)]
    assert kinds == ["INVOICE", "CREDIT_NOTE", "INVOICE"]
    latest = api.get(f"{stay['f']}/invoice").json
    assert latest["follows_credit_note"]
    assert {line["id"] for line in latest["lines"]} == _charge_ids(api, stay)
    assert "Minibar" in {line["description"] for line in latest["lines"]}
    assert _verification(api, stay)["ok"]


def test_without_the_rule_check_out_issues_no_document(api, stay):  # noqa: F811
    """The control: off by default; on for the env but off for the property is off."""
    _rule(api, True)
    _rule(api, False, stay["hotel"].id)
    _settle_and_check_out(api, stay)
    assert _documents(api, stay) == []


def test_the_envs_rule_applies_to_its_properties(api, stay):  # noqa: F811
    _rule(api, True)
    _settle_and_check_out(api, stay)
    assert [d["kind"] for d in _documents(api, stay)] == ["INVOICE"]
