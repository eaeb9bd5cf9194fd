"""through the HTTP API on both backends: `aud` matches exactly (a list only
when it is this service's audience alone), `iat` beyond the leeway in the future is refused,
and only a valid W3C `traceparent` is kept (on the request's events), any other dropped."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.api.test_auth import _claims, _sign, get_prop
from tests.helpers import assert_problem, outbox_rows

TRACE_ID, PARENT_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
VALID = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def prop(api: Any) -> str:
    resp = api.post("/v1/properties", {"propertyCode": "STRICT1", "timezone": "UTC",
                                       "currencyCode": "EUR"})
    assert resp.status_code == 201
    return resp.json["id"]


@pytest.mark.parametrize("aud,ok", [
    ("hotel-pms", True),
    (["hotel-pms"], True),
    (["hotel-pms", "another-service"], False),
    (["another-service", "hotel-pms"], False),
    (["hotel-pms", "hotel-pms"], False),
    ([], False),
    ("hotel-pms ", False),
])
def test_audience_must_be_exactly_ours(api, settings, prop, aud, ok):
    assert settings.jwt_audience == "hotel-pms"
    token = _sign(settings, _claims(settings, api.env_id, aud=aud))
    resp = get_prop(api, prop, token)
    if ok:
        assert resp.status_code == 200, resp.text
    else:
        assert_problem(resp, 401, "invalid_token")


YEAR_2100 = 4102444800


# (the year-2100 case is named, not computed at collection: every xdist worker must collect
# the same ids)
@pytest.mark.parametrize("ahead_s,ok", [(0, True), (20, True), (120, False), (3600, False),
                                        ("until-2100", False)])
def test_a_token_issued_in_the_future_is_refused(api, settings, prop, ahead_s, ok):
    now = int(time.time())
    if ahead_s == "until-2100":
        ahead_s = YEAR_2100 - now
    token = _sign(settings, _claims(settings, api.env_id, iat=now + ahead_s,
                                    exp=now + ahead_s + 600))
    resp = get_prop(api, prop, token)
    if ok:
        assert resp.status_code == 200, resp.text
    else:
        assert "issued in the future" in assert_problem(resp, 401, "invalid_token")["detail"]


def _create_property(api: Any, traceparent: str | None) -> Any:
    headers = {"traceparent": traceparent} if traceparent is not None else {}
    return api.post("/v1/properties", {"propertyCode": "TRACE1", "timezone": "UTC",
                                       "currencyCode": "EUR"}, headers=headers)


@pytest.mark.parametrize("sent,kept", [
    (VALID, VALID),
    (f"  {VALID}", VALID),
    (f"cc-{TRACE_ID}-{PARENT_ID}-01-future-part", f"cc-{TRACE_ID}-{PARENT_ID}-01"),
    ("x" * 64, None),                                   # 64 characters, no traceparent
    ("0" * 300, None),                                  # over the column: was a 500 on PostgreSQL
    (f"00-{TRACE_ID}-{PARENT_ID}-01-extra", None),      # version 00 has nothing after the flags
    (f"00-{TRACE_ID.upper()}-{PARENT_ID}-01", None),    # upper case hex
    (f"ff-{TRACE_ID}-{PARENT_ID}-01", None),            # version ff is invalid
    (f"00-{'0' * 32}-{PARENT_ID}-01", None),            # all-zero trace id
    (f"00-{TRACE_ID}-{'0' * 16}-01", None),             # all-zero parent id
    (f"cc-{TRACE_ID}-{PARENT_ID}-01x", None),           # a later version, but no "-" after
    ("", None),
])
def test_only_a_valid_w3c_traceparent_is_kept(api, ctx, sent, kept):
    resp = _create_property(api, sent)
    assert resp.status_code == 201, resp.text
    rows = outbox_rows(ctx)  # the env is the test's own: these are the request's events
    assert rows and all(r.traceparent == kept for r in rows), [r.traceparent for r in rows]
