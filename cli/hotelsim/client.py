"""The simulated hotel's API client: real tokens of every kind, and the rule that holds for
every answer (no 5xx, ever; every refusal a problem+json whose status the operation documents
and whose `code` is a stable snake_case name)."""

from __future__ import annotations

import re
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import requests

from pms.config import Settings
from pms.devkeys import all_scopes, mint_token

KIOSK_SCOPES = ["hotel:pms:kiosk:read", "hotel:pms:kiosk:write"]
CODE = re.compile(r"^[a-z][a-z0-9_]*$")


def _json(content: bytes) -> Any:
    import json

    if not content:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return content.decode("utf-8", "replace")


class Violation(AssertionError):
    """An invariant or answer rule broken: the run fails with it."""


@dataclass
class Answer:
    method: str
    path: str
    status: int
    body: Any
    headers: Any  # case-insensitive (requests)
    noop: bool = False  # a 2xx the API documents as changing nothing (no outbox, no audit)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def code(self) -> str | None:
        return self.body.get("code") if isinstance(self.body, dict) else None


@dataclass
class Operations:
    """The documented error statuses of every operation of the served OpenAPI document."""

    table: list[tuple[str, re.Pattern[str], frozenset[int]]] = field(default_factory=list)

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> Operations:
        out = cls()
        for path, ops in doc["paths"].items():
            pattern = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$")
            for method, op in ops.items():
                statuses = frozenset(int(s) for s in op.get("responses", {}) if s.isdigit())
                out.table.append((method.upper(), pattern, statuses))
        # literal paths first, so /blocks/{id}/cancel never matches a templated sibling first
        out.table.sort(key=lambda row: row[1].pattern.count("[^/]+"))
        return out

    def statuses(self, method: str, path: str) -> frozenset[int] | None:
        bare = path.split("?", 1)[0]
        for m, pattern, statuses in self.table:
            if m == method and pattern.match(bare):
                return statuses
        return None


class HttpTransport:
    """Requests to a running server over one keep-alive session."""

    def __init__(self, base_url: str) -> None:

        self.base_url = base_url
        self.http = requests.Session()

    def request(self, method: str, path: str, *, json: Any, headers: dict[str, str],
                params: dict[str, Any] | None) -> tuple[int, Any, bytes]:
        resp = self.http.request(method, self.base_url + path, json=json, headers=headers,
                                 params=params, timeout=120)
        return resp.status_code, resp.headers, resp.content


class WsgiTransport:
    """Requests to the app in this process (falcon's WSGI test client: the whole middleware
    stack, no socket)."""

    def __init__(self, app: Any) -> None:
        import falcon.testing

        self.client = falcon.testing.TestClient(app)

    def request(self, method: str, path: str, *, json: Any, headers: dict[str, str],
                params: dict[str, Any] | None) -> tuple[int, Any, bytes]:
        result = self.client.simulate_request(method, path, json=json, headers=headers,
                                              params=params)
        return result.status_code, result.headers, result.content


class Client:
    """One env's caller of every kind over one transport."""

    def __init__(self, transport: Any, settings: Settings, env_id: uuid.UUID, *,
                 clock: Any = None) -> None:
        if isinstance(transport, str):
            transport = HttpTransport(transport)
        self.transport, self.settings, self.env_id = transport, settings, env_id
        self.clock = clock  # the app's clock when it is not the wall's (the demo's past month)
        self.tokens: dict[str, str] = {}
        self.answers: Counter[str] = Counter()
        self.refusals: Counter[str] = Counter()
        self.last: Answer | None = None
        status, _, content = transport.request("GET", "/v1/openapi.json", json=None,
                                               headers={}, params=None)
        self.operations = Operations.from_document(_json(content))

    # -- tokens ------------------------------------------------------------------------------
    def token(self, kind: str, holder: Any = None) -> str:
        key = f"{kind}:{holder}"
        if key not in self.tokens:
            scopes = all_scopes()
            claims: dict[str, Any] = {}
            if kind == "staff":
                args = {"client_kind": "user", "sub": "desk-agent"}
            elif kind == "channel":
                args = {"client_kind": "machine", "sub": "channel-manager"}
            elif kind == "guest":
                args = {"client_kind": "guest", "sub": f"guest-{holder}", "holder_id": str(holder)}
            elif kind == "traveler":
                args = {"client_kind": "user", "sub": f"traveler-{holder}",
                        "holder_id": str(holder)}
            elif kind == "kiosk":
                args = {"client_kind": "kiosk", "sub": "kiosk-lobby-1"}
                scopes = KIOSK_SCOPES
            elif kind == "anonymous":
                args = {"client_kind": "anonymous", "sub": "funnel-session"}
                scopes = ["hotel:pms:availability:read"]
            else:
                raise ValueError(kind)
            if self.clock is not None:  # issued at the app's time, as its verifier reads it
                at = int(self.clock.now().timestamp())
                claims.update(iat=at, exp=at + 12 * 3600)
            self.tokens[key] = mint_token(self.settings, env_id=self.env_id, scopes=scopes,
                                          ttl_s=6 * 3600, extra=claims, **args)
        return self.tokens[key]

    # -- requests ----------------------------------------------------------------------------
    def call(self, method: str, path: str, body: Any = None, *, as_: str = "staff",
             holder: Any = None, headers: dict[str, str] | None = None,
             params: dict[str, Any] | None = None) -> Answer:
        hdrs = {"Authorization": f"Bearer {self.token(as_, holder)}",
                "X-Platform-Env-Id": str(self.env_id), **(headers or {})}
        for attempt in range(6):
            status, headers_out, content = self.transport.request(
                method, path, json=body, headers=hdrs, params=params)
            # a 503 with Retry-After is the documented "busy" answer (a lock wait under load):
            # the client retries as every client must; anything else 5xx is a defect
            if status == 503 and "Retry-After" in headers_out and attempt < 5:
                import time

                time.sleep(min(float(headers_out.get("Retry-After") or 1), 2.0))
                continue
            break
        answer = Answer(method, path, status, _json(content), headers_out)
        self.last = answer
        self.answers[f"{answer.status // 100}xx"] += 1
        self.check_answer(answer)
        return answer

    def check_answer(self, a: Answer) -> None:
        if a.status >= 500:
            raise Violation(f"{a.method} {a.path} answered {a.status}: {a.body}")
        if a.ok:
            return
        kind = a.headers.get("Content-Type", "")
        if not kind.startswith("application/problem+json"):
            raise Violation(f"{a.method} {a.path} refused {a.status} as {kind!r}, not problem+json: {a.body!r} {a.headers}")
        if not isinstance(a.body, dict) or not CODE.match(str(a.body.get("code", ""))):
            raise Violation(f"{a.method} {a.path} refused {a.status} without a code: {a.body}")
        documented = self.operations.statuses(a.method, a.path)
        if documented is not None and a.status not in documented:
            raise Violation(f"{a.method} {a.path} answered {a.status} ({a.code}), which the "
                            f"operation does not document ({sorted(documented)})")
        self.refusals[f"{a.status} {a.code}"] += 1

    def get(self, path: str, **kw: Any) -> Answer:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Answer:
        return self.call("POST", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any) -> Answer:
        return self.call("PUT", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> Answer:
        return self.call("DELETE", path, **kw)

    def must(self, answer: Answer) -> Any:
        """The body of an answer the simulation needs to have succeeded (setup steps)."""
        if not answer.ok:
            raise Violation(f"{answer.method} {answer.path}: {answer.status} {answer.body}")
        return answer.body
