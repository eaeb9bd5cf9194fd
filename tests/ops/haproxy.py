"""HAProxy (Debian's 2.6) in front of web instances, as a process of the test: its own config in
a temp directory, a free 127.0.0.1 port, its admin socket for `show stat`; never the system
service.

The backend is configured the way docs/operations/deploys.md tells production to:
- health-checked on `/v1/health` (200 = in rotation; 503 `draining` takes an instance out after
  `fall` failed checks, a restarted one comes back after `rise` good ones);
- `retry-on conn-failure empty-response response-timeout 503` with `option redispatch`, so a
  connection refused by a stopped instance, a kept-alive connection it closed, or its 503 goes
  to the other instance; `option http-buffer-request` keeps the whole request (bodies too) so a
  POST can be sent again. A 503 from pms means nothing was done (refused, busy, or the database
  unavailable before the change committed), so retrying it is safe for any method.

No pytest here.
"""

from __future__ import annotations

import csv
import io
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.ops.pgbouncer import free_port


def available() -> tuple[bool, str]:
    if shutil.which("haproxy") is None and not Path("/usr/sbin/haproxy").exists():
        return False, "haproxy is not installed (apt-get install -y haproxy)"
    return True, ""


def _binary() -> str:
    return shutil.which("haproxy") or "/usr/sbin/haproxy"


@dataclass(frozen=True)
class Checks:
    """Health-check timing: an instance is out after about inter x fall (+ a slow check)."""

    inter_ms: int = 500
    fall: int = 2
    rise: int = 2
    timeout_ms: int = 4000


def _header_value(value: str) -> str:
    if any(c in value for c in "\"\\\r\n"):
        raise ValueError("header value unsuitable for haproxy.cfg")
    return f'"{value}"'


class HAProxy:
    """One haproxy process balancing over `servers` ({name: port} on 127.0.0.1)."""

    def __init__(self, servers: dict[str, int], *, check_headers: dict[str, str],
                 checks: Checks | None = None, retries: int = 3) -> None:
        self.servers = dict(servers)
        self.check_headers = dict(check_headers)
        self.checks = checks or Checks()
        self.retries = retries
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.dir = Path(tempfile.mkdtemp(prefix="pms-haproxy-"))
        self.config_path = self.dir / "haproxy.cfg"
        self.socket_path = self.dir / "admin.sock"
        self.log_path = self.dir / "haproxy.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = None

    def config(self) -> str:
        c = self.checks
        send = " ".join(f"hdr {name} {_header_value(value)}"
                        for name, value in self.check_headers.items())
        lines = [
            "global",
            "    maxconn 4096",
            f"    stats socket {self.socket_path} mode 600 level admin",
            "    log stdout format raw local0 info",
            "",
            "defaults",
            "    mode http",
            "    log global",
            # one line per request with the retries it took (%rc) and the server's status
            '    log-format "%ci:%cp [%tr] %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %tsc %rc %{+Q}r"',
            "    timeout connect 2s",
            "    timeout client 60s",
            "    timeout server 60s",
            "    timeout http-request 10s",
            "    timeout http-keep-alive 10s",
            "    timeout queue 30s",
            f"    timeout check {c.timeout_ms}ms",
            f"    retries {self.retries}",
            "    option redispatch 1",
            "    retry-on conn-failure empty-response response-timeout 503",
            "    option http-buffer-request",
            "",
            "frontend pms",
            f"    bind 127.0.0.1:{self.port}",
            "    default_backend web",
            "",
            "backend web",
            "    balance roundrobin",
            "    option httpchk",
            f"    http-check send meth GET uri /v1/health {send}",
            "    http-check expect status 200",
            f"    default-server inter {c.inter_ms}ms fastinter {c.inter_ms}ms "
            f"downinter {c.inter_ms}ms fall {c.fall} rise {c.rise}",
            *(f"    server {name} 127.0.0.1:{port} check" for name, port in self.servers.items()),
            "",
        ]
        return "\n".join(lines)

    def start(self, timeout_s: float = 20.0) -> HAProxy:
        self.config_path.write_text(self.config())
        check = subprocess.run([_binary(), "-c", "-q", "-f", str(self.config_path)],
                               capture_output=True, text=True, check=False)
        if check.returncode != 0:
            raise RuntimeError(f"haproxy.cfg invalid:\n{check.stdout}{check.stderr}")
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen([_binary(), "-db", "-f", str(self.config_path)],
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"haproxy exited at start:\n{self.log_tail()}")
            try:
                self.stat()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"haproxy did not start:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)  # soft stop: finish what is in progress
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def log_lines(self) -> list[str]:
        try:
            return self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []

    # -- admin socket ----------------------------------------------------------------------------

    def command(self, text: str) -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(self.socket_path))
            sock.sendall(text.encode() + b"\n")
            chunks = []
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def stat(self) -> list[dict[str, str]]:
        text = self.command("show stat")
        return list(csv.DictReader(io.StringIO(text.lstrip("# "))))

    def status(self) -> dict[str, str]:
        """{server name: "UP" | "DOWN" | "UP 1/2" | ...} for the backend's servers."""
        return {row["svname"]: row["status"] for row in self.stat()
                if row["pxname"] == "web" and row["svname"] in self.servers}

    def retried(self) -> int:
        """Requests sent again to a server ("wretr" + "wredis" over the backend)."""
        for row in self.stat():
            if row["pxname"] == "web" and row["svname"] == "BACKEND":
                return int(row.get("wretr") or 0) + int(row.get("wredis") or 0)
        return 0

    def wait_status(self, name: str, wanted: str, timeout_s: float) -> bool:
        """Wait (with a deadline) until `name` is exactly `wanted` ("UP" or "DOWN")."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.status().get(name) == wanted:
                return True
            time.sleep(0.1)
        return False


__all__ = ["Checks", "HAProxy", "available"]
