"""The reference admin console in a real headless Chromium (Debian's `chromium` and
`chromium-driver`, driven by Selenium through /usr/bin/chromedriver: nothing is downloaded).

The app runs as `make run` leaves it: `pms-cli serve` on a free port with a fresh home (the
embedded default: SQLite, dev keys, the demo hotel), so the console is in without a token (the
server plays the gateway's part on loopback). Every page of the registry renders its list without
console errors; a form submitted creates a row that appears in the list; a row action, clicked,
changes the row; a refused submit shows the API's problem+json; an x-lov field gets its options
from GET /v1/lov/{list}, searchable. In CI a missing Chromium fails; locally it skips."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from pms.api import admin_pages
from tests.cli.test_serve import _cli, _free_port
from tests.conftest import need_server

pytestmark = pytest.mark.slow  # tests/e2e/: the process-tree unit (tests/conftest.py)

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000")
WAIT_S = 60  # generous: two cores shared by many test runs


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`pms-cli serve` on the embedded default, in a fresh home: its base URL and output."""
    home = tmp_path_factory.mktemp("console-home")
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PMS_") and k != "WEB_CONCURRENCY"}
    env.update({"PMS_DRAIN_SECONDS": "1", "PMS_HOME": str(home)})
    proc = subprocess.Popen([*_cli(), "serve", "--port", str(port)], cwd=home, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")),
                     daemon=True).start()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # the demo month is built first; cores are shared
        while True:
            assert proc.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, "".join(lines)
            try:  # a loaded machine may take long to answer the first request
                if requests.get(f"{base}/admin/", timeout=30).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.2)
        yield {"base": base, "output": "".join(lines), "home": home}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    have = Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()
    need_server(have, "Chromium", f"{CHROMIUM} and {CHROMEDRIVER} (Debian: apt-get install "
                "chromium chromium-driver; .ci/run installs them)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:  # the `test` extras name it
        need_server(False, "selenium", str(exc))
        raise
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver: Any, condition: Any, what: str) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(condition)
    except Exception as exc:  # noqa: BLE001 - the page's state makes the message useful
        problem = driver.execute_script(
            "const p = document.getElementById('problem'); return p && !p.hidden ? "
            "p.textContent : '';")
        raise AssertionError(f"waiting for {what}: {exc!r}; problem shown: {problem!r}") from exc


def _css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def _errors(driver: Any) -> list[dict[str, Any]]:
    """The console's SEVERE entries since the last call (Chromium's log is read once)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def _open(driver: Any, base: str, page: str) -> None:
    driver.get(f"{base}/admin/#{page}")
    _wait(driver, lambda d: _css(d, f"#page[data-loaded='{page}']"), f"page {page} loaded")


def _text(driver: Any, selector: str) -> str:
    """The element's text, read in one script (the list re-renders under a waiting test)."""
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText : '';", selector)


def test_serve_prints_the_console_address(served):
    assert f"Admin console: {served['base']}/admin/" in served["output"], served["output"]


def test_every_page_of_the_registry_renders_its_list_without_console_errors(served, browser):
    base = served["base"]
    browser.get(f"{base}/admin/")
    _wait(browser, lambda d: d.find_element("css selector", "body[data-ready='1']"), "ready")
    pages = [a.get_attribute("data-page") for a in _css(browser, "#pages a")]
    assert pages == list(admin_pages.PAGES)  # the picker is the registry (all of it for the staff)
    _errors(browser)
    headers = {"X-PMS-Console": "1"}
    for page in pages:
        browser.get(f"{base}/admin/?p={page}#{page}")  # a fresh load each time
        _wait(browser, lambda d, p=page: _css(d, f"#page[data-loaded='{p}']"), page)
        definition = requests.get(f"{base}/v1/admin/ui/{page}", headers=headers,
                                  timeout=30).json()
        shown = [th.get_attribute("data-column") for th in _css(browser, "#list thead th")]
        row_actions = [a for a in definition["actions"] if a["on_row"]]
        runs = "path" in definition["list_columns"]  # a report's row has its "run"
        assert shown == definition["list_columns"] + (["actions"] if row_actions or runs
                                                      else []), page
        rows = requests.get(f"{base}{definition['data_url']}?limit=25", headers=headers,
                            timeout=30).json()["data"]
        assert len(_css(browser, "#list tbody tr")) == len(rows), page
        toolbar = {b.get_attribute("data-action") for b in _css(browser, "#toolbar button")}
        assert toolbar == {a["name"] for a in definition["actions"]
                           if a not in row_actions}, page
        assert not _css(browser, "#problem:not([hidden])"), _text(browser, "#problem")
        assert _errors(browser) == [], page


