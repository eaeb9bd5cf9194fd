"""A PostgreSQL primary and a streaming hot standby as processes of the test run.

The machine's cluster (127.0.0.1:5432) takes no replication connections (its pg_hba.conf has
no `replication` line) and is shared by every run on the box, so the helper makes its own: an
`initdb` primary in a temp directory on a free port (fsync off: throwaway), a `pg_basebackup
-R -X stream` of it started as a hot standby on another free port with
`recovery_min_apply_delay` (GitLab's lag simulation), both stopped and deleted by `stop()`.
PostgreSQL refuses to run as root: under root every command runs as the `postgres` account.

No pytest here: bench/ may use it too.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bindir() -> Path | None:
    """The newest installed PostgreSQL's bin directory with initdb and pg_basebackup."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                   key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0)
    for path in reversed(found):
        if (Path(path) / "initdb").exists() and (Path(path) / "pg_basebackup").exists():
            return Path(path)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def available() -> tuple[bool, str]:
    if bindir() is None:
        return False, "no PostgreSQL server binaries (initdb, pg_basebackup) are installed"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return False, "running as root and there is no postgres account to run PostgreSQL"
    return True, ""


class HotStandbyPair:
    """`start()` a primary and a standby; `primary_port`, `standby_port`, `admin_url`."""

    def __init__(self, apply_delay: str = "2s") -> None:
        self.apply_delay = apply_delay
        self.bin = bindir()
        self.dir = Path(tempfile.mkdtemp(prefix="pms-standby-"))
        self.primary_port = free_port()
        self.standby_port = free_port()
        self._user = "postgres" if os.geteuid() == 0 else None
        if self._user:
            account = pwd.getpwnam(self._user)
            os.chown(self.dir, account.pw_uid, account.pw_gid)
        self.primary_dir = self.dir / "primary"
        self.standby_dir = self.dir / "standby"
        self.standby_running = False

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.primary_port}/postgres"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self._user:
            cmd = ["runuser", "-u", self._user, "--", *cmd]
        return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=120)

    def _conf(self, data: Path, port: int, extra: str = "") -> None:
        text = (f"\nport = {port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.dir}'\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                "shared_buffers = 32MB\nmax_connections = 60\nmax_wal_senders = 4\n"
                "wal_level = replica\nhot_standby = on\nlogging_collector = off\n"
                "wal_receiver_status_interval = 1s\n" + extra)
        path = data / "postgresql.conf"
        if self._user:  # the file belongs to postgres; append through the same account
            subprocess.run(["runuser", "-u", self._user, "--", "sh", "-c",
                            f"cat >> '{path}'"], input=text, text=True, check=True)
        else:
            with path.open("a") as handle:
                handle.write(text)

    def start(self) -> HotStandbyPair:
        try:
            self._run("initdb", "-D", str(self.primary_dir), "-A", "trust", "-U", "postgres",
                      "--no-sync", "-E", "UTF8", "--locale", "C")
            self._conf(self.primary_dir, self.primary_port)
            self._run("pg_ctl", "-D", str(self.primary_dir), "-l", str(self.dir / "primary.log"),
                      "-w", "-t", "60", "start")
            self._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(self.primary_port),
                      "-U", "postgres", "-D", str(self.standby_dir), "-R", "-X", "stream",
                      "-c", "fast", "--no-sync")
            self._conf(self.standby_dir, self.standby_port,
                       f"recovery_min_apply_delay = '{self.apply_delay}'\n")
            self.start_standby()
        except subprocess.CalledProcessError as exc:
            self.stop()
            raise RuntimeError(f"{exc.cmd[-1] if exc.cmd else 'PostgreSQL'} failed: "
                               f"{exc.stderr or exc.stdout}") from exc
        return self

    def start_standby(self) -> None:
        self._run("pg_ctl", "-D", str(self.standby_dir), "-l", str(self.dir / "standby.log"),
                  "-w", "-t", "60", "start")
        self.standby_running = True

    def kill_standby(self) -> None:
        """Stop the standby as a crash would (immediate: every backend gone at once)."""
        self._run("pg_ctl", "-D", str(self.standby_dir), "-m", "immediate", "-w", "stop",
                  check=False)
        self.standby_running = False

    def wait_replayed(self, dbname: str = "postgres", timeout_s: float = 30.0) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        with psycopg2.connect(host="127.0.0.1", port=self.primary_port, user="postgres",
                              dbname=dbname) as conn, conn.cursor() as cur:
            cur.execute("SELECT pg_current_wal_insert_lsn()::text")
            target = cur.fetchone()[0]
        conn.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            conn = psycopg2.connect(host="127.0.0.1", port=self.standby_port, user="postgres",
                                    dbname=dbname)
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,))
                    if cur.fetchone()[0]:
                        return
            finally:
                conn.close()
            time.sleep(0.2)
        raise TimeoutError("the standby did not replay the primary's WAL in time")

    def stop(self) -> None:
        for data in (self.standby_dir, self.primary_dir):
            if (data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
