"""The broker fault tests' TCP proxy (tests.workers.amqp.TcpProxy), generalized to any server
(PostgreSQL here) and taught to cut a connection at a chosen message: `arm(marker, when)` makes
the next client->server chunk holding `marker` the last one, forwarded (`when="after"`: the server
gets it, the client never hears back) or dropped (`when="before"`: the server never gets it).
`down_after=True` also refuses every new connection from then on, until `restore()`."""

from __future__ import annotations

import socket
import threading

from tests.workers.amqp import TcpProxy


class CuttingProxy(TcpProxy):
    # how long the server side of a pair cut "after" stays open: the server reads and runs the
    # forwarded message before it sees the connection go
    SERVER_GRACE_S = 1.0

    def __init__(self, target_host: str, target_port: int) -> None:
        self._armed: tuple[bytes, str, bool] | None = None
        self._skip = 0
        self.fired = threading.Event()
        super().__init__(target_host, target_port)

    def arm(self, marker: bytes, when: str, *, down_after: bool = False, skip: int = 0) -> None:
        """Cut at the next chunk holding `marker` (after letting `skip` of them through)."""
        if when not in ("after", "before"):
            raise ValueError(when)
        self.fired.clear()
        self._skip = skip
        self._armed = (marker, when, down_after)

    def _forward(self, from_client: bool, data: bytes, a: socket.socket,
                 b: socket.socket) -> bool:
        armed = self._armed
        if from_client and armed is not None and armed[0] in data:
            if self._skip:
                self._skip -= 1
            else:
                self._armed = None
                self._fire(a, b, data, armed)
                return False
        return super()._forward(from_client, data, a, b)

    def _fire(self, client: socket.socket, server: socket.socket, data: bytes,
              armed: tuple[bytes, str, bool]) -> None:
        _, when, down_after = armed
        if down_after:
            self.mode = "down"
        if when == "after":
            server.sendall(data)
        _close(client)
        self.fired.set()
        if when == "after":  # let the server read and run it, its answer going nowhere
            server.settimeout(0.1)
            for _ in range(int(self.SERVER_GRACE_S / 0.1)):
                try:
                    if not server.recv(65536):
                        break
                except TimeoutError:
                    continue
                except OSError:
                    break


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