def _fill(driver: Any, field: str, value: str) -> None:
    box = _css(driver, f"#action-form label[data-field='{field}'] input")[0]
    box.clear()
    box.send_keys(value)


def _create_profile_form(driver: Any, base: str) -> None:
    _open(driver, base, "profiles")
    _css(driver, "#toolbar button[data-action='create']")[0].click()
    _wait(driver, lambda d: _css(d, "#panel:not([hidden]) label[data-field='last_name']"),
          "the create form")


def test_a_submitted_form_adds_the_row_and_a_row_action_changes_it(served, browser):
    base = served["base"]
    _create_profile_form(browser, base)
    last = "Console" + uuid.uuid4().hex[:8]
    _fill(browser, "first_name", "Ada")
    _fill(browser, "last_name", last)
    _fill(browser, "email", f"{last.lower()}@example.com")
    _css(browser, "#action-form button[type=submit]")[0].click()
    _wait(browser, lambda d: last in _text(d, "#list tbody"), "the new row in the list")
    assert not _css(browser, "#problem:not([hidden])"), _text(browser, "#problem")
    assert "create: done" in _text(browser, "#notice")
    row = next(tr for tr in _css(browser, "#list tbody tr") if last in tr.text)
    profile_id = row.get_attribute("data-id")
    assert _errors(browser) == []

    # the row's action: the form of its own body, the path parameters taken from the row
    row.find_element("css selector", "button[data-action='set_loyalty_number']").click()
    _wait(browser, lambda d: _css(d, "#panel:not([hidden]) #action-form"), "the action form")
    given = _css(browser, "#action-form [name='path:id']")[0].get_attribute("value")
    assert given == profile_id
    fields = [label.get_attribute("data-field")
              for label in _css(browser, "#action-form label[data-field]")]
    assert "loyalty_number" in fields, fields
    number = "L" + uuid.uuid4().hex[:8].upper()
    _fill(browser, "loyalty_number", number)
    _css(browser, "#action-form button[type=submit]")[0].click()
    _wait(browser, lambda d: number in _text(d, f"#list tbody tr[data-id='{profile_id}']"),
          "the action's change in the row")
    # the same row through the API (the console has no data of its own)
    got = requests.get(f"{base}/v1/admin/profiles?email_normalized={last.lower()}@example.com",
                       headers={"X-PMS-Console": "1"}, timeout=30).json()["data"]
    assert [(r["id"], r["loyalty_number"]) for r in got] == [(profile_id, number)]


def test_set_room_status_from_the_housekeeping_board_reaches_the_room(served, browser):
    """The row's action takes the room's number from the row (the action's declared map),
    not the task's id: the PUT reaches the room and the notice says done."""
    base = served["base"]
    headers = {"X-PMS-Console": "1"}
    _open(browser, base, "housekeeping")
    rows = _css(browser, "#list tbody tr")
    assert rows, "the demo hotel has housekeeping tasks"
    task_id = rows[0].get_attribute("data-id")
    rows[0].find_element("css selector", "button[data-action='set_room_status']").click()
    _wait(browser, lambda d: _css(d, "#panel:not([hidden]) [name='path:room_number']"),
          "the set room status form")
    number = _css(browser, "#action-form [name='path:room_number']")[0].get_attribute("value")
    listed = requests.get(f"{base}/v1/admin/housekeeping?limit=25", headers=headers,
                          timeout=30).json()["data"]
    task = next(r for r in listed if r["id"] == task_id)
    assert number == task["room_number"] and number != task_id
    wanted = "DIRTY"  # reachable from every status (an out-of-order room comes back DIRTY)
    from selenium.webdriver.support.ui import Select

    Select(_css(browser, "#action-form label[data-field='hk_status'] select")[0]) \
        .select_by_value(wanted)
    _css(browser, "#action-form button[type=submit]")[0].click()
    _wait(browser, lambda d: "set room status: done" in _text(d, "#notice")
          or _css(d, "#problem:not([hidden])"), "the answer")
    assert not _css(browser, "#problem:not([hidden])"), _text(browser, "#problem")
    board = requests.get(f"{base}/v1/properties/{task['property_id']}/housekeeping",
                         params={"hk_status": wanted, "limit": 200}, headers=headers,
                         timeout=30).json()["data"]
    assert number in {r["room_number"] for r in board}
    _errors(browser)


