"""A three-node RabbitMQ cluster on this machine, as processes of the test that starts it.

Each node has its own node name (`pmsc<N>-<tag>@localhost`), AMQP port and distribution port,
its database and logs under a temporary directory, a config without the management plugin and
the machine's own node (5672) left alone. They share one Erlang cookie (a HOME of their own with
`.erlang.cookie`, mode 400, for the nodes and for `rabbitmqctl`) and are joined with
`rabbitmqctl join_cluster`, as an operator would. `kill(n)` is a machine loss: SIGKILL of the
node's Erlang VM (its pid file), no shutdown of any kind; `start(n)` brings it back on its own
data, and it rejoins the cluster. No pytest here: tests/chaos/test_broker_node_loss.py drives it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"  # not the sbin wrapper: it would su rabbitmq
CTL = "/usr/lib/rabbitmq/bin/rabbitmqctl"

# Settings a deployment copies live in deploy/rabbitmq/rabbitmq.conf; these are the test's own:
# loopback only, no management listener, quick detection of a lost peer.
NODE_CONF = """\
listeners.tcp.default = 127.0.0.1:{port}
loopback_users = none
log.console = false
log.file.level = info
cluster_partition_handling = pause_minority
heartbeat = 10
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def available() -> tuple[bool, str]:
    """Whether this machine can run the cluster (the server and its CLI installed)."""
    for path in (SERVER, CTL):
        if not os.access(path, os.X_OK):
            return False, f"{path} is not installed"
    return True, ""


@dataclass
class Node:
    index: int
    name: str
    port: int
    dist_port: int
    base: Path
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    @property
    def pid_file(self) -> Path:
        return self.base / "node.pid"

    def beam_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None


