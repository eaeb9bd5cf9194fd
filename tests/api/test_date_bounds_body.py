"""through the HTTP API on both backends: a body date after the last one any request may name
is a 422 `date_out_of_range` however its digits are written (plain, or as JSON escapes, which
the body's decoder reads the same); the last date itself is accepted (the control). The body's decoding is checked directly too,
on a body type whose dates nothing else bounds."""

from __future__ import annotations

from datetime import date

import falcon
import falcon.testing
import msgspec
import pytest

from pms.api.spec import decode_body
from pms.errors import ValidationFailed
from tests.api.test_small_leaks import hotel  # noqa: F401 - a fixture
from tests.helpers import assert_problem

pytestmark = pytest.mark.usefixtures("database")


@pytest.mark.parametrize("arrival", ["9999-01-02", "9\\u0039\\u00399-01-02", "999\\u0039-01-02"])
def test_a_body_date_in_year_9999_is_a_422_however_written(api, hotel, arrival):  # noqa: F811
    departure = arrival.replace("01-02", "01-03")  # written the same way
    body = f'{{"arrival_date": "{arrival}", "departure_date": "{departure}", "adults": 2}}'
    resp = api.request("POST", hotel + "/availability", body=body.encode(),
                       headers={"Content-Type": "application/json"})
    problem = assert_problem(resp, 422, "date_out_of_range")
    assert problem["errors"][0]["field"] == "arrival_date"


def test_the_last_date_escaped_is_accepted(api, hotel):  # noqa: F811
    body = b'{"arrival_date": "\\u0039998-12-29", "departure_date": "9998-12-31", "adults": 2}'
    resp = api.request("POST", hotel + "/availability", body=body,
                       headers={"Content-Type": "application/json"})
    assert resp.status_code == 200, resp.text


class _Stay(msgspec.Struct):
    arrival: date
    nights: list[date] = []


@pytest.mark.parametrize("raw", [
    b'{"arrival": "9999-01-02"}',
    b'{"arrival": "9\\u0039\\u00399-01-02"}',
    b'{"arrival": "2026-01-02", "nights": ["99\\u00399-01-02"]}',
])
def test_decode_body_refuses_a_date_after_the_last_however_written(raw):
    with pytest.raises(ValidationFailed) as refused:
        decode_body(_request(raw), msgspec.json.Decoder(_Stay))
    assert refused.value.code == "date_out_of_range"


def test_decode_body_accepts_the_last_date_however_written():
    for raw in (b'{"arrival": "9998-12-31"}', b'{"arrival": "\\u0039998-12-31"}'):
        assert decode_body(_request(raw), msgspec.json.Decoder(_Stay)).arrival == date(9998, 12, 31)


def _request(raw: bytes) -> falcon.Request:
    req = falcon.testing.create_req(method="POST", body=raw,
                                    headers={"Content-Type": "application/json"})
    req.context.raw_body = raw
    req.context.json_body = None
    return req
