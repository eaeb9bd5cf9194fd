"""The reference admin console: static files served at `/admin/`, and, in the
embedded default only, the gateway's part for it.

`console_files_middleware()` (the shared `StaticFilesMiddleware`) sits before authentication
and answers `GET /admin/...` itself from `pms/static/admin/` (HTML, JavaScript modules, CSS and
the icon, no build step). The files hold no data: every call the console makes goes to the gated
`/v1` routes, and it never holds a token.

In production the console sits behind the gateway like every client app (SPEC Authentication
rule 7): the gateway adds the bearer (and the env header) to the console's `/v1` calls.

`ConsoleGatewayMiddleware` plays that part for `pms-cli serve` (what `make run` runs) on the
embedded default, so a newcomer is in without copying a token: a `/v1` request that carries no
bearer, comes from the loopback interface and is marked as the console's (`X-PMS-Console: 1`, a
custom header a cross-site page cannot send without a CORS preflight this service never answers)
gets the demo token that `serve` wrote (`var/demo-token`) and its env. `console_gateway` installs
it only when all of these hold: SQLite and the in-process stub broker (`settings.development`),
a local `file://` key set, and `PMS_CONSOLE_TOKEN_FILE` set (by `serve`). Any other
configuration (PostgreSQL, AMQP, a real JWKS) never injects anything.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import logging
from pathlib import Path
from typing import Any

import falcon

from pms.api.static_files import StaticFilesMiddleware, files_in
from pms.config import Settings

log = logging.getLogger("pms.console")

CONSOLE_PREFIX = "/admin"
CONSOLE_MARK = "HTTP_X_PMS_CONSOLE"  # the console's fetch() sets `X-PMS-Console: 1`
STATIC_DIR = Path(__file__).resolve().parents[1] / "static" / "admin"
SUFFIXES = frozenset({".html", ".js", ".css", ".svg"})
POLICY = ("default-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
          "form-action 'none'")


def console_files() -> dict[str, Path]:
    """The console's files by name (a fixed set read once: no path from a request reaches the
    file system)."""
    return files_in(STATIC_DIR, SUFFIXES)


def console_files_middleware() -> StaticFilesMiddleware:
    """`GET|HEAD /admin/` (index.html) and `/admin/<file>`; no token needed, no data inside."""
    return StaticFilesMiddleware(CONSOLE_PREFIX, STATIC_DIR, suffixes=SUFFIXES, policy=POLICY,
                                 what="console")


def _loopback(addr: str | None) -> bool:
    try:
        return addr is not None and ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False


def _claims(token: str) -> dict[str, Any]:
    """The token's payload, NOT verified (authentication verifies it next); only to name its
    env in the tenant header."""
    try:
        payload = token.split(".")[1]
        return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))
    except (IndexError, ValueError, TypeError):
        return {}


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _served_here(env: dict[str, Any]) -> bool:
    """Whether the request names this server at a loopback address: `Host` is 127.0.0.1,
    localhost or [::1] at the port the server listens on, and `Origin`, when sent, is that
    same address over http. A DNS-rebinding page (its own host name resolving to 127.0.0.1)
    or a tunnel's public name fails here, though its peer address is loopback."""
    host = (env.get("HTTP_HOST") or "").strip().lower()
    port = str(env.get("SERVER_PORT") or "")
    name, _, given = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if not name:
        name, given = host, ""
    if name not in LOOPBACK_NAMES or (given or "80") != port:
        return False
    origin = env.get("HTTP_ORIGIN")
    return origin is None or origin.strip().lower() == f"http://{host}"


class ConsoleGatewayMiddleware:
    """Embedded default only (see `console_gateway`): the demo token for the console's calls."""

    def __init__(self, token_file: Path) -> None:
        self.token_file = token_file
        self._cached: tuple[float, str, str] | None = None  # (mtime, token, env id)

    def _token(self) -> tuple[str, str] | None:
        try:
            mtime = self.token_file.stat().st_mtime
        except OSError:
            return None
        if self._cached is None or self._cached[0] != mtime:
            token = self.token_file.read_text().strip()
            self._cached = (mtime, token, str(_claims(token).get("env_id") or ""))
        return self._cached[1], self._cached[2]

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        env = req.env
        if (env.get("HTTP_AUTHORIZATION") or env.get(CONSOLE_MARK) != "1"
                or not req.path.startswith("/v1/") or not _loopback(req.remote_addr)
                or env.get("HTTP_SEC_FETCH_SITE") == "cross-site" or not _served_here(env)):
            return
        found = self._token()
        if found is None:
            return  # authentication answers 401 missing_token
        token, env_id = found
        env["HTTP_AUTHORIZATION"] = f"Bearer {token}"
        if env_id and not env.get("HTTP_X_PLATFORM_ENV_ID"):
            env["HTTP_X_PLATFORM_ENV_ID"] = env_id


def console_gateway(settings: Settings) -> ConsoleGatewayMiddleware | None:
    """The gateway stand-in, or None: anything but the embedded default with a local key set
    and the token file `pms-cli serve` names."""
    if settings.console_token_file is None:
        return None
    if not (settings.development and settings.jwks_is_local_file):
        log.warning("PMS_CONSOLE_TOKEN_FILE ignored: the console gets no token outside the "
                    "embedded default (the gateway adds the bearer)")
        return None
    return ConsoleGatewayMiddleware(settings.console_token_file)


def console_middleware(settings: Settings) -> list[Any]:
    """For the app's middleware list, before authentication."""
    gateway = console_gateway(settings)
    return [console_files_middleware(), *([gateway] if gateway is not None else [])]
