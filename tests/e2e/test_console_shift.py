"""A front-desk manager's shift in the console, in headless Chromium, on the demo hotel that
`pms-cli serve` builds (the same server and browser as tests/e2e/test_admin_console.py), and
without typing an id: every row is found by a name, a date range or a picker.

The shift: a room made clean from the housekeeping board; today's arrival found by name
("arrivals today" and the guest's name), checked in to a vacant-clean room from the room picker;
the guest moved to another vacant-clean room; a charge posted on the guest's folio (the
transaction code picked from its list), the balance paid by card (the form opens with the
balance due) and the guest checked out; a report run and read; a company's pending payment
method approved. The console also speaks German (the language switch relabels the page and
formats dates the German way), and each page passes axe-core's check (no serious or critical
violation) and works from the keyboard.

Kept as few tests as the shift allows: each browser test is slow.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

from pms.api import admin_pages
from tests.e2e.test_admin_console import _css, _errors, _open, _text, _wait, browser, served

__all__ = ["browser", "served"]  # the module's fixtures, shared with the console's tests

pytestmark = pytest.mark.slow

MARK = {"X-PMS-Console": "1"}
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"


def _api(base: str, path: str, **params: Any) -> Any:
    resp = requests.get(f"{base}{path}", params=params, headers=MARK, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _submit(driver: Any, action: str) -> None:
    """Submit the open form and wait for the answer: the notice, or a problem (failed)."""
    _css(driver, "#action-form button[type=submit]")[0].click()
    _wait(driver, lambda d: f"{action}: done" in _text(d, "#notice")
          or _css(d, "#problem:not([hidden])"), f"the answer to {action}")
    assert not _css(driver, "#problem:not([hidden])"), _text(driver, "#problem")


def _settled(driver: Any) -> bool:
    """The list shows the answer to the last filter asked for (none is under way)."""
    return bool(_css(driver, "#page[data-loaded]:not([data-listing])"))


def _row(driver: Any, text: str) -> Any:
    rows = [tr for tr in _css(driver, "#list tbody tr") if text in tr.text]
    assert len(rows) == 1, [tr.text for tr in _css(driver, "#list tbody tr")]
    return rows[0]


def _click_row_action(driver: Any, row: Any, action: str) -> None:
    row.find_element("css selector", f"button[data-action='{action}']").click()
    _wait(driver, lambda d: _css(d, f"#panel:not([hidden]) #action-form[data-action='{action}']"),
          f"the {action} form")


def _pick(driver: Any, selector: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    _wait(driver, lambda d: any(o.get_attribute("value") == value
                                for o in _css(d, f"{selector} option")), f"{value} offered")
    Select(_css(driver, selector)[0]).select_by_value(value)


def _rooms(base: str, property_id: str) -> list[dict[str, Any]]:
    return _api(base, f"/v1/properties/{property_id}/housekeeping", limit=200)["data"]


def _make_clean(driver: Any, base: str, property_id: str, room_type: str,
                count: int) -> list[str]:
    """Set `count` vacant rooms of the room type CLEAN from the housekeeping board (a task's
    row reaches its room); their numbers."""
    vacant = {r["room_number"] for r in _rooms(base, property_id)
              if r["status"] == "VACANT" and r["hk_status"] not in ("CLEAN", "INSPECTED")
              and r["room_type_id"] == room_type}
    assert len(vacant) >= count, "the demo hotel has vacant rooms of the arrival's type"
    made: list[str] = []
    _open(driver, base, "housekeeping")
    while len(made) < count:
        rows = {tr.find_element("css selector", "td[data-column='room_number']").text: tr
                for tr in _css(driver, "#list tbody tr")}
        number = next((n for n in sorted(rows) if n in vacant and n not in made), None)
        if number is None:  # the next page of tasks
            assert _css(driver, "#next:not([disabled])"), f"no task of a vacant room: {vacant}"
            _css(driver, "#next")[0].click()
            _wait(driver, lambda d: _css(d, "#first:not([disabled])"), "the next page")
            continue
        _click_row_action(driver, rows[number], "set_room_status")
        _pick(driver, "#action-form label[data-field='hk_status'] select", "CLEAN")
        _submit(driver, "set room status")
        made.append(number)
    board = {r["room_number"]: r["hk_status"] for r in _rooms(base, property_id)}
    assert all(board[n] == "CLEAN" for n in made), board
    return made


def _room_options(driver: Any) -> list[str]:
    return driver.execute_script(
        "return [...document.querySelectorAll('#action-form select[data-rooms] option')]"
        ".map(o => o.value).filter(Boolean);")


def test_a_shift_at_the_front_desk_without_typing_an_id(served, browser):
    base = served["base"]
    _open(browser, base, "frontdesk")
    property_id = _css(browser, "#property")[0].get_attribute("value")
    today = _api(base, f"/v1/properties/{property_id}")["businessDate"]
    rooms = _rooms(base, property_id)
    # today's arrival of a room type with two vacant rooms (one to check in to, one to move
    # to), whose name, typed in lower case, finds only that arrival among today's
    for arrival in _api(base, f"/v1/properties/{property_id}/reports/arrivals")["rows"]:
        booked = _api(base, f"/v1/properties/{property_id}/reservations/"
                            f"{arrival['reservation_id']}")["room_type_id"]
        alone = _api(base, "/v1/admin/frontdesk", guest=arrival["guest_last_name"].lower(),
                     arrival_date=today, status="CONFIRMED", property_id=property_id)["data"]
        if len(alone) == 1 and sum(r["status"] == "VACANT" and r["room_type_id"] == booked
                                   for r in rooms) >= 2:
            break
    name = arrival["guest_last_name"]
    first, second = _make_clean(browser, base, property_id, booked, 2)

    # today's arrival, found by "arrivals today" and the guest's name
    _open(browser, base, "frontdesk")
    _css(browser, "#filters button[data-range='arrivals today']")[0].click()
    _wait(browser, lambda d: name in _text(d, "#list tbody"), "today's arrivals")
    assert _css(browser, "#filters input[name='arrival_date']")[0].get_attribute("value") == today
    assert _css(browser, "#filters select[name='status']")[0].get_attribute("value") == "CONFIRMED"
    box = _css(browser, "#filters input[name='guest']")[0]
    box.send_keys(name.lower())  # the name as one types it: not an exact match
    box.submit()
    _wait(browser, lambda d: _settled(d) and len(_css(d, "#list tbody tr")) == 1, "the one arrival by name")
    row = _row(browser, name)
    stay = row.get_attribute("data-id")
    assert stay == arrival["reservation_id"]

    # check in with a key: the room picker offers the vacant-clean rooms only, and the same
    # form issues the stay's key (its type picked)
    _click_row_action(browser, row, "check_in")
    _wait(browser, lambda d: _css(d, "#action-form select[data-rooms='vacant-clean']"
                                     "[data-loaded='1']"), "the room picker")
    vacant_clean = {r["room_number"] for r in _rooms(base, property_id)
                    if r["status"] == "VACANT" and r["hk_status"] in ("CLEAN", "INSPECTED")
                    and r["room_type_id"] == booked}
    assert set(_room_options(browser)) == vacant_clean and first in vacant_clean
    _pick(browser, "#action-form select[data-rooms]", first)
    _pick(browser, "#action-form [data-then='issue_key'] label[data-field='key_type'] select",
          "CARD")
    _submit(browser, "check in")
    assert "issue key: done" in _text(browser, "#notice")
    _wait(browser, lambda d: _css(d, "#panel:not([hidden]) #answer[data-action='issue_key']"),
          "the key shown")
    shown_key = _text(browser, "#answer dd[data-key='id']")
    assert _text(browser, "#answer dd[data-key='room_number']") == first
    checked_in = _api(base, f"/v1/properties/{property_id}/reservations/{stay}")
    assert checked_in["status"] == "CHECKED_IN", checked_in
    issued = _api(base, f"/v1/properties/{property_id}/digital-keys", reservation_id=stay)["data"]
    assert [(k["id"], k["key_type"], k["room_number"]) for k in issued] == [
        (shown_key, "CARD", first)], issued
    board = {r["room_number"]: r["status"] for r in _rooms(base, property_id)}
    assert (board[first], board[second]) == ("OCCUPIED", "VACANT"), (first, second, board)

    # move the guest: the in-house row's move, to the other clean room
    _css(browser, "#filters button[data-range='in-house']")[0].click()
    _wait(browser, lambda d: "CHECKED_IN" in _text(d, "#list tbody"), "in-house")
    box = _css(browser, "#filters input[name='guest']")[0]
    box.clear()
    box.send_keys(name)
    box.submit()
    _wait(browser, lambda d: _settled(d) and len(_css(d, "#list tbody tr")) == 1, "the guest in house")
    row = _row(browser, name)
    assert row.find_element("css selector", "button[data-action='assign_room']") \
        .get_attribute("disabled") is not None  # an in-house guest is moved, not assigned
    _click_row_action(browser, row, "move_room")
    _wait(browser, lambda d: _css(d, "#action-form select[data-rooms][data-loaded='1']"),
          "the room picker")
    assert first not in _room_options(browser)  # now occupied
    _pick(browser, "#action-form select[data-rooms]", second)
    _submit(browser, "move room")
    board = {r["room_number"]: r["status"] for r in _rooms(base, property_id)}
    assert (board[first], board[second]) == ("VACANT", "OCCUPIED"), board

    # the folio: found by the room, a charge posted from the transaction codes' list
    _open(browser, base, "folios")
    box = _css(browser, "#filters input[name='room_number']")[0]
    box.send_keys(second)
    _pick(browser, "#filters select[name='status']", "OPEN")  # a status is picked, not typed
    box.submit()
    _wait(browser, lambda d: name in _text(d, "#list tbody"), "the guest's folio")
    row = _row(browser, name)
    folio = row.get_attribute("data-id")
    _click_row_action(browser, row, "post_charge")
    codes = _api(base, "/v1/lov/transaction-codes", parent=property_id, limit=50)["data"]
    code = next(c["code"] for c in codes if c["active"])
    _pick(browser, "#action-form select[data-lov='transaction-codes']", code)
    box = _css(browser, "#action-form label[data-field='amount'] input")[0]
    box.send_keys("12.50")
    _submit(browser, "post charge")
    charged = _api(base, f"/v1/properties/{property_id}/folios/{folio}")
    assert any(c["transaction_code"] == code for c in charged["charges"]), charged["charges"]

    # the balance paid by card: the form opens with the balance due
    _click_row_action(browser, _row(browser, name), "post_payment")
    due = _api(base, f"/v1/properties/{property_id}/folios/{folio}")["balance_due"]
    amount = _css(browser, "#action-form label[data-field='amount'] input")[0]
    assert amount.get_attribute("value") == due
    method = _css(browser, "#action-form label[data-field='method'] select")[0]
    assert method.get_attribute("value") == "CARD"
    reference = _css(browser, "#action-form label[data-field='payment_method_id'] input")[0]
    reference.send_keys("pm_card_visa")  # the card terminal's reference (no card on file)
    _submit(browser, "post payment")
    paid = _api(base, f"/v1/properties/{property_id}/folios/{folio}")
    assert paid["payments"] and paid["balance_due"] in ("0", "0.00"), paid

    # check out: the in-house row
    _open(browser, base, "frontdesk")
    _css(browser, "#filters button[data-range='in-house']")[0].click()
    box = _css(browser, "#filters input[name='guest']")[0]
    box.send_keys(name)
    box.submit()
    _wait(browser, lambda d: _settled(d) and len(_css(d, "#list tbody tr")) == 1, "the guest in house")
    _click_row_action(browser, _row(browser, name), "check_out")
    _submit(browser, "check out")
    assert _api(base, f"/v1/properties/{property_id}/reservations/{stay}")["status"] \
        == "CHECKED_OUT"

    # a report run and read: today's departures, as the API reports them
    _open(browser, base, "reports")
    _row(browser, "departures").find_element("css selector", "button[data-action='run']").click()
    _wait(browser, lambda d: _css(d, "#panel:not([hidden]) #report[data-report='departures']"),
          "the report")
    wanted = _api(base, f"/v1/properties/{property_id}/reports/departures")["rows"]
    shown = [td.text for td in _css(browser, "#report tbody td[data-column='guest_last_name']")]
    assert wanted and shown == [r["guest_last_name"] for r in wanted], (shown, wanted)
    # no script error (a refused request is Chromium's network entry, not the console's)
    assert [e for e in _errors(browser) if e.get("source") != "network"] == []


def test_a_pending_company_payment_method_is_approved_from_its_row(served, browser):
    """The company is picked by name to submit the method; its row's approve sends the
    company and the method from the row."""
    base = served["base"]
    companies = _api(base, "/v1/admin/companies", limit=200)["data"]
    company = next(c for c in companies if c["company_name"])
    _open(browser, base, "corporate-accounts")
    _css(browser, "#toolbar button[data-action='submit_payment_method']")[0].click()
    _wait(browser, lambda d: _css(d, "#panel:not([hidden]) select[data-picker='company']"
                                     "[data-loaded='1']"), "the submit form's companies")
    from selenium.webdriver.support.ui import Select

    picker = Select(_css(browser, "#action-form select[data-picker='company']")[0])
    picker.select_by_visible_text(company["company_name"])
    token = f"pm_holder_{company['id'].replace('-', '')}_mc"
    _css(browser, "#action-form label[data-field='payment_method_id'] input")[0] \
        .send_keys(token)
    _submit(browser, "submit payment method")
    row = _row(browser, token)
    assert "PENDING" in row.text
    _click_row_action(browser, row, "approve_payment_method")
    _pick(browser, "#action-form label[data-field='approval'] select", "POSTPAY")
    _submit(browser, "approve payment method")
    listed = _api(base, "/v1/admin/corporate-accounts", company_profile_id=company["id"])
    assert {r["payment_method_id"]: r["status"] for r in listed["data"]}[token] != "PENDING"
    _errors(browser)


def test_the_kiosk_configuration_is_edited_without_touching_its_lockdown(served, browser):
    """The kiosk form opens with the configuration as it is (its lockdown shown) and saves
    with If-Match: a change behind its back is refused (412, shown), and the form opened again
    changes max_keys_per_stay only: the lockdown and the rest stay as they were."""
    base = served["base"]
    _open(browser, base, "kiosk-config")
    property_id = _css(browser, "#property")[0].get_attribute("value")
    url = f"{base}/v1/properties/{property_id}/kiosk-config"
    etag = requests.get(url, headers=MARK, timeout=30).headers.get("ETag")
    locked = requests.put(url, json={"enabled_modes": ["CHECK_IN"], "add_on_package_codes": [],
                                     "lockdown": True, "max_keys_per_stay": 2},
                          headers={**MARK, **({"If-Match": etag} if etag else {})}, timeout=30)
    assert locked.status_code == 200, locked.text

    def opening(d: Any) -> str:  # each opening of a form has its own key
        return d.execute_script("return document.getElementById('action-form')"
                                ".dataset.idempotencyKey || ''")

    def configure() -> None:
        before = opening(browser)
        _css(browser, "#toolbar button[data-action='configure']")[0].click()
        _wait(browser, lambda d: opening(d) != before
              and _css(d, "#panel:not([hidden]) label[data-field='lockdown']"), "the kiosk form")
        assert _css(browser, "#action-form label[data-field='lockdown'] input")[0].is_selected()
        box = _css(browser, "#action-form label[data-field='max_keys_per_stay'] input")[0]
        assert box.get_attribute("value") == "2"
        box.clear()
        box.send_keys("3")

    configure()
    # meanwhile another desk changes the modes: the console's save carries the ETag it read
    behind = requests.put(url, json={"enabled_modes": ["CHECK_IN", "CHECK_OUT"],
                                     "add_on_package_codes": [], "lockdown": True,
                                     "max_keys_per_stay": 2},
                          headers={**MARK, "If-Match": locked.headers["ETag"]}, timeout=30)
    assert behind.status_code == 200, behind.text
    _css(browser, "#action-form button[type=submit]")[0].click()
    _wait(browser, lambda d: _css(d, "#problem:not([hidden])"), "the refusal shown")
    assert "412" in _text(browser, "#problem"), _text(browser, "#problem")
    assert requests.get(url, headers=MARK, timeout=30).json()["max_keys_per_stay"] == 2
    configure()  # opened again: the configuration as it is now
    _submit(browser, "configure")
    saved = requests.get(url, headers=MARK, timeout=30).json()
    assert (saved["lockdown"], saved["max_keys_per_stay"], saved["enabled_modes"],
            saved["add_on_package_codes"]) == (True, 3, ["CHECK_IN", "CHECK_OUT"], [])
    _errors(browser)


def _select(driver: Any, selector: str, *values: str) -> None:
    """Pick the options of a (multiple) select by value, waiting for them."""
    from selenium.webdriver.support.ui import Select

    for value in values:
        _wait(driver, lambda d, v=value: any(o.get_attribute("value") == v
                                             for o in _css(d, f"{selector} option")),
              f"{value} offered")
        Select(_css(driver, selector)[0]).select_by_value(value)


def _ask(driver: Any, scope: str, property_id: str) -> tuple[str, str]:
    """"Would this be allowed?" for the console's own caller: (decision, reason) shown."""
    _css(driver, "#toolbar button[data-action='would_this_be_allowed']")[0].click()
    _wait(driver, lambda d: _css(d, "#panel:not([hidden]) label[data-field='scopes'] select"),
          "the decision form")
    assert _css(driver, "#action-form label[data-field='sub'] input")[0].get_attribute("value")
    assert _css(driver, "#action-form label[data-field='property_id'] select")[0] \
        .get_attribute("value") == property_id  # the property picked, by name
    _select(driver, "#action-form label[data-field='scopes'] select", scope)
    _submit(driver, "would this be allowed")
    _wait(driver, lambda d: _css(d, "#answer[data-action='would_this_be_allowed']"), "the answer")
    return (_text(driver, "#answer dd[data-key='decision']"),
            _text(driver, "#answer dd[data-key='reason']"))


