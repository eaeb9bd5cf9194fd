"""A block's rooming list read back as it stands, through the HTTP API on SQLite and PostgreSQL:
the coordinator downloads it (JSON or a spreadsheet), sees every stay with its room once
assigned, edits nothing by accident when sending it back (every row folds into its stay), and
a name a spreadsheet would run as a formula arrives as text."""

from __future__ import annotations

import csv
import io

import pytest

from tests.api.test_room_blocks import ARR, DEP, _block, _rows, _run
from tests.factories import make_hotel
from tests.helpers import assert_problem


@pytest.fixture
def hotel(ctx):
    h = make_hotel(ctx, rooms=5)
    h.base = f"/v1/properties/{h.property.id}"
    return h


def _loaded(api, ctx, h, names):
    block = _block(api, h, rooms=4, code="TOUR")
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    rows = _rows(h, len(names))
    for row, (first, last) in zip(rows, names, strict=True):
        row["guest"] = {"first_name": first, "last_name": last}
    url = f"{h.base}/blocks/{block['id']}/rooming-list"
    result = _run(api, ctx, api.post(url, {"rows": rows, "mode": "per_row"}))
    assert [r["outcome"] for r in result["rows"]] == ["created"] * len(names)
    return block, url, result


def test_the_coordinator_reads_the_list_back_and_resending_it_changes_nothing(api, ctx, hotel):
    h = hotel
    block, url, result = _loaded(api, ctx, h, [("Ann", "Zeller"), ("Bob", "Adams"),
                                                ("Cy", "Moss")])
    made = {r["reservation_id"] for r in result["rows"]}
    # one of them cancels, one gets a room
    cancelled = result["rows"][2]["reservation_id"]
    assert api.post(f"{h.base}/reservations/{cancelled}/cancel",
                    {"reason": "not travelling"}).status_code == 200
    room = h.rooms[0]
    roomed = result["rows"][0]["reservation_id"]
    assert api.put(f"{h.base}/reservations/{roomed}/room",
                   {"room_id": str(room.id)}).status_code == 200
    got = api.get(url)
    assert got.status_code == 200, got.text
    out = got.json
    assert (out["code"], out["count"]) == ("TOUR", 2)
    assert [r["guest_last_name"] for r in out["rows"]] == ["Adams", "Zeller"]  # by name
    assert {r["reservation_id"] for r in out["rows"]} == made - {cancelled}
    by_name = {r["guest_last_name"]: r for r in out["rows"]}
    assert by_name["Zeller"]["room_number"] == room.room_number
    assert by_name["Adams"]["room_number"] is None
    assert by_name["Adams"]["nights"] == (DEP - ARR).days
    # the cancelled stay, by status
    only = api.get(url, params={"status": "CANCELLED"}).json
    assert [r["reservation_id"] for r in only["rows"]] == [cancelled]
    # sent back as it came: every row folds into the stay it names, nothing new is booked
    before = api.get(f"{h.base}/blocks/{block['id']}").json
    again = _run(api, ctx, api.post(url, {"rows": [r["pickup"] for r in out["rows"]]}))
    assert [r["outcome"] for r in again["rows"]] == ["existing", "existing"]
    assert {r["reservation_id"] for r in again["rows"]} == made - {cancelled}
    after = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (after["picked"], after["held"]) == (before["picked"], before["held"])


def test_the_spreadsheet_has_every_stay_and_no_formula(api, ctx, hotel):
    h = hotel
    _, url, _ = _loaded(api, ctx, h, [("=HYPERLINK(\"x\")", "Evil"), ("Dee", "Ng")])
    got = api.get(url, params={"format": "csv"})
    assert got.status_code == 200, got.text
    assert got.headers["content-type"].startswith("text/csv")
    assert "attachment" in got.headers["content-disposition"]
    text = got.content.decode("utf-8")
    assert text.startswith("\ufeff")
    table = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    assert [r["last_name"] for r in table] == ["Evil", "Ng"]
    assert table[0]["first_name"] == "'=HYPERLINK(\"x\")"  # text, never a formula
    assert table[1]["room_type"] == h.room_type.code
    assert table[1]["arrival_date"] == str(ARR) and table[1]["status"] == "CONFIRMED"


def test_an_unknown_block_or_format_is_refused(api, hotel):
    h = hotel
    missing = f"{h.base}/blocks/{'0' * 8}-0000-4000-8000-{'0' * 12}/rooming-list"
    assert_problem(api.get(missing), 404)
    block = _block(api, h, code="FMT")
    url = f"{h.base}/blocks/{block['id']}/rooming-list"
    assert_problem(api.get(url, params={"format": "xlsx"}), 422)
    assert_problem(api.get(url, params={"status": "LOST"}), 422)
