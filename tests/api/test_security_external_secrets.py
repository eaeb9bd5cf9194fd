"""External systems hold secret references, never credentials: a value that looks like one
(known key prefixes, JWTs, HTTP Basic credentials, long hex or high-entropy tokens, URLs with
user info or credential parameters) is refused with 422 `secret_refused` naming the field,
whatever the field is called; nothing is stored, and the answer does not echo the value."""

from __future__ import annotations

import pytest

from tests.helpers import assert_problem

pytestmark = pytest.mark.usefixtures("database")

SYSTEMS = "/v1/settings/external-systems"
SYSTEM = {"kind": "OPERA", "name": "Opera Cloud", "endpoint_url": "https://opera.example/api",
          "identifiers": {"hotel_code": "H1", "chain_code": "CH-EU-WEST-1",
                          "property_uuid": "3f2b6c1e-2a4d-4c5e-9f8a-1b2c3d4e5f60"},
          "secret_ref": "vault://pms/opera"}

BY_VALUE = {
    "stripe": "sk_live_51Habc123XYZ",
    "stripe_test": "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2,
    "slack": "xoxb-123456789012-abcdefABCDEF",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvcGVyYSJ9.c2lnbmF0dXJl",
    "basic": "dXNlcjpwYXNzd29yZA==",
    "digest": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "entropy": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE",
}
BY_NAME = {"key": "LIC-1", "license_key": "LIC-9f8e7d", "auth": "opaque", "hmac": "h-1"}
URLS = ["https://opera.example/api?api_key=abc", "https://opera.example/api?sig=x1",
        "https://opera.example/api?hotel=H1&session=c-1",
        "https://s3.example/b/o?X-Amz-Signature=abc", "https://opera.example/cb#access_token=t"]


def test_credentials_are_recognised_by_value_and_refused_naming_the_field(api):
    for name, value in BY_VALUE.items():
        bad = {**SYSTEM, "identifiers": {**SYSTEM["identifiers"], "client_ref": value}}
        body = assert_problem(api.put(SYSTEMS, {"systems": {"opera": bad}}), 422,
                              "secret_refused")
        assert [e["field"] for e in body["errors"]] == ["systems.opera.identifiers.client_ref"]
        assert value not in str(body), name
    for name, value in BY_NAME.items():
        bad = {**SYSTEM, "identifiers": {name: value}}
        body = assert_problem(api.put(SYSTEMS, {"systems": {"opera": bad}}), 422,
                              "secret_refused")
        assert [e["field"] for e in body["errors"]] == [f"systems.opera.identifiers.{name}"]
    for url in URLS:
        body = assert_problem(api.put(SYSTEMS, {"systems": {"opera": {
            **SYSTEM, "endpoint_url": url}}}), 422, "secret_refused")
        assert [e["field"] for e in body["errors"]] == ["systems.opera.endpoint_url"]
    # a merge patch is checked the same way
    body = assert_problem(api.request("PATCH", SYSTEMS, json={"systems": {"opera": {
        "name": BY_VALUE["stripe"]}}}, headers={"Content-Type": "application/merge-patch+json"}),
        422, "secret_refused")
    assert [e["field"] for e in body["errors"]] == ["systems.opera.name"]
    assert api.get(SYSTEMS).json["systems"] == {}


PLAIN = {"site": "OperaCloudProduction2024", "chain_name": "HotelAdlonKempinskiBerlin",
         "code": "Berlin-Mitte-Property-0042", "account": "hotel_code_berlin_mitte_2024"}


def test_references_and_plain_identifiers_pass(api):
    resp = api.put(SYSTEMS, {"systems": {"opera": {
        **SYSTEM, "endpoint_url": "https://opera.example/api?hotel_code=H1&lang=en"}}})
    assert resp.status_code == 200, resp.text
    # long names and codes (CamelCase, words and digits) are not taken for random tokens
    named = api.put(SYSTEMS, {"systems": {"opera": {**SYSTEM, "identifiers": PLAIN}}})
    assert named.status_code == 200, named.text
    resp = api.put(SYSTEMS, {"systems": {"opera": {
        **SYSTEM, "endpoint_url": "https://opera.example/api?hotel=H1"}}})
    assert resp.status_code == 200, resp.text
    stored = api.get(SYSTEMS).json["systems"]["opera"]
    assert stored["secret_ref"] == "vault://pms/opera"
    assert stored["identifiers"] == SYSTEM["identifiers"]