def test_a_policy_added_from_its_page_denies_and_the_decision_says_why(served, browser):
    """The policies page: "would this be allowed?" answers allow; a policy added from the form
    (a rule: deny, the scope and the property picked) flips it to deny, naming its rule; the
    API refuses the call itself (403 policy_denied); removed from its row, allowed again."""
    base = served["base"]
    scope = "hotel:pms:events:write"
    _open(browser, base, "policies")
    property_id = _css(browser, "#property")[0].get_attribute("value")
    events = f"{base}/v1/properties/{property_id}/events"
    name = "No event bookings " + uuid.uuid4().hex[:6]
    try:
        assert _ask(browser, scope, property_id)[0] == "allow"
        before = requests.post(events, json={}, headers=MARK, timeout=30)
        assert before.status_code != 403, before.text  # control: not refused by a policy

        _css(browser, "#toolbar button[data-action='add_policy']")[0].click()
        _wait(browser, lambda d: _css(d, "#panel:not([hidden]) [data-field='rules'] [data-item]"),
              "the policy form")
        _css(browser, "#action-form label[data-field='name'] input")[0].send_keys(name)
        rule = "#action-form [data-field='rules'] [data-item]"
        _select(browser, f"{rule} label[data-field='effect'] select", "deny")
        _select(browser, f"{rule} label[data-field='scopes'] select", scope)
        _select(browser, f"{rule} label[data-field='property_ids'] select", property_id)
        _submit(browser, "add policy")
        row = _row(browser, name)
        assert f"deny {scope}" in row.text and "at " in row.text, row.text

        decision, reason = _ask(browser, scope, property_id)
        assert decision == "deny" and "refuses" in reason, (decision, reason)
        refused = requests.post(events, json={}, headers=MARK, timeout=30)
        assert refused.status_code == 403 and "policy" in refused.text, refused.text

        _click_row_action(browser, _row(browser, name), "remove_policy")
        _css(browser, "#action-form button[type=submit]")[0].click()  # not confirmed yet
        _wait(browser, lambda d: _css(d, "#problem:not([hidden])"), "asked to confirm")
        assert "confirm" in _text(browser, "#problem")
        assert any(s["name"] == name for s in _api(base, "/v1/admin/policy-sets")["data"])
        _css(browser, "#action-form [data-confirm='remove_policy'] input")[0].click()
        _submit(browser, "remove policy")
        assert name not in _text(browser, "#list tbody")
        assert _ask(browser, scope, property_id)[0] == "allow"
        assert requests.post(events, json={}, headers=MARK, timeout=30).status_code != 403
    finally:  # never leave the shift's server refusing events
        for found in _api(base, "/v1/admin/policy-sets", limit=200)["data"]:
            if found["name"] == name:
                requests.delete(f"{base}/v1/admin/policy-sets/{found['id']}", headers=MARK,
                                timeout=30)
    _errors(browser)