def test_a_double_click_creates_one_row(served, browser):
    """The submit carries the form opening's Idempotency-Key and the button waits for the
    answer: two clicks in a row make one profile."""
    base = served["base"]
    _create_profile_form(browser, base)
    last = "Twice" + uuid.uuid4().hex[:8]
    _fill(browser, "last_name", last)
    _fill(browser, "email", f"{last.lower()}@example.com")
    browser.execute_script("const b = document.querySelector('#action-form "
                           "button[type=submit]'); b.click(); b.click();")
    _wait(browser, lambda d: last in _text(d, "#list tbody"), "the new row in the list")
    assert not _css(browser, "#problem:not([hidden])"), _text(browser, "#problem")
    got = requests.get(f"{base}/v1/admin/profiles?email_normalized={last.lower()}@example.com",
                       headers={"X-PMS-Console": "1"}, timeout=30).json()["data"]
    assert len(got) == 1, got
    _errors(browser)


def test_editing_one_external_system_opens_it_as_it_is_and_keeps_the_others(served, browser):
    """The external systems page edits one system (a row), opened with its state and saved
    with its ETag: the other systems stay as they were."""
    base = served["base"]
    headers = {"X-PMS-Console": "1"}
    systems = f"{base}/v1/settings/external-systems"
    for code, body in (("channel-manager", {"kind": "channel_manager",
                                            "endpoint_url": "https://cm.example/api"}),
                       ("pos", {"kind": "pos", "name": "Bar till",
                                "identifiers": {"outlet": "1"}})):
        resp = requests.put(f"{systems}/{code}", json=body, headers=headers, timeout=30)
        assert resp.status_code in (200, 201), resp.text
    _open(browser, base, "external-systems")
    row = next(r for r in _css(browser, "#list tbody tr") if r.get_attribute("data-id") == "pos")
    row.find_element("css selector", "button[data-action='edit_system']").click()
    _wait(browser, lambda d: _css(d, "#panel:not([hidden]) label[data-field='name'] input"),
          "the edit system form")
    box = _css(browser, "#action-form label[data-field='name'] input")[0]
    assert box.get_attribute("value") == "Bar till"
    _fill(browser, "name", "Lobby bar")
    _css(browser, "#action-form button[type=submit]")[0].click()
    _wait(browser, lambda d: "edit system: done" in _text(d, "#notice")
          or _css(d, "#problem:not([hidden])"), "the answer")
    assert not _css(browser, "#problem:not([hidden])"), _text(browser, "#problem")
    saved = requests.get(systems, headers=headers, timeout=30).json()["systems"]
    assert saved["pos"]["name"] == "Lobby bar" and saved["pos"]["identifiers"] == {"outlet": "1"}
    assert saved["channel-manager"]["endpoint_url"] == "https://cm.example/api"
    _errors(browser)


def test_a_refused_submit_shows_the_problem(served, browser):
    _open(browser, served["base"], "profiles")
    _css(browser, "#toolbar button[data-action='create']")[0].click()
    _wait(browser, lambda d: _css(d, "#panel:not([hidden]) label[data-field='email']"), "form")
    _fill(browser, "email", "not an address")
    _css(browser, "#action-form button[type=submit]")[0].click()
    _wait(browser, lambda d: _css(d, "#problem:not([hidden])"), "the problem shown")
    shown = _text(browser, "#problem")
    assert "422" in shown and "email" in shown, shown
    _errors(browser)  # the 422 itself is logged by Chromium as a failed resource


def _options(driver: Any, selector: str) -> list[tuple[str, str]]:
    """(value, text) of a select's options but its empty first one, read in one script."""
    return [tuple(o) for o in driver.execute_script(
        "return [...document.querySelectorAll(arguments[0] + ' option')]"
        ".filter(o => o.value).map(o => [o.value, o.text]);", selector)]


