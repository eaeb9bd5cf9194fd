"""VAT ids checked by their check digits where they are taken: a company profile's
`preferences.vat_id` and the property's seller identity (`invoicing.vat_id` in the module
settings). A mistyped id is 422 invalid_vat_id naming the field, and nothing is written."""

from __future__ import annotations

from tests.api.test_settings import MODULES, _patch
from tests.helpers import assert_problem, counts

GOOD_DE = "DE136695976"
MISTYPED_DE = "DE136695977"  # the last digit changed: the check digit no longer matches


def _property(api):
    return api.post("/v1/properties", {"propertyCode": "VAT1", "timezone": "UTC",
                                       "currencyCode": "EUR"}).json["id"]


def test_a_company_profile_keeps_a_valid_vat_id_compact(api):
    prop = _property(api)
    resp = api.post(f"/v1/properties/{prop}/profiles", {
        "kind": "COMPANY", "company_name": "ACME GmbH",
        "preferences": {"vat_id": "de 136 695 976"}})
    assert resp.status_code == 201, resp.text
    assert resp.json["preferences"]["vat_id"] == GOOD_DE
    again = api.get(f"/v1/properties/{prop}/profiles/{resp.json['id']}")
    assert again.json["preferences"]["vat_id"] == GOOD_DE


def test_a_mistyped_company_vat_id_is_422_naming_the_field(api, ctx):
    prop = _property(api)
    before = counts(ctx)
    body = assert_problem(api.post(f"/v1/properties/{prop}/profiles", {
        "kind": "COMPANY", "company_name": "ACME GmbH",
        "preferences": {"vat_id": MISTYPED_DE}}), 422, "invalid_vat_id")
    assert body["errors"][0]["field"] == "preferences.vat_id"
    assert "check digits" in body["errors"][0]["message"]
    assert counts(ctx) == before  # no profile row: nothing audited, nothing announced
    assert_problem(api.post(f"/v1/properties/{prop}/profiles", {
        "kind": "COMPANY", "company_name": "ACME GmbH",
        "preferences": {"vat_id": "XX123456"}}), 422, "invalid_vat_id")


def test_the_sellers_vat_id_in_the_invoicing_settings_is_checked(api):
    prop = _property(api)
    params = {"property_id": prop}
    etag = api.get(MODULES, params=params).headers["etag"]
    bad = assert_problem(_patch(api, {"invoicing": {"vat_id": MISTYPED_DE}}, etag, params=params),
                         422, "invalid_vat_id")
    assert bad["errors"][0]["field"] == "invoicing.vat_id"
    assert api.get(MODULES, params=params).json["modules"]["invoicing"]["vat_id"] is None
    good = _patch(api, {"invoicing": {"vat_id": GOOD_DE, "legal_name": "Hotel Berlin GmbH",
                                      "tax_number": "30/123/45678",
                                      "payment_terms_days": 14}}, etag, params=params)
    assert good.status_code == 200, good.text
    assert good.json["modules"]["invoicing"] == {
        "legal_name": "Hotel Berlin GmbH", "vat_id": GOOD_DE, "tax_number": "30/123/45678",
        "payment_terms_days": 14, "invoice_at_check_out": False}