class RabbitCluster:
    """Three nodes; `start_all()`, `kill(i)`, `start(i)`, `stop()` (which also cleans up)."""

    def __init__(self, size: int = 3, *, root: Path | None = None) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="pms-rabbit-cluster-"))
        self.home = self.root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        cookie = self.home / ".erlang.cookie"
        cookie.write_text(secrets.token_hex(16).upper())
        cookie.chmod(0o400)
        tag = secrets.token_hex(3)
        self.nodes = [Node(i, f"pmsc{i + 1}-{tag}@localhost", free_port(), free_port(),
                           self.root / f"node{i + 1}") for i in range(size)]
        for node in self.nodes:
            node.base.mkdir(parents=True, exist_ok=True)
            (node.base / "rabbitmq.conf").write_text(NODE_CONF.format(port=node.port))
            (node.base / "enabled_plugins").write_text("[].\n")
            (node.base / "rabbitmq-env.conf").write_text("")  # not the machine's /etc one

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    @property
    def broker_url(self) -> str:
        """PMS_BROKER_URL for the whole cluster."""
        return ",".join(self.urls)

    def _env(self, node: Node) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RABBITMQ_")}
        env.update({
            "HOME": str(self.home),
            "RABBITMQ_NODENAME": node.name,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(node.port),
            "RABBITMQ_DIST_PORT": str(node.dist_port),
            "RABBITMQ_CONFIG_FILE": str(node.base / "rabbitmq.conf"),
            "RABBITMQ_CONF_ENV_FILE": str(node.base / "rabbitmq-env.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(node.base / "enabled_plugins"),
            "RABBITMQ_ENABLED_PLUGINS": "",
            "RABBITMQ_MNESIA_BASE": str(node.base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(node.base / "log"),
            "RABBITMQ_PID_FILE": str(node.pid_file),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS":
                "-kernel inet_dist_use_interface {127,0,0,1}",
            "ERL_EPMD_ADDRESS": "127.0.0.1",
        })
        return env

    def ctl(self, node: Node, *args: str, timeout: float = 90.0) -> str:
        done = subprocess.run([CTL, "-q", "-n", node.name, *args], env=self._env(node),
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"rabbitmqctl -n {node.name} {' '.join(args)}: "
                               f"{done.stdout.strip()} {done.stderr.strip()}")
        return done.stdout

    def start(self, index: int, *, wait: bool = True) -> None:
        """Start (or restart, on its data) node `index`."""
        node = self.nodes[index]
        node.pid_file.unlink(missing_ok=True)
        log = (node.base / "console.log").open("ab")
        node.process = subprocess.Popen([SERVER], env=self._env(node), stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True,
                                        cwd=node.base)
        if wait:
            self.wait_running(index)

    def wait_running(self, index: int, timeout: float = 120.0) -> None:
        node = self.nodes[index]
        deadline = time.monotonic() + timeout
        while True:
            if node.process is not None and node.process.poll() is not None:
                raise RuntimeError(f"{node.name} exited: {self.tail(index)}")
            try:
                self.ctl(node, "await_startup", "--timeout", "10", timeout=30)
                if _accepts(node.port):
                    return
            except (RuntimeError, subprocess.TimeoutExpired):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{node.name} did not start: {self.tail(index)}")
            time.sleep(0.5)

    def start_all(self) -> None:
        """Start every node, then join the others to the first."""
        for index in range(len(self.nodes)):
            self.start(index, wait=False)
        for index in range(len(self.nodes)):
            self.wait_running(index)
        first = self.nodes[0]
        for node in self.nodes[1:]:
            self.ctl(node, "stop_app")
            self.ctl(node, "join_cluster", first.name)
            self.ctl(node, "start_app")
        for index in range(len(self.nodes)):
            self.wait_running(index)
        running = self.running_nodes(0)
        if sorted(running) != sorted(n.name for n in self.nodes):
            raise RuntimeError(f"the cluster did not form: {running}")

    def running_nodes(self, index: int) -> list[str]:
        """The running nodes as node `index` sees them."""
        out = self.ctl(self.nodes[index], "eval",
                       "io:format(\"~s~n\", [string:join([atom_to_list(N) || "
                       "N <- rabbit_nodes:all_running()], \",\")]).")
        return [name for name in out.strip().splitlines()[0].split(",") if name]

    def kill(self, index: int) -> float:
        """SIGKILL of node `index`'s Erlang VM (a machine lost); the monotonic time of the
        kill."""
        node = self.nodes[index]
        pid = node.beam_pid()
        if pid is None:
            raise RuntimeError(f"{node.name} has no pid file")
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        if node.process is not None:
            try:
                node.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(node.process.pid, signal.SIGKILL)
                node.process.wait(timeout=10)
        return killed

    def wait_seen_down(self, index: int, timeout: float = 60.0) -> None:
        """Until a surviving node no longer counts node `index` as running."""
        other = next(i for i in range(len(self.nodes)) if i != index)
        deadline = time.monotonic() + timeout
        while self.nodes[index].name in self.running_nodes(other):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.nodes[index].name} still seen running")
            time.sleep(0.2)

    def wait_rejoined(self, index: int, timeout: float = 120.0) -> None:
        other = next(i for i in range(len(self.nodes)) if i != index)
        deadline = time.monotonic() + timeout
        while self.nodes[index].name not in self.running_nodes(other):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.nodes[index].name} did not rejoin")
            time.sleep(0.5)

    def tail(self, index: int, lines: int = 20) -> str:
        node = self.nodes[index]
        chunks = []
        for path in [node.base / "console.log", *sorted((node.base / "log").glob("*.log"))]:
            try:
                chunks.extend(path.read_text(errors="replace").splitlines()[-lines:])
            except OSError:
                continue
        return "\n".join(chunks[-lines:])

    def stop(self) -> None:
        """Kill every node this cluster started and remove its files."""
        for node in self.nodes:
            pid = node.beam_pid()
            if node.process is not None and node.process.poll() is None:
                try:
                    os.killpg(node.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                node.process.wait(timeout=30)
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        shutil.rmtree(self.root, ignore_errors=True)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