def test_an_x_lov_field_offers_the_lists_values_with_search(served, browser):
    base = served["base"]
    _open(browser, base, "reservations")
    _css(browser, "#toolbar button[data-action='create']")[0].click()
    select = "#action-form select[data-lov='room-types']"
    _wait(browser, lambda d: _options(d, select), "room type options")
    property_id = _css(browser, "#property")[0].get_attribute("value")
    listed = requests.get(f"{base}/v1/lov/room-types?parent={property_id}&limit=20",
                          headers={"X-PMS-Console": "1"}, timeout=30).json()["data"]
    # room_type_id takes the row's id (a uuid): the option's value; its text names the code
    assert _options(browser, select) == [(i["id"], f"{i['name']} ({i['code']})") for i in listed]
    # search: only the values matching it (Enter searches, it does not submit the form)
    wanted = listed[-1]["code"]
    search = _css(browser, "#action-form label[data-field='room_type_id'] input[type=search]")[0]
    search.send_keys(wanted)
    search.send_keys("\n")
    _wait(browser, lambda d: _options(d, select) == [(listed[-1]["id"], f"{listed[-1]['name']} "
                                                      f"({wanted})")], "the searched options")
    assert not _css(browser, "#problem:not([hidden])"), _text(browser, "#problem")
    assert _errors(browser) == []


# The page's fetch fails its next `n` calls to URLs holding `part` with the TypeError a
# connection closed before any answer gives ("Failed to fetch"), then works again.
_DROP = """
const [part, n] = arguments;
window.__drops = n;
if (!window.__realFetch) window.__realFetch = window.fetch;
window.fetch = (url, init) => {
  if (String(url).includes(part) && window.__drops > 0) {
    window.__drops -= 1;
    return Promise.reject(new TypeError("Failed to fetch"));
  }
  return window.__realFetch(url, init);
};
"""


def test_a_read_that_got_no_answer_is_asked_once_more(served, browser):
    """A list of values' read whose connection closed before any answer (what a kept-alive
    connection the server closed as it was reused gives) is sent once more, and the options
    arrive; dropped twice, the problem names the request. A replace is never sent twice."""
    base = served["base"]
    select = "#action-form select[data-lov='room-types']"
    _open(browser, base, "reservations")
    browser.execute_script(_DROP, "/v1/lov/room-types", 1)
    _css(browser, "#toolbar button[data-action='create']")[0].click()
    _wait(browser, lambda d: _options(d, select), "room type options after one drop")
    assert browser.execute_script("return window.__drops") == 0  # the drop did happen
    assert not _css(browser, "#problem:not([hidden])"), _text(browser, "#problem")

    # control: dropped twice, nothing more is tried and the problem says which request
    browser.execute_script(_DROP, "/v1/lov/room-types", 2)
    _css(browser, "#toolbar button[data-action='create']")[0].click()
    _wait(browser, lambda d: _css(d, "#problem:not([hidden])"), "the problem shown")
    shown = _text(browser, "#problem")
    assert "GET /v1/lov/room-types" in shown and "no answer" in shown, shown

    # a replace is not sent again: one drop of the kiosk PUT is the problem shown
    _open(browser, base, "kiosk-config")
    browser.execute_script(_DROP, "/kiosk-config", 0)
    _css(browser, "#toolbar button[data-action='configure']")[0].click()
    _wait(browser, lambda d: _css(d, "#panel:not([hidden]) label[data-field='lockdown']"),
          "the kiosk form")
    browser.execute_script(_DROP, "/kiosk-config", 1)
    _css(browser, "#action-form button[type=submit]")[0].click()
    _wait(browser, lambda d: _css(d, "#problem:not([hidden])"), "the PUT's problem shown")
    shown = _text(browser, "#problem")
    assert shown.startswith("PUT /v1/admin/") and "kiosk-config" in shown, shown
    browser.execute_script("window.fetch = window.__realFetch;")
    _errors(browser)


def test_missing_chromium_fails_in_ci():
    """The rule the `browser` fixture follows (need_server): CI never skips it."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        assert Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists(), \
            ".ci/run installs chromium and chromium-driver"
        assert shutil.which("chromedriver") or Path(CHROMEDRIVER).exists()
