"""The catering manager's diary, through the HTTP API on SQLite and PostgreSQL: events over a
time window (GET .../events?from_at=&to_at=) and a function space's busy and free slots (GET
.../function-spaces/{id}/slots), a combination busy wherever one of its parts is."""

from __future__ import annotations

import uuid

from tests.api.test_banquets import (
    _event,
    _move,
    _space,
    stay,  # noqa: F401 - the fixture
)
from tests.helpers import assert_problem

DAY = "2027-03-01"


def _t(hhmm: str, day: str = DAY) -> str:
    return f"{day}T{hhmm}:00+00:00"


def test_the_function_diary_lists_the_events_of_a_window(api, stay):  # noqa: F811
    base = stay["base"]
    a = _space(api, base, "A")
    breakfast = _event(api, base, a["id"], start=_t("07:00"), end=_t("09:00"), name="Breakfast")
    lunch = _event(api, base, a["id"], start=_t("12:00"), end=_t("14:00"), name="Lunch")
    nextday = _event(api, base, a["id"], start=_t("12:00", "2027-03-02"),
                     end=_t("14:00", "2027-03-02"), name="Next day")

    def names(**params):
        resp = api.get(f"{base}/events", params=params)
        assert resp.status_code == 200, resp.text
        return sorted(e["name"] for e in resp.json["data"])

    whole_day = {"from_at": _t("00:00"), "to_at": _t("00:00", "2027-03-02")}
    assert names(**whole_day) == ["Breakfast", "Lunch"]
    # overlap: an event running into the window counts; one ending at its start does not
    assert names(from_at=_t("08:00"), to_at=_t("12:00")) == ["Breakfast"]
    assert names(from_at=_t("09:00"), to_at=_t("12:00")) == []
    assert names(from_at=_t("13:00")) == ["Lunch", "Next day"]
    assert names(to_at=_t("07:30")) == ["Breakfast"]
    assert {e["id"] for e in api.get(f"{base}/events", params={
        **whole_day, "space_id": a["id"]}).json["data"]} == {breakfast["id"], lunch["id"]}
    assert nextday["id"] not in {e["id"] for e in api.get(
        f"{base}/events", params=whole_day).json["data"]}
    assert_problem(api.get(f"{base}/events", params={"from_at": _t("12:00"),
                                                     "to_at": _t("11:00")}), 422)
    assert api.get(f"{base}/events", params={"from_at": "2027-03-01T09:00:00"}
                   ).status_code == 422  # no offset


def test_a_spaces_free_slots_between_its_events_and_out_of_order_periods(api, stay):  # noqa: F811
    base = stay["base"]
    a, b = _space(api, base, "A"), _space(api, base, "B")
    ab = _space(api, base, "A+B", element_ids=[a["id"], b["id"]], capacities={"BANQUET": 80})
    meeting = _event(api, base, a["id"], start=_t("09:00"), end=_t("11:00"),
                     setup_minutes=30, teardown_minutes=30)
    assert _move(api, base, meeting["id"], "definite").status_code == 200
    _event(api, base, a["id"], start=_t("15:00"), end=_t("16:00"))  # INQUIRY holds nothing
    assert api.put(f"{base}/function-spaces/{b['id']}", {"out_of_order": [
        {"start": _t("13:00"), "end": _t("14:00"), "reason": "carpet"}]}).status_code == 200
    window = {"from_at": _t("08:00"), "to_at": _t("18:00")}

    def slots(space):
        resp = api.get(f"{base}/function-spaces/{space['id']}/slots", params=window)
        assert resp.status_code == 200, resp.text
        return resp.json

    got = slots(a)
    assert [(x["start"][11:16], x["end"][11:16], x["reason"]) for x in got["busy"]] == [
        ("08:30", "11:30", "event")]  # setup and tear-down included
    assert got["busy"][0]["event_id"] == meeting["id"]
    assert [(x["start"][11:16], x["end"][11:16]) for x in got["free"]] == [
        ("08:00", "08:30"), ("11:30", "18:00")]
    got = slots(b)
    assert [(x["reason"], x["event_id"]) for x in got["busy"]] == [("out_of_order", None)]
    assert [(x["start"][11:16], x["end"][11:16]) for x in got["free"]] == [
        ("08:00", "13:00"), ("14:00", "18:00")]
    # the combination is free only where both parts are
    got = slots(ab)
    assert [(x["start"][11:16], x["end"][11:16]) for x in got["free"]] == [
        ("08:00", "08:30"), ("11:30", "13:00"), ("14:00", "18:00")]
    # the slots follow the booking: a free slot is bookable, a busy one is not
    taken = _event(api, base, ab["id"], start=_t("11:30"), end=_t("13:00"))
    assert _move(api, base, taken["id"], "tentative").status_code == 200
    assert [(x["start"][11:16], x["end"][11:16]) for x in slots(a)["free"]] == [
        ("08:00", "08:30"), ("13:00", "18:00")]
    clash = _event(api, base, a["id"], start=_t("12:00"), end=_t("12:30"))
    assert_problem(_move(api, base, clash["id"], "tentative"), 409, "space_taken")
    # bad input
    url = f"{base}/function-spaces/{a['id']}/slots"
    assert_problem(api.get(url, params={"from_at": _t("12:00"), "to_at": _t("08:00")}), 422)
    assert_problem(api.get(url, params={"from_at": _t("00:00"),
                                        "to_at": _t("00:00", "2027-05-01")}), 422)
    assert api.get(url, params={"from_at": _t("08:00")}).status_code == 422
    assert_problem(api.get(f"{base}/function-spaces/{uuid.uuid4()}/slots", params=window), 404)
