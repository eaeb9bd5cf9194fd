"""The `make run` promise: `pms-cli serve` on a fresh directory (embedded defaults: SQLite, dev
keys, StubBroker) migrates, seeds the demo hotel (with a business date), writes a token to a
file, prints a curl line that reads it from there, and that curl line returns the demo
property. The output fits a terminal, and the server listens on 127.0.0.1 only."""

from __future__ import annotations

import os
import re
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


def _curl_block(lines: list[str]) -> str | None:
    """The printed curl command, its `\\` continuation lines joined."""
    for i, line in enumerate(lines):
        if line.strip().startswith("curl "):
            parts = []
            for part in lines[i:]:
                parts.append(part.strip().removesuffix("\\").strip())
                if not part.rstrip().endswith("\\"):
                    return " ".join(parts)
            return None
    return None


def _listening(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp* shows them) listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            address, _, hex_port = fields[1].rpartition(":")
            if fields[3] == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


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
    # a short lived past keeps the start within the deadline (the month: test_demo_month.py)
    env.update({"PMS_DRAIN_SECONDS": "1", "PMS_HOME": str(home), "PMS_DEMO_DAYS": "2"})
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
            curl_line = _curl_block(list(lines))
            time.sleep(0.1)
        assert curl_line, "".join(lines)
        printed = "".join(lines)
        assert "Token (12 h):  written to" in printed and "Demo property:" in printed
        assert re.search(r"business date \d{4}-\d{2}-\d{2}", printed), printed
        # fits a terminal: the token is in a file, not on the screen (the banner's length
        # leaves out gunicorn's own log lines, which come as the workers boot)
        token = (home / "demo-token").read_text().strip()
        banner = "".join(line for line in lines if not line.lstrip().startswith("[20"))
        assert token not in printed and len(banner) < 1200, printed
        # (`make run` keeps it under ./var; this test's home is a long temporary path)
        assert max(len(line.rstrip("\n").replace(str(home), "var"))
                   for line in lines[:12]) <= 100, printed
        assert f"$(cat {home / 'demo-token'})" in curl_line, curl_line
        assert (home / "demo-token").stat().st_mode & 0o077 == 0

        url, headers = _curl_to_request(curl_line.replace(
            f"$(cat {home / 'demo-token'})", token))
        assert url.startswith(f"http://127.0.0.1:{port}/v1/properties/")
        resp = None
        while time.monotonic() < deadline:
            try:
                # (a wait, not a window: the first answer of a worker just booted on a loaded
                # machine took more than 5 s once)
                resp = requests.get(url, headers=headers, timeout=60)
                break
            except requests.ConnectionError:
                assert proc.poll() is None, "".join(lines)
                time.sleep(0.2)
        assert resp is not None and resp.status_code == 200, (resp and resp.text, printed)
        assert resp.json()["propertyCode"] == "DEMO1"
        assert url.rsplit("/", 1)[1] == resp.json()["id"]
        assert resp.json()["businessDate"], resp.json()  # the demo hotel's own "today"
        assert _listening(port) == {"0100007F"}, _listening(port)  # 127.0.0.1 only

        if shutil.which("curl"):  # the line exactly as printed, run by a shell
            out = subprocess.run(["bash", "-c", curl_line], capture_output=True, text=True,
                                 timeout=60, cwd=elsewhere)
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
