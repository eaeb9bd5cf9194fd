"""A Patroni cluster as processes of the test: one etcd, two Patroni members (a primary and its
standby, synchronous or not) and HAProxy routing to the leader, on free 127.0.0.1 ports in a
temp directory; never the system services.

The members are filled from deploy/patroni/patroni.yml and HAProxy from
deploy/haproxy/haproxy-postgres.cfg, the files a deployment copies; the service's roles and
database come from deploy/patroni/post_bootstrap.sh. PostgreSQL refuses to run as root: under
root, Patroni (which starts PostgreSQL) runs as the `postgres` account, as tests/ops/hotstandby.py
does.

`kill_leader_postmaster()` sends SIGKILL to the leader's postmaster (its pid from
postmaster.pid): what a crashed server looks like to Patroni, which fails over at once
(`primary_start_timeout: 0`). `wait_leader()` waits for a leader that answers writes through
HAProxy. `pause_standby_receiver()` stops the standby's WAL receiver (SIGSTOP), so what the
primary commits meanwhile is on the primary alone: the window asynchronous replication leaves.

No pytest here.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import string
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psycopg2

from tests.ops import haproxy as haproxy_mod
from tests.ops.hotstandby import bindir, free_port

ROOT = Path(__file__).resolve().parents[2]
PATRONI_TEMPLATE = ROOT / "deploy" / "patroni" / "patroni.yml"
POST_BOOTSTRAP = ROOT / "deploy" / "patroni" / "post_bootstrap.sh"
HAPROXY_TEMPLATE = ROOT / "deploy" / "haproxy" / "haproxy-postgres.cfg"
HOST = "127.0.0.1"


def available() -> tuple[bool, str]:
    for tool in ("patroni", "etcd"):
        if shutil.which(tool) is None:
            return False, f"{tool} is not installed (apt-get install -y patroni etcd-server)"
    ok, why = haproxy_mod.available()
    if not ok:
        return ok, why
    if bindir() is None or not (bindir() / "pg_rewind").exists():
        return False, "no PostgreSQL server binaries (initdb, pg_rewind) are installed"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return False, "running as root and there is no postgres account to run PostgreSQL"
    return True, ""


@dataclass
class Member:
    name: str
    pg_port: int
    rest_port: int
    data_dir: Path
    config_path: Path
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None

    def rest(self, path: str, timeout: float = 2.0) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.rest_port}{path}",
                                        timeout=timeout) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            body = exc.read()
            try:
                return exc.code, json.loads(body or b"{}")
            except ValueError:
                return exc.code, {}
        except (OSError, ValueError):
            return 0, {}

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None


@dataclass
class PatroniCluster:
    """`start()` etcd, two members and HAProxy; `url(role)` is a connection through HAProxy."""

    synchronous: bool = True
    ttl: int = 10
    loop_wait: int = 1
    retry_timeout: int = 4
    check_inter_ms: int = 500
    db_name: str = "pms"
    owner: str = "pms_owner"
    app_role: str = "pms_app"
    dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pms-patroni-")))
    members: list[Member] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._user = "postgres" if os.geteuid() == 0 else None
        if self._user:
            account = pwd.getpwnam(self._user)
            os.chown(self.dir, account.pw_uid, account.pw_gid)
        self.scope = f"pms-{uuid.uuid4().hex[:8]}"
        self.owner_password = uuid.uuid4().hex
        self.app_password = uuid.uuid4().hex
        self.superuser_password = uuid.uuid4().hex
        self.etcd_client_port = free_port()
        self.etcd_peer_port = free_port()
        self.haproxy_port = free_port()
        self.haproxy_socket = self.dir / "haproxy.sock"
        self.haproxy_log = self.dir / "haproxy.log"
        self._etcd: subprocess.Popen[bytes] | None = None
        self._haproxy: subprocess.Popen[bytes] | None = None
        self._logs: list = []
        for n in (1, 2):
            name = f"pg{n}"
            self.members.append(Member(
                name=name, pg_port=free_port(), rest_port=free_port(),
                data_dir=self.dir / name, config_path=self.dir / f"{name}.yml",
                log_path=self.dir / f"{name}.log"))

    # -- URLs ------------------------------------------------------------------------------------

    def url(self, role: str = "app", *, port: int | None = None) -> str:
        """A URL through HAProxy (or straight to `port`) for the service role (`app`), the
        owner (`owner`) or the superuser (`admin`)."""
        user, secret, dbname = {
            "app": (self.app_role, self.app_password, self.db_name),
            "owner": (self.owner, self.owner_password, self.db_name),
            "admin": ("postgres", self.superuser_password, "postgres"),
        }[role]
        return f"postgresql://{user}:{secret}@{HOST}:{port or self.haproxy_port}/{dbname}"

    # -- configuration ---------------------------------------------------------------------------

    def member_config(self, member: Member) -> str:
        return string.Template(PATRONI_TEMPLATE.read_text()).substitute(
            scope=self.scope, name=member.name, host=HOST, rest_port=member.rest_port,
            etcd_hosts=f"{HOST}:{self.etcd_client_port}", ttl=self.ttl,
            loop_wait=self.loop_wait, retry_timeout=self.retry_timeout,
            synchronous_mode="true" if self.synchronous else "false",
            # the control may fail over to a standby that is behind: that is the loss it shows
            maximum_lag_on_failover=1048576 if self.synchronous else 1 << 40,
            max_connections=100,
            # throwaway clusters on a shared box: no fsync (a kill -9 of a process, not of the
            # machine, loses nothing the kernel has)
            extra_parameters="        fsync: \"off\"\n        full_page_writes: \"on\"\n"
                             "        shared_buffers: 32MB\n"
                             "        wal_receiver_status_interval: 1s\n",
            post_bootstrap=str(POST_BOOTSTRAP), pg_port=member.pg_port,
            data_dir=member.data_dir, bin_dir=bindir(), pgpass=self.dir / f"{member.name}.pgpass",
            superuser_password=self.superuser_password,
            replication_password=self.superuser_password,
            socket_dir=self.dir, member_parameters="",
            cluster_cidr="127.0.0.1/32", client_cidr="127.0.0.1/32", auth_method="md5",
        )

    def haproxy_config(self) -> str:
        servers = "\n".join(f"    server {m.name} {HOST}:{m.pg_port} check port {m.rest_port}"
                            for m in self.members)
        return string.Template(HAPROXY_TEMPLATE.read_text()).substitute(
            admin_socket=self.haproxy_socket, bind=f"{HOST}:{self.haproxy_port}",
            check_inter=f"{self.check_inter_ms}ms", fall=2, rise=1, servers=servers) + "\n"

    # -- processes -------------------------------------------------------------------------------

    def _as_postgres(self, cmd: list[str]) -> list[str]:
        return ["runuser", "-u", self._user, "--", *cmd] if self._user else cmd

    def _write(self, path: Path, text: str) -> None:
        path.write_text(text)
        if self._user:
            account = pwd.getpwnam(self._user)
            os.chown(path, account.pw_uid, account.pw_gid)

    def _log(self, path: Path):
        handle = path.open("ab")
        self._logs.append(handle)
        return handle

    def start(self, timeout_s: float = 90.0) -> PatroniCluster:
        try:
            self._start_etcd()
            self.start_member(self.members[0])
            self.wait_leader(timeout_s=timeout_s, through_haproxy=False)
            self.start_member(self.members[1])
            self._start_haproxy()
            self.wait_replicating(timeout_s=timeout_s)
            self.wait_leader(timeout_s=timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_etcd(self) -> None:
        data = self.dir / "etcd"
        client = f"http://{HOST}:{self.etcd_client_port}"
        peer = f"http://{HOST}:{self.etcd_peer_port}"
        self._etcd = subprocess.Popen(
            ["etcd", "--name", "etcd1", "--data-dir", str(data),
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"etcd1={peer}", "--initial-cluster-state", "new",
             "--initial-cluster-token", self.scope, "--log-level", "warn"],
            stdout=self._log(self.dir / "etcd.log"), stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._etcd.poll() is not None:
                raise RuntimeError(f"etcd exited at start:\n{self.tail('etcd.log')}")
            try:
                with urllib.request.urlopen(client + "/health", timeout=1) as resp:
                    if json.loads(resp.read()).get("health") in ("true", True):
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"etcd did not start:\n{self.tail('etcd.log')}")

    def start_member(self, member: Member) -> None:
        self._write(member.config_path, self.member_config(member))
        # the bootstrap script's settings; the system's python and PostgreSQL's bin first
        env = {"PMS_DB_NAME": self.db_name, "PMS_DB_OWNER": self.owner,
               "PMS_DB_APP": self.app_role, "PMS_DB_OWNER_PASSWORD": self.owner_password,
               "PMS_DB_APP_PASSWORD": self.app_password,
               "PATH": f"{bindir()}:/usr/local/bin:/usr/bin:/bin"}
        member.proc = subprocess.Popen(
            self._as_postgres(["env", "-i", *(f"{k}={v}" for k, v in env.items()),
                               shutil.which("patroni") or "patroni", str(member.config_path)]),
            cwd=self.dir, stdout=self._log(member.log_path), stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)

    def _start_haproxy(self) -> None:
        path = self.dir / "haproxy.cfg"
        path.write_text(self.haproxy_config())
        binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
        check = subprocess.run([binary, "-c", "-q", "-f", str(path)], capture_output=True,
                               text=True, check=False)
        if check.returncode != 0:
            raise RuntimeError(f"haproxy.cfg invalid:\n{check.stdout}{check.stderr}")
        self._haproxy = subprocess.Popen([binary, "-db", "-f", str(path)],
                                         stdout=self._log(self.haproxy_log),
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)

    # -- state -----------------------------------------------------------------------------------

    def leader(self) -> Member | None:
        for member in self.members:
            if member.rest("/primary")[0] == 200:
                return member
        return None

    def standby(self) -> Member | None:
        leader = self.leader()
        return next((m for m in self.members if leader is not None and m is not leader), None)

    def wait_leader(self, timeout_s: float = 60.0, *, through_haproxy: bool = True,
                    not_: Member | None = None) -> Member:
        """A leader (other than `not_`) that takes a write, through HAProxy by default."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            leader = self.leader()
            if leader is not None and leader is not not_:
                port = None if through_haproxy else leader.pg_port
                try:
                    conn = psycopg2.connect(self.url("admin", port=port), connect_timeout=2)
                    try:
                        with conn.cursor() as cur:
                            cur.execute("SELECT pg_is_in_recovery()")
                            if cur.fetchone()[0] is False:
                                return leader
                    finally:
                        conn.close()
                except psycopg2.Error:
                    pass
            time.sleep(0.2)
        raise TimeoutError(f"no leader in {timeout_s:.0f} s:\n{self.tails()}")

    def wait_replicating(self, timeout_s: float = 90.0) -> Member:
        """Until the standby streams from the leader (and, in synchronous mode, is the
        synchronous standby Patroni named)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status, body = self.members[0].rest("/cluster")
            members = body.get("members", []) if status == 200 else []
            wanted = "sync_standby" if self.synchronous else "replica"
            for m in members:
                if m.get("role") == wanted and m.get("state") in ("streaming", "running"):
                    leader = self.leader()
                    if leader is not None and self._streaming(leader):
                        return next(x for x in self.members if x.name == m["name"])
            time.sleep(0.3)
        raise TimeoutError(f"the standby did not start streaming:\n{self.tails()}")

    def _streaming(self, leader: Member) -> bool:
        try:
            conn = psycopg2.connect(self.url("admin", port=leader.pg_port), connect_timeout=2)
        except psycopg2.Error:
            return False
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'")
                states = [r[0] for r in cur.fetchall()]
        finally:
            conn.close()
        return ("sync" in states) if self.synchronous else bool(states)

    # -- faults ----------------------------------------------------------------------------------

    def kill_leader_postmaster(self) -> Member:
        leader = self.leader()
        if leader is None:
            raise RuntimeError("no leader to kill")
        pid = leader.postmaster_pid()
        if pid is None:
            raise RuntimeError(f"{leader.name} has no postmaster.pid")
        os.kill(pid, signal.SIGKILL)
        return leader

    def _walreceiver_pids(self, member: Member) -> list[int]:
        out = subprocess.run(["pgrep", "-f", f"postgres: {self.scope}: walreceiver"],
                             capture_output=True, text=True, check=False).stdout
        found = [int(p) for p in out.split()]
        if found:
            return found
        # cluster_name absent from the title: the walreceiver among the postmaster's children
        pid = member.postmaster_pid()
        out = subprocess.run(["pgrep", "-P", str(pid), "-f", "walreceiver"],
                             capture_output=True, text=True, check=False).stdout
        return [int(p) for p in out.split()]

    def pause_standby_receiver(self) -> list[int]:
        standby = self.standby()
        if standby is None:
            raise RuntimeError("no standby")
        pids = self._walreceiver_pids(standby)
        if not pids:
            raise RuntimeError("the standby has no WAL receiver")
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        return pids

    @staticmethod
    def resume(pids: list[int]) -> None:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    # -- teardown --------------------------------------------------------------------------------

    def tail(self, name: str, lines: int = 30) -> str:
        try:
            return "\n".join((self.dir / name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def tails(self) -> str:
        return "\n".join(f"--- {m.name}\n{self.tail(m.log_path.name)}" for m in self.members)

    def stop(self) -> None:
        for member in self.members:
            if member.proc is not None and member.proc.poll() is None:
                member.proc.send_signal(signal.SIGTERM)
        for member in self.members:
            if member.proc is not None:
                try:
                    member.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    member.proc.kill()
                    member.proc.wait(timeout=5)
            pid = member.postmaster_pid()
            if pid is not None:  # a postmaster Patroni left behind
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for proc in (self._haproxy, self._etcd):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        for handle in self._logs:
            handle.close()
        self._logs.clear()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


__all__ = ["Member", "PatroniCluster", "available"]
