"""PgBouncer in transaction pooling mode as a process of the test run (or of a benchmark run).

Debian's 1.18 is what production would get. The helper never touches the system service: it
writes its own config into a temp directory, listens on a free 127.0.0.1 port (no unix socket),
and points a `*` fallback database at the PostgreSQL server of the admin URL, so every throwaway
database the suite creates is reachable by name.

Auth: `auth_type = trust` towards the clients (127.0.0.1 only), but PgBouncer still needs every
user in its `auth_file`, and it logs in to PostgreSQL with the password it finds there (trust
here, md5/scram in CI). Roles are created per run, so `add_user` rewrites the file and makes
PgBouncer reload it through its admin console (`RELOAD` answers when the reload is done, so no
waiting on a signal). PgBouncer refuses to run as root; under root it is started with
`-u <owner of the PostgreSQL data>` and its files are made readable for that user.

No pytest here: bench/ uses it too.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import psycopg2

ADMIN_USER = "pms_bouncer_admin"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def available() -> tuple[bool, str]:
    if shutil.which("pgbouncer") is None and not Path("/usr/sbin/pgbouncer").exists():
        return False, "pgbouncer is not installed (apt-get install -y pgbouncer)"
    return True, ""


def _binary() -> str:
    return shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"


def _run_as() -> str | None:
    """PgBouncer will not run as root: pick an unprivileged account that exists."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and no unprivileged user for pgbouncer")


def _quote(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


class PgBouncer:
    """One pgbouncer process: `start()`, `url_for(url)`, `add_user(name, password)`, `stop()`."""

    def __init__(self, server_url: str, *, pool_size: int = 4, max_client_conn: int = 1000,
                 workdir: Path | None = None) -> None:
        server = urlparse(server_url)
        self.server_host = server.hostname or "127.0.0.1"
        self.server_port = server.port or 5432
        self.pool_size = pool_size
        self.max_client_conn = max_client_conn
        self.port = free_port()
        self._owns_dir = workdir is None
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="pms-pgbouncer-"))
        self.config_path = self.dir / "pgbouncer.ini"
        self.auth_path = self.dir / "users.txt"
        self.log_path = self.dir / "pgbouncer.log"
        self._admin_password = uuid.uuid4().hex
        self._users: dict[str, str] = {ADMIN_USER: self._admin_password}
        self._lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = None

    # -- configuration ---------------------------------------------------------------------------

    def _write_config(self) -> None:
        # default_pool_size server connections per (database, user) for any number of clients:
        # transaction pooling hands a server connection to a client for one transaction only.
        # server_reset_query is not run in transaction mode; nothing session-level may be relied
        # on (see README "Deploys and pooling").
        text = "\n".join([
            "[databases]",
            f"* = host={self.server_host} port={self.server_port}",
            "",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            f"listen_port = {self.port}",
            "unix_socket_dir =",
            "auth_type = trust",
            f"auth_file = {self.auth_path}",
            f"admin_users = {ADMIN_USER}",
            "pool_mode = transaction",
            f"default_pool_size = {self.pool_size}",
            "min_pool_size = 0",
            "reserve_pool_size = 0",
            f"max_client_conn = {self.max_client_conn}",
            "max_db_connections = 0",
            "server_login_retry = 1",
            # a client waiting for a server connection: fail loudly rather than hang a test
            "query_wait_timeout = 60",
            "log_connections = 0",
            "log_disconnections = 0",
            "",
        ])
        self.config_path.write_text(text)
        self._write_users()
        self._share_files()

    def _write_users(self) -> None:
        lines = [f"{_quote(name)} {_quote(secret)}" for name, secret in sorted(self._users.items())]
        tmp = self.auth_path.with_suffix(".tmp")
        tmp.write_text("\n".join(lines) + "\n")
        tmp.chmod(0o644)
        tmp.replace(self.auth_path)

    def _share_files(self) -> None:
        if _run_as() is not None:  # the unprivileged user must read the config and auth files
            self.dir.chmod(0o755)
            for path in (self.config_path, self.auth_path):
                path.chmod(0o644)

    # -- life cycle ------------------------------------------------------------------------------

    def start(self, timeout_s: float = 30.0) -> PgBouncer:
        self._write_config()
        command = [_binary()]
        user = _run_as()
        if user:
            command += ["-u", user]
        command.append(str(self.config_path))
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pgbouncer exited at start:\n{self.log_tail()}")
            try:
                self._admin("SHOW VERSION")
                return self
            except psycopg2.Error:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"pgbouncer did not start in {timeout_s}s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # safe shutdown: waits for clients to finish
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    # -- use -------------------------------------------------------------------------------------

    @property
    def admin_url(self) -> str:
        return (f"postgresql://{ADMIN_USER}:{self._admin_password}@127.0.0.1:{self.port}"
                "/pgbouncer")

    def _admin(self, command: str) -> list[tuple[object, ...]]:
        """One admin-console command (no transactions there, so autocommit)."""
        conn = psycopg2.connect(self.admin_url, connect_timeout=5)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(command)
                return list(cur.fetchall()) if cur.description else []
        finally:
            conn.close()

    def add_user(self, name: str, password: str) -> None:
        """Make `name` known to PgBouncer (and the password it logs in to PostgreSQL with)."""
        with self._lock:
            if self._users.get(name) == password:
                return
            self._users[name] = password
            self._write_users()
            if self.proc is not None:
                self._admin("RELOAD")

    def route(self, url: str) -> str:
        """`url` (a direct PostgreSQL URL) rewritten to go through this PgBouncer; its user is
        registered on the way."""
        parts = urlparse(url)
        self.add_user(parts.username or "", parts.password or "")
        netloc = parts.netloc.rsplit("@", 1)
        auth = netloc[0] + "@" if len(netloc) == 2 else ""
        return parts._replace(netloc=f"{auth}127.0.0.1:{self.port}").geturl()

    def pools(self) -> list[dict[str, object]]:
        """`SHOW POOLS`, as dicts (cl_active, sv_active, ... per database and user)."""
        conn = psycopg2.connect(self.admin_url, connect_timeout=5)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SHOW POOLS")
                names = [c.name for c in cur.description]
                return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        finally:
            conn.close()


__all__ = ["PgBouncer", "available", "free_port"]
