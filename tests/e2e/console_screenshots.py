"""Screenshots of every console page for the back-office guide (`make screenshots`).

Starts `pms-cli serve` on a free port in a fresh home (the demo hotel, as `make run` leaves
it), opens each page of the admin registry in headless Chromium (the browser tests' setup) and
writes `docs/guides/console-screenshots/<page>.png`, each scaled down to stay small
(Chromium's capture at a reduced scale). Not part
of the test suite: run it when the console's look changes.

    .venv/bin/python -m tests.e2e.console_screenshots [--out DIR] [--width 900]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import requests

from pms.api import admin_pages
from tests.cli.test_serve import _cli, _free_port
from tests.e2e.test_admin_console import CHROMEDRIVER, CHROMIUM, FLAGS

OUT = Path(__file__).resolve().parents[2] / "docs" / "guides" / "console-screenshots"


# (page, what is clicked in order, the form it opens): shown in the guide beside the pages
FORMS = (
    ("policies", ("#toolbar button[data-action='add_policy']",), "add_policy"),
    ("frontdesk", ("#filters button[data-range='arrivals today']",
                   "#list tbody tr button[data-action='check_in']"), "check_in"),
)


def _serve(home: Path) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PMS_") and k != "WEB_CONCURRENCY"}
    env.update({"PMS_DRAIN_SECONDS": "1", "PMS_HOME": str(home)})
    proc = subprocess.Popen([*_cli(), "serve", "--port", str(port)], cwd=home, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("pms-cli serve stopped before it answered")
        try:
            if requests.get(f"{base}/admin/", timeout=30).status_code == 200:
                return proc, base
        except requests.RequestException:
            pass
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("pms-cli serve did not answer in time")


def _shot(driver: object, path: Path, width: int) -> None:
    """The page as a PNG scaled to `width` pixels (Chromium's own capture, no image library)."""
    import base64

    size = driver.execute_script(  # type: ignore[attr-defined]
        "return [document.documentElement.scrollWidth, "
        "Math.min(document.documentElement.scrollHeight, 1400)]")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {  # type: ignore[attr-defined]
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size[0], "height": size[1],
                 "scale": min(1.0, width / size[0])}})
    path.write_bytes(base64.b64decode(shot["data"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--width", type=int, default=900, help="the saved images' width")
    args = parser.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="console-shots-") as tmp:
        (Path(tmp) / "home").mkdir()
        proc, base = _serve(Path(tmp) / "home")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={Path(tmp) / 'profile'}")
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER),
                                  options=options)
        try:
            for page in admin_pages.PAGES:
                driver.get(f"{base}/admin/?p={page}#{page}")
                WebDriverWait(driver, 60).until(lambda d, p=page: d.find_elements(
                    "css selector", f"#page[data-loaded='{p}']"))
                target = args.out / f"{page}.png"
                _shot(driver, target, args.width)
                print(f"{target} ({target.stat().st_size // 1024} KiB)")
            for page, opener, action in FORMS:  # a few forms open, as the guide shows them
                driver.get(f"{base}/admin/?p={page}-form#{page}")
                WebDriverWait(driver, 60).until(lambda d, p=page: d.find_elements(
                    "css selector", f"#page[data-loaded='{p}']:not([data-listing])"))
                for selector in opener:
                    driver.find_element("css selector", selector).click()
                    WebDriverWait(driver, 60).until(lambda d: d.find_elements(
                        "css selector", "#page:not([data-listing])"))
                WebDriverWait(driver, 60).until(lambda d, a=action: d.find_elements(
                    "css selector", f"#panel:not([hidden]) #action-form[data-action='{a}']"))
                target = args.out / f"{page}-{action}.png"
                _shot(driver, target, args.width)
                print(f"{target} ({target.stat().st_size // 1024} KiB)")
        finally:
            driver.quit()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
