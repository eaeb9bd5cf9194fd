from tests.helpers import assert_problem


def test_create_and_read_property(api):
    resp = api.post("/v1/properties", {"propertyCode": "BER1", "timezone": "Europe/Berlin",
                                       "currencyCode": "EUR", "languages": ["en"]})
    assert resp.status_code == 201, resp.text
    pid = resp.json["id"]
    got = api.get(f"/v1/properties/{pid}")
    assert got.status_code == 200
    assert got.json["propertyCode"] == "BER1"
    assert_problem(api.post("/v1/properties", {"propertyCode": "BER1", "timezone": "Europe/Berlin",
                                               "currencyCode": "EUR"}), 409, "already_exists")
