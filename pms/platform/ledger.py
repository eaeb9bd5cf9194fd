"""Client of the ledger service: folio-settlement accounts per env and double-entry postings.

Same three-part shape as the payments client: the `LedgerClient` protocol, an embedded sandbox,
and the gateway client (`/proxy/ledger/v1/...`). `ensure_settlement_accounts(env_id)` creates the
env's accounts on demand and idempotently (SPEC); `post_entry` refuses an unbalanced entry before
any call and is idempotent by key, so a reconciler can repeat it safely. Debits and credits are
sent at the currency's scale ("80.00", never "80.0000": `pms.domain.money.to_wire`).
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from pms.config import Settings
from pms.domain.money import to_wire
from pms.errors import DependencyUnavailable
from pms.platform.payments import GatewayHttp, machine_token

LEDGER_SCOPES = ("platform:ledger:accounts:write", "platform:ledger:postings:write")

# The folio-settlement chart of one env: account code -> name.
SETTLEMENT_ACCOUNTS = {
    "guest_ledger": "Guest ledger (open folios receivable)",
    "room_revenue": "Room revenue",
    "tax_payable": "Taxes payable",
    "fnb_revenue": "Food and beverage revenue",
    "other_revenue": "Other revenue",
    "payments_clearing": "Card payments clearing",
    "voucher_liability": "Gift vouchers outstanding",
    "ar_write_off": "Company receivables written off",
}


# Accounts made per counterparty on demand: `company_receivable:<company profile id>`
# is a company's receivable (direct bill). Created, like the chart, idempotently per env the
# first time a posting names one.
ON_DEMAND_PREFIXES = {"company_receivable:": "Company receivable"}


def on_demand_accounts(lines: list[LedgerLine]) -> dict[str, str]:
    """The on-demand account codes a posting names: code -> name."""
    out: dict[str, str] = {}
    for line in lines:
        for prefix, name in ON_DEMAND_PREFIXES.items():
            if line.account.startswith(prefix):
                out[line.account] = f"{name} {line.account[len(prefix):]}"
    return out


class LedgerUnavailable(DependencyUnavailable):
    """Raised when the ledger service cannot be reached or fails."""

    code = "ledger_unavailable"


@dataclass(frozen=True)
class LedgerLine:
    account: str
    debit: Decimal = Decimal("0")
    credit: Decimal = Decimal("0")


@dataclass(frozen=True)
class Posting:
    id: str
    idempotency_key: str


def check_balanced(lines: list[LedgerLine]) -> None:
    """Raise ValueError unless debits equal credits (and no line is negative)."""
    if not lines:
        raise ValueError("a ledger entry needs lines")
    if any(line.debit < 0 or line.credit < 0 for line in lines):
        raise ValueError("ledger lines are never negative")
    debit = sum((line.debit for line in lines), Decimal("0"))
    credit = sum((line.credit for line in lines), Decimal("0"))
    if debit != credit:
        raise ValueError(f"unbalanced entry: debit {debit} != credit {credit}")


class LedgerClient(Protocol):
    def ensure_settlement_accounts(self, env_id: uuid.UUID) -> dict[str, str]: ...

    def post_entry(self, env_id: uuid.UUID, *, idempotency_key: str, currency: str,
                   lines: list[LedgerLine], memo: str = "") -> Posting: ...


@dataclass
class EmbeddedLedger:
    """In-process sandbox keeping accounts and postings in memory."""

    accounts: dict[tuple[str, str], str] = field(default_factory=dict)
    postings: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ensure_settlement_accounts(self, env_id: uuid.UUID) -> dict[str, str]:
        with self._lock:
            for code in SETTLEMENT_ACCOUNTS:
                self.accounts.setdefault((str(env_id), code), f"acct_{uuid.uuid4().hex[:20]}")
            return {code: self.accounts[(str(env_id), code)] for code in SETTLEMENT_ACCOUNTS}

    def post_entry(self, env_id: uuid.UUID, *, idempotency_key: str, currency: str,
                   lines: list[LedgerLine], memo: str = "") -> Posting:
        check_balanced(lines)
        accounts = self.ensure_settlement_accounts(env_id)
        with self._lock:
            for code in on_demand_accounts(lines):
                accounts[code] = self.accounts.setdefault(
                    (str(env_id), code), f"acct_{uuid.uuid4().hex[:20]}")
            key = f"{env_id}:{idempotency_key}"
            if key not in self.postings:
                self.postings[key] = {
                    "id": f"lp_{uuid.uuid4().hex[:20]}", "currency": currency, "memo": memo,
                    "lines": [(accounts.get(line.account, line.account), line.debit, line.credit)
                              for line in lines]}
            return Posting(id=self.postings[key]["id"], idempotency_key=idempotency_key)

    def balance(self, env_id: uuid.UUID, account: str) -> Decimal:
        """Debits minus credits of one settlement account (sandbox inspection)."""
        acct = self.accounts.get((str(env_id), account))
        total = Decimal("0")
        for posting in self.postings.values():
            for name, debit, credit in posting["lines"]:
                if name == acct:
                    total += debit - credit
        return total


class HttpLedger:
    """The ledger service through the gateway (`/proxy/ledger/v1/...`)."""

    def __init__(self, http: GatewayHttp) -> None:
        self.http = http
        self._known: dict[str, dict[str, str]] = {}

    def ensure_settlement_accounts(self, env_id: uuid.UUID) -> dict[str, str]:
        env = str(env_id)
        if env in self._known:
            return self._known[env]
        out: dict[str, str] = {}
        for code, name in SETTLEMENT_ACCOUNTS.items():
            body = self.http.call("PUT", f"/accounts/{env}:{code}",
                                  {"env_id": env, "code": code, "name": name,
                                   "kind": "folio_settlement"},
                                  idempotency_key=f"account:{env}:{code}")
            out[code] = str(body.get("id", f"{env}:{code}"))
        self._known[env] = out
        return out

    def _ensure_on_demand(self, env_id: uuid.UUID, wanted: dict[str, str]) -> dict[str, str]:
        """Create (idempotently, by key) the on-demand accounts a posting names."""
        env = str(env_id)
        known = self._known.setdefault(f"{env}:on-demand", {})
        for code, name in wanted.items():
            if code not in known:
                body = self.http.call("PUT", f"/accounts/{env}:{code}",
                                      {"env_id": env, "code": code, "name": name,
                                       "kind": "company_receivable"},
                                      idempotency_key=f"account:{env}:{code}")
                known[code] = str(body.get("id", f"{env}:{code}"))
        return {code: known[code] for code in wanted}

    def post_entry(self, env_id: uuid.UUID, *, idempotency_key: str, currency: str,
                   lines: list[LedgerLine], memo: str = "") -> Posting:
        check_balanced(lines)
        accounts = {**self.ensure_settlement_accounts(env_id),
                    **self._ensure_on_demand(env_id, on_demand_accounts(lines))}
        body = self.http.call("POST", "/postings", {
            "currency": currency, "memo": memo,
            "lines": [{"account": accounts.get(line.account, line.account),
                       "debit": to_wire(line.debit, currency),
                       "credit": to_wire(line.credit, currency)} for line in lines],
        }, idempotency_key=f"{env_id}:{idempotency_key}")
        return Posting(id=str(body.get("id", "")), idempotency_key=idempotency_key)


def build(settings: Settings) -> LedgerClient:
    """The embedded sandbox, or the gateway client for a real `PMS_PLATFORM_URL`."""
    if settings.embedded_platform:
        return EmbeddedLedger()
    return HttpLedger(GatewayHttp(settings.platform_url, "ledger",
                                  machine_token(settings, LEDGER_SCOPES),
                                  unavailable=LedgerUnavailable))
