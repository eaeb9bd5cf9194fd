"""The `make run` promise: `pms-cli serve` on a fresh directory (embedded defaults: SQLite, dev
keys, StubBroker) migrates, seeds the demo hotel, prints a token and a curl line, and that curl
line returns the demo property."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("pms-cli")
    return [str(script)] if script.exists() else [sys.executable, "-m", "cli.main"]


def _curl_to_request(line: str) -> tuple[str, dict[str, str]]:
    """The URL and headers of the printed `curl -s -H ... URL` line."""
    words = shlex.split(line)
    assert words[0] == "curl", line
    headers: dict[str, str] = {}
    url = ""
    i = 1
    while i < len(words):
        if words[i] == "-H":
            key, _, value = words[i + 1].partition(":")
            headers[key.strip()] = value.strip()
            i += 2
        elif words[i].startswith("-"):
            i += 1
        else:
            url = words[i]
            i += 1
    return url, headers


def _children(pid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[1]) == pid:
                        count += 1
            except (OSError, ValueError, IndexError):
                continue
    return count


def test_serve_prints_a_curl_line_that_returns_the_demo_property(tmp_path: Path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PMS_") and k != "WEB_CONCURRENCY"}
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    elsewhere.mkdir()
    env.update({"PMS_DRAIN_SECONDS": "1", "PMS_HOME": str(home)})
    proc = subprocess.Popen([*_cli(), "serve", "--port", str(port)], cwd=elsewhere, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")),
                              daemon=True)
    reader.start()
    try:
        curl_line = None
        deadline = time.monotonic() + 90
        while curl_line is None and time.monotonic() < deadline:
            assert proc.poll() is None, "".join(lines)
            curl_line = next((ln.strip() for ln in list(lines)
                              if ln.strip().startswith("curl ")), None)
            time.sleep(0.1)
        assert curl_line, "".join(lines)
        printed = "".join(lines)
        assert "Token (12 h):" in printed and "Demo property:" in printed

        url, headers = _curl_to_request(curl_line)
        assert url.startswith(f"http://127.0.0.1:{port}/v1/properties/")
        resp = None
        while time.monotonic() < deadline:
            try:
                resp = requests.get(url, headers=headers, timeout=5)
                break
            except requests.ConnectionError:
                assert proc.poll() is None, "".join(lines)
                time.sleep(0.2)
        assert resp is not None and resp.status_code == 200, (resp and resp.text, printed)
        assert resp.json()["propertyCode"] == "DEMO1"
        assert url.rsplit("/", 1)[1] == resp.json()["id"]

        if shutil.which("curl"):  # the line exactly as printed
            out = subprocess.run(shlex.split(curl_line), capture_output=True, text=True,
                                 timeout=10)
            assert '"propertyCode":"DEMO1"' in out.stdout.replace(" ", ""), out

        # two workers on the embedded SQLite file, whatever the CPU count (serve execs gunicorn)
        assert _children(proc.pid) == 2

        # the embedded default's files live under PMS_HOME, not in the working directory
        assert (home / "pms.db").exists()
        assert (home / "dev-jwks.json").exists()
        assert not (elsewhere / "var").exists()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