def test_the_console_in_german(served, browser):
    """The language switch relabels the pages, columns and actions, and formats dates the
    German way; the choice is kept for the next visit."""
    base = served["base"]
    _open(browser, base, "frontdesk")
    from selenium.webdriver.support.ui import Select

    Select(_css(browser, "#language")[0]).select_by_value("de")
    _wait(browser, lambda d: _text(d, "#title") == "Rezeption"
          and _css(d, "#page[data-loaded='frontdesk']"), "the German page")
    texts = browser.execute_script(  # read in one script: the list re-renders
        "const q = (s) => [...document.querySelectorAll(s)].map(e => e.innerText);"
        "return {th: q('#list thead th'), range: q(\"#filters button[data-range='arrivals "
        "today']\"), dates: q(\"#list tbody td[data-column='arrival_date']\"),"
        "lang: document.documentElement.lang};")
    assert "Anreise" in texts["th"] and texts["range"] == ["Anreisen heute"], texts
    assert texts["lang"] == "de"
    dates = texts["dates"]
    assert dates and all("." in d and "-" not in d for d in dates), dates  # 3. Dez. 2026
    _open(browser, base, "frontdesk")  # a new visit keeps the language
    _wait(browser, lambda d: _text(d, "#title") == "Rezeption", "German again")
    Select(_css(browser, "#language")[0]).select_by_value("en")
    _wait(browser, lambda d: _text(d, "#title") == "Front desk", "English again")
    _errors(browser)


