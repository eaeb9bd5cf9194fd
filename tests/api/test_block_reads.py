"""What sales reads of its blocks, on SQLite and PostgreSQL: a block's rooming list (GET
.../blocks/{id}/reservations, and the reservations list's block_id filter), and lists of
blocks by arrival range, code and company whose grids are read once per page, not once per
block (counted from the database driver's log, never timed)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from playhouse.test_utils import count_queries

from tests.api.test_room_blocks import ARR, DEP, _block, _pick
from tests.api.test_room_blocks import hotel as block_hotel  # noqa: F401
from tests.helpers import assert_problem

pytestmark = pytest.mark.usefixtures("database")


def test_a_blocks_rooming_list_reads_its_reservations_and_only_its_own(api, block_hotel):  # noqa: F811
    h = block_hotel
    block, other = _block(api, h, rooms=3), _block(api, h, rooms=1, code="OTH")
    for b in (block, other):
        assert api.post(f"{h.base}/blocks/{b['id']}/definite").status_code == 200
    picked = [_pick(api, h, block["id"], guest={"last_name": f"Member{i}"}).json
              for i in range(3)]
    assert _pick(api, h, other["id"]).status_code == 201
    outside = api.post(f"{h.base}/reservations", {
        "room_type_id": str(h.room_type.id), "rate_plan_id": str(h.rate_plan.id),
        "arrival_date": str(ARR), "departure_date": str(DEP), "guest": {"last_name": "W"}})
    assert outside.status_code == 201, outside.text
    ids = {p["reservation"]["id"] for p in picked}
    got = api.get(f"{h.base}/blocks/{block['id']}/reservations")
    assert got.status_code == 200, got.text
    assert {r["id"] for r in got.json["data"]} == ids
    assert {r["block_id"] for r in got.json["data"]} == {block["id"]}
    # the reservations list's filter answers the same rows
    listed = api.get(f"{h.base}/reservations", params={"block_id": block["id"]})
    assert {r["id"] for r in listed.json["data"]} == ids
    # a cancelled member stays on the list, and the status filter finds it
    first = picked[0]["reservation"]["id"]
    assert api.post(f"{h.base}/reservations/{first}/cancel", {}).status_code == 200
    cancelled = api.get(f"{h.base}/blocks/{block['id']}/reservations",
                        params={"status": "CANCELLED"})
    assert [r["id"] for r in cancelled.json["data"]] == [first]
    # pages
    page = api.get(f"{h.base}/blocks/{block['id']}/reservations", params={"limit": 2})
    rest = api.get(f"{h.base}/blocks/{block['id']}/reservations",
                   params={"limit": 2, "cursor": page.json["next_cursor"]})
    assert {r["id"] for r in page.json["data"] + rest.json["data"]} == ids
    # another block's id, or none: 404; a bad id or status: 422
    assert_problem(api.get(f"{h.base}/blocks/{uuid.uuid4()}/reservations"), 404)
    assert api.get(f"{h.base}/blocks/{block['id']}/reservations",
                   params={"status": "LOST"}).status_code == 422
    assert api.get(f"{h.base}/reservations", params={"block_id": "x"}).status_code == 422


def _make(api, h, code, arrival, company=None):
    body = {"code": code, "arrival_date": str(arrival),
            "departure_date": str(arrival + timedelta(days=2)),
            "allocation": [{"room_type_id": str(h.room_type.id), "date": str(arrival),
                            "to_date": str(arrival + timedelta(days=1)), "allotted": 1}]}
    if company:
        body["company_profile_id"] = company
    return _block(api, h, **body)


def test_blocks_list_by_arrival_range_code_and_company(api, block_hotel):  # noqa: F811
    h = block_hotel
    company = api.post(f"{h.base}/profiles", {"kind": "COMPANY", "company_name": "Acme"})
    assert company.status_code == 201, company.text
    cid = company.json["id"]
    a = _make(api, h, "JAN", ARR)
    b = _make(api, h, "FEB", ARR + timedelta(days=30), company=cid)
    c = _make(api, h, "MAR", ARR + timedelta(days=60), company=cid)

    def codes(**params):
        resp = api.get(f"{h.base}/blocks", params=params)
        assert resp.status_code == 200, resp.text
        return sorted(x["code"] for x in resp.json["data"])

    assert codes() == ["FEB", "JAN", "MAR"]
    assert codes(arrival_from=str(ARR + timedelta(days=1))) == ["FEB", "MAR"]
    assert codes(arrival_to=str(ARR + timedelta(days=30))) == ["FEB", "JAN"]
    assert codes(arrival_from=str(ARR), arrival_to=str(ARR)) == ["JAN"]
    assert codes(code="feb") == ["FEB"]
    assert codes(company_profile_id=cid) == ["FEB", "MAR"]
    assert codes(company_profile_id=cid, arrival_to=str(ARR + timedelta(days=30))) == ["FEB"]
    # each item still carries its own grid
    listed = {x["id"]: x for x in api.get(f"{h.base}/blocks").json["data"]}
    for one in (a, b, c):
        assert listed[one["id"]]["allocation"] == one["allocation"]
    assert api.get(f"{h.base}/blocks", params={"arrival_from": "2030-13-01"}).status_code == 422
    assert_problem(api.get(f"{h.base}/blocks", params={"arrival_to": "9999-12-31"}), 422,
                   "date_out_of_range")


def test_a_page_of_blocks_reads_its_grids_once_not_once_per_block(api, block_hotel):  # noqa: F811
    h = block_hotel

    def statements():
        api.get(f"{h.base}/blocks")  # first use (caches)
        with count_queries() as counted:
            resp = api.get(f"{h.base}/blocks")
        assert resp.status_code == 200
        return len(counted.get_queries()), len(resp.json["data"])

    _make(api, h, "B0", ARR)
    one, n = statements()
    assert n == 1
    for i in range(1, 6):
        _make(api, h, f"B{i}", ARR + timedelta(days=3 * i))
    many, n = statements()
    assert n == 6 and many == one


def test_a_block_carries_its_market_segment_source_and_owner(api, ctx, block_hotel):  # noqa: F811
    from tests.helpers import outbox_rows

    h = block_hotel
    block = _block(api, h, code="CORP", market_segment="CORP-GRP", source="RFP",
                   owner="maria.sales")
    assert (block["market_segment"], block["source"], block["owner"]) == (
        "CORP-GRP", "RFP", "maria.sales")
    plain = _block(api, h, code="PLAIN")
    assert (plain["market_segment"], plain["source"], plain["owner"]) == (None, None, None)
    got = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (got["market_segment"], got["source"], got["owner"]) == ("CORP-GRP", "RFP",
                                                                    "maria.sales")
    moved = api.put(f"{h.base}/blocks/{block['id']}", {"owner": "li.sales", "source": None})
    assert moved.status_code == 200, moved.text
    assert (moved.json["market_segment"], moved.json["source"], moved.json["owner"]) == (
        "CORP-GRP", None, "li.sales")
    updated = [e for e in outbox_rows(ctx) if e.type == "hotel:pms:block:updated"][-1]
    assert updated.data["owner"] == "li.sales" and updated.data["source"] is None
    # the sales manager's own blocks, a segment's blocks
    listed = api.get(f"{h.base}/blocks", params={"owner": "li.sales"}).json["data"]
    assert [b["code"] for b in listed] == ["CORP"]
    listed = api.get(f"{h.base}/blocks", params={"market_segment": "CORP-GRP"}).json["data"]
    assert [b["code"] for b in listed] == ["CORP"]
    assert api.post(f"{h.base}/blocks", {**{k: block[k] for k in (
        "name", "arrival_date", "departure_date", "rate_plan_id")}, "code": "BAD",
        "market_segment": "no spaces allowed"}).status_code == 422
    assert api.put(f"{h.base}/blocks/{block['id']}", {"owner": ""}).status_code == 422