def _axe(driver: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations of the page as it is now."""
    driver.execute_script(AXE.read_text())
    found = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']})"
        ".then(r => done(JSON.stringify(r.violations))).catch(e => done(String(e)));")
    violations = json.loads(found)
    return [{"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]]}
            for v in violations if v["impact"] in ("serious", "critical")]


def test_every_page_passes_axe_and_works_from_the_keyboard(served, browser):
    """No serious or critical axe-core violation on any page, nor in an open form; and a page
    is reached, a form opened and closed with the keyboard alone."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    base = served["base"]
    browser.set_script_timeout(120)
    found: dict[str, Any] = {}
    for page in admin_pages.PAGES:
        _open(browser, base, page)
        if _css(browser, "#toolbar button"):
            _css(browser, "#toolbar button")[0].click()
            _wait(browser, lambda d: _css(d, "#panel:not([hidden]) #action-form"), "a form")
        violations = _axe(browser)
        if violations:
            found[page] = violations
    assert found == {}, found

    # keyboard only: Tab to the front desk link, Enter; Tab to a toolbar action, Enter; Escape
    _open(browser, base, "reservations")
    keys = ActionChains(browser)
    for _ in range(60):
        keys.send_keys(Keys.TAB).perform()
        if browser.switch_to.active_element.get_attribute("data-page") == "frontdesk":
            break
    keys.send_keys(Keys.ENTER).perform()
    _wait(browser, lambda d: _css(d, "#page[data-loaded='frontdesk']"), "front desk by keyboard")
    _open(browser, base, "profiles")
    for _ in range(80):
        keys.send_keys(Keys.TAB).perform()
        if browser.switch_to.active_element.get_attribute("data-action") == "create":
            break
    keys.send_keys(Keys.ENTER).perform()
    _wait(browser, lambda d: _css(d, "#panel:not([hidden]) #action-form[data-action='create']"),
          "the form by keyboard")
    focused = browser.switch_to.active_element
    assert focused.get_attribute("name") or focused.tag_name in ("input", "select"), \
        "the form's first field has the focus"
    keys.send_keys(Keys.ESCAPE).perform()
    _wait(browser, lambda d: _css(d, "#panel[hidden]"), "Escape closes the form")
    _errors(browser)
