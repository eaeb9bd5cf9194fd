"""The HTTP payments and ledger clients against a fake gateway: a real HTTP server on 127.0.0.1 in
a thread, with injectable declines, timeouts (the charge happens, the answer is late) and outages
(503 before anything happens). `FakeGateway` is reused by the cashiering fault tests.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pms.config import Settings
from pms.platform import ledger as ledger_mod
from pms.platform import payments as pay
from pms.platform.ledger import LedgerLine


class FakeGateway:
    """Payments + ledger + token endpoint. `faults` is a list of ("timeout"|"outage") consumed
    one per payments call; declines come from DECLINING_METHODS like the sandbox."""

    def __init__(self) -> None:
        self.faults: list[str] = []
        self.by_key: dict[str, dict[str, Any]] = {}
        self.intents: dict[str, dict[str, Any]] = {}
        self.charges: list[dict[str, Any]] = []
        self.postings: dict[str, dict[str, Any]] = {}
        self.accounts: dict[str, str] = {}
        self.tokens_issued = 0
        self.seen_auth: list[str] = []
        self.seen_trace: list[tuple[str, str | None]] = []  # (path, traceparent) per call
        self.delay = 0.0
        self.lock = threading.Lock()
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                self._handle()

            def do_PUT(self) -> None:  # noqa: N802
                self._handle()

            def _handle(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/token":
                    with gateway.lock:
                        gateway.tokens_issued += 1
                    return self._send(200, {"access_token": f"tok{gateway.tokens_issued}",
                                            "expires_in": 600})
                gateway.seen_auth.append(self.headers.get("Authorization", ""))
                gateway.seen_trace.append((self.path, self.headers.get("traceparent")))
                status, body, late = gateway.answer(self.command, self.path, json.loads(raw or b"{}"),
                                                    self.headers.get("Idempotency-Key", ""))
                if late:
                    time.sleep(late)
                try:
                    self._send(status, body)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False  # a "timeout" handler may still be sleeping
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def settings(self) -> Settings:
        return Settings(platform_url=self.url, platform_token_url=self.url + "/token",
                        platform_client_id="pms", platform_client_secret="s3")

    def answer(self, method: str, path: str, body: dict[str, Any], key: str
               ) -> tuple[int, dict[str, Any], float]:
        with self.lock:
            fault = self.faults.pop(0) if self.faults and "/payments/" in path else None
            if fault == "outage":
                return 503, {"title": "unavailable"}, 0.0
            if key and (method, path, key) in self.by_key:
                return 200, self.by_key[(method, path, key)], 0.0  # type: ignore[index]
            result = self._process(path, body)
            if key:
                self.by_key[(method, path, key)] = result  # type: ignore[index]
            return (402 if result.get("status") == "declined" else 200), result, (
                10.0 if fault == "timeout" else self.delay)

    def _process(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path.startswith("/proxy/ledger/v1/accounts/"):
            name = path.rsplit("/", 1)[1]
            self.accounts.setdefault(name, f"acct-{len(self.accounts)}")
            return {"id": self.accounts[name]}
        if path == "/proxy/ledger/v1/postings":
            posting = {"id": f"lp-{len(self.postings)}", **body}
            self.postings[posting["id"]] = posting
            return posting
        if path == "/proxy/payments/v1/payment-intents":
            decline = pay.DECLINING_METHODS.get(body["payment_method_id"])
            intent = {"id": f"pi_{uuid.uuid4().hex[:10]}", "amount": body["amount"],
                      "currency": body["currency"], "payment_method_id": body["payment_method_id"],
                      "status": "declined" if decline else "requires_confirmation",
                      "decline_code": decline}
            self.intents[intent["id"]] = intent
            return dict(intent)
        if path.endswith("/confirm"):
            intent = self.intents[path.split("/")[-2]]
            if intent["status"] == "requires_confirmation":
                intent["status"] = "requires_capture"
            return dict(intent)
        if path == "/proxy/payments/v1/charges":
            method = body.get("payment_method_id")
            if body.get("payment_intent"):
                method = self.intents[body["payment_intent"]]["payment_method_id"]
            decline = pay.DECLINING_METHODS.get(method or "")
            charge = {"id": f"ch_{uuid.uuid4().hex[:10]}", "amount": body["amount"],
                      "currency": body["currency"], "status": "declined" if decline else "succeeded",
                      "decline_code": decline}
            if not decline:
                self.charges.append(charge)
            return charge
        return {"error": "unknown path"}

    def captured_total(self) -> Decimal:
        return sum((Decimal(c["amount"]) for c in self.charges), Decimal("0"))


@pytest.fixture
def gateway() -> Any:
    fake = FakeGateway()
    yield fake
    fake.close()


def http_payments(gateway: FakeGateway, timeout_s: float = 0.5) -> pay.HttpPayments:
    client = pay.build(gateway.settings())
    assert isinstance(client, pay.HttpPayments)
    client.http.timeout_s = timeout_s
    return client


def test_charge_succeeds_with_machine_token_and_idempotency_key(gateway):
    client = http_payments(gateway)
    result = client.charge(amount=Decimal("10.00"), currency="EUR", idempotency_key="k1",
                           payment_method_id="pm_card_visa")
    again = client.charge(amount=Decimal("10.00"), currency="EUR", idempotency_key="k1",
                          payment_method_id="pm_card_visa")
    assert result.status == "succeeded" and again.id == result.id
    assert len(gateway.charges) == 1
    assert gateway.tokens_issued == 1 and all(a == "Bearer tok1" for a in gateway.seen_auth)


def test_decline_is_a_result_not_an_error(gateway):
    result = http_payments(gateway).charge(amount=Decimal("5"), currency="EUR", idempotency_key="d",
                                           payment_method_id="pm_card_declined")
    assert result.status == "declined" and result.decline_code == "card_declined"
    assert gateway.charges == []


def test_timeout_then_retry_with_same_key_charges_once(gateway):
    client = http_payments(gateway, timeout_s=0.3)
    gateway.faults.append("timeout")
    with pytest.raises(pay.PaymentsUnavailable):
        client.charge(amount=Decimal("7.00"), currency="EUR", idempotency_key="t",
                      payment_method_id="pm_card_visa")
    result = client.charge(amount=Decimal("7.00"), currency="EUR", idempotency_key="t",
                           payment_method_id="pm_card_visa")
    assert result.status == "succeeded"
    assert len(gateway.charges) == 1  # the first (timed-out) call charged; the retry replayed it


def test_outage_raises_unavailable_and_charges_nothing(gateway):
    gateway.faults.append("outage")
    with pytest.raises(pay.PaymentsUnavailable):
        http_payments(gateway).charge(amount=Decimal("7.00"), currency="EUR",
                                      idempotency_key="o", payment_method_id="pm_card_visa")
    assert gateway.charges == []


def test_server_down_raises_unavailable():
    settings = Settings(platform_url="http://127.0.0.1:9", platform_token_url="http://127.0.0.1:9/t")
    with pytest.raises(pay.PaymentsUnavailable):
        pay.build(settings).charge(amount=Decimal("1"), currency="EUR", idempotency_key="x",
                                   payment_method_id="pm_card_visa")


def test_pre_authorization_is_intent_with_manual_confirmation_then_capture(gateway):
    client = http_payments(gateway)
    intent = client.create_intent(amount=Decimal("100.00"), currency="EUR",
                                  payment_method_id="pm_card_visa", idempotency_key="i")
    assert intent.status == "requires_confirmation"
    confirmed = client.confirm_intent(intent.id, idempotency_key="c")
    assert confirmed.status == "requires_capture"
    captured = client.charge(amount=Decimal("80.00"), currency="EUR", intent_id=intent.id,
                             idempotency_key="cap")
    assert captured.status == "succeeded" and gateway.captured_total() == Decimal("80.00")


def test_http_ledger_creates_accounts_once_and_posts_balanced_entries(gateway):
    ledger = ledger_mod.build(gateway.settings())
    env = uuid.uuid4()
    first = ledger.ensure_settlement_accounts(env)
    second = ledger.ensure_settlement_accounts(env)
    assert first == second and set(first) == set(ledger_mod.SETTLEMENT_ACCOUNTS)
    ledger.post_entry(env, idempotency_key="p1", currency="EUR", lines=[
        LedgerLine("guest_ledger", debit=Decimal("110")),
        LedgerLine("room_revenue", credit=Decimal("100")),
        LedgerLine("tax_payable", credit=Decimal("10"))])
    assert len(gateway.postings) == 1
    with pytest.raises(ValueError):
        ledger.post_entry(env, idempotency_key="p2", currency="EUR", lines=[
            LedgerLine("guest_ledger", debit=Decimal("110")),
            LedgerLine("room_revenue", credit=Decimal("100"))])


def test_embedded_sandbox_has_the_same_contract():
    client = pay.build(Settings())
    declined = client.charge(amount=Decimal("1"), currency="EUR", idempotency_key="a",
                             payment_method_id="pm_card_insufficient_funds")
    assert declined.status == "declined" and declined.decline_code == "insufficient_funds"
    ok = client.charge(amount=Decimal("1"), currency="EUR", idempotency_key="b",
                       payment_method_id="pm_card_visa")
    assert client.charge(amount=Decimal("1"), currency="EUR", idempotency_key="b",
                         payment_method_id="pm_card_visa").id == ok.id
    ledger = ledger_mod.build(Settings())
    env = uuid.uuid4()
    assert ledger.ensure_settlement_accounts(env) == ledger.ensure_settlement_accounts(env)
    for _ in range(2):
        ledger.post_entry(env, idempotency_key="x", currency="EUR", lines=[
            LedgerLine("guest_ledger", debit=Decimal("5")), LedgerLine("room_revenue", credit=Decimal("5"))])
    assert ledger.balance(env, "guest_ledger") == Decimal("5")


# -- cashiering against the fake gateway: no money lost, none taken twice --------------------------

class Crash(BaseException):
    """The process 'dies' (not an Exception, so nothing on the way catches it)."""


class CrashingPayments:
    """Wraps a client: dies before calling it, or after it answered (before the outcome is saved)."""

    def __init__(self, inner: Any, *, after_call: bool) -> None:
        self.inner, self.after_call = inner, after_call

    def charge(self, **kw: Any) -> Any:
        if not self.after_call:
            raise Crash("died before the call")
        self.inner.charge(**kw)
        raise Crash("died after the call")


@pytest.fixture
def folio(ctx, database):
    from pms.schemas.cashiering import ChargeIn
    from pms.services.cashiering import cashiering
    from tests.factories import make_fb_stay

    hotel, _res, row = make_fb_stay(ctx)
    cashiering.post_charge(ctx, hotel.id, row.id, ChargeIn(transaction_code="FB",
                                                           amount=Decimal("50.00")))
    return hotel.id, row.id


def _pay(ctx, folio, client, method="pm_card_visa", amount="50.00"):
    from pms.schemas.cashiering import PaymentIn
    from pms.services.cashiering import payments

    return payments.post_payment(ctx, folio[0], folio[1], PaymentIn(
        amount=Decimal(amount), method="CARD", payment_method_id=method), payments=client)


def _state(ctx, folio):
    from pms.db.uow import read_scope
    from pms.models import FolioPayment
    from pms.services.cashiering.cashiering import get_folio

    out = get_folio(ctx, *folio)
    with read_scope(ctx):
        statuses = sorted(p.status for p in FolioPayment.select())
    return Decimal(out.payments_total), statuses


def _reconcile(ctx, client):
    from datetime import timedelta

    from pms.services.cashiering.payments import reconcile_payments

    return reconcile_payments(ctx, payments=client, older_than=timedelta(0))


def test_timeout_leaves_pending_and_reconcile_captures_once(ctx, folio, gateway):
    client = http_payments(gateway, timeout_s=0.3)
    gateway.faults.append("timeout")
    out, payment = _pay(ctx, folio, client)
    assert payment.status == "PENDING" and out.posted_balance == Decimal("50.00")
    assert len(gateway.charges) == 1  # the service did charge; we did not hear back
    assert _reconcile(ctx, client)["captured"] == 1
    assert _state(ctx, folio) == (Decimal("50.00"), ["CAPTURED"])
    assert len(gateway.charges) == 1 and gateway.captured_total() == Decimal("50.00")
    assert _reconcile(ctx, client) == {"captured": 0, "authorized": 0, "failed": 0, "pending": 0}


def test_outage_charges_nothing_until_reconciled(ctx, folio, gateway):
    client = http_payments(gateway)
    gateway.faults.extend(["outage", "outage"])
    _, payment = _pay(ctx, folio, client)
    assert payment.status == "PENDING" and gateway.charges == []
    assert _reconcile(ctx, client)["pending"] == 1  # still down
    assert _reconcile(ctx, client)["captured"] == 1
    assert _state(ctx, folio) == (Decimal("50.00"), ["CAPTURED"])
    assert gateway.captured_total() == Decimal("50.00")


def test_decline_records_failed_and_moves_no_money(ctx, folio, gateway):
    from pms.errors import PaymentDeclined

    with pytest.raises(PaymentDeclined):
        _pay(ctx, folio, http_payments(gateway), method="pm_card_insufficient_funds")
    assert _state(ctx, folio) == (Decimal("0.00"), ["FAILED"])
    assert gateway.charges == []
    assert _reconcile(ctx, http_payments(gateway))["failed"] == 0  # FAILED rows are final


@pytest.mark.parametrize("after_call", [False, True], ids=["before-call", "after-call"])
def test_crash_around_the_call_is_reconciled_without_double_charge(ctx, folio, gateway,
                                                                   after_call):
    client = http_payments(gateway)
    with pytest.raises(Crash):
        _pay(ctx, folio, CrashingPayments(client, after_call=after_call))
    assert _state(ctx, folio) == (Decimal("0.00"), ["PENDING"])
    assert len(gateway.charges) == (1 if after_call else 0)
    assert _reconcile(ctx, client)["captured"] == 1
    assert _state(ctx, folio) == (Decimal("50.00"), ["CAPTURED"])
    assert len(gateway.charges) == 1


def test_ledger_outage_leaves_postings_pending_until_reconciled(ctx, folio, gateway):
    from pms.db.uow import read_scope
    from pms.models.cashiering import LedgerPosting
    from pms.services.cashiering.ledger_postings import reconcile_postings

    ledger = ledger_mod.build(gateway.settings())
    gateway.close()  # the ledger is down
    assert reconcile_postings(ctx, ledger) == 0
    with read_scope(ctx):
        assert {p.status for p in LedgerPosting.select()} == {"PENDING"}
    up = FakeGateway()
    try:
        ledger = ledger_mod.build(up.settings())
        assert reconcile_postings(ctx, ledger) >= 1
        assert reconcile_postings(ctx, ledger) == 0
        with read_scope(ctx):
            assert {p.status for p in LedgerPosting.select()} == {"POSTED"}
        assert len(up.postings) == 1
    finally:
        up.close()


def test_pre_authorization_left_pending_by_an_outage_is_authorized_by_the_reconciler(
        ctx, folio, gateway):
    from pms.schemas.cashiering import PreAuthorizationIn
    from pms.services.cashiering import payments

    client = http_payments(gateway)
    gateway.faults.append("outage")
    _, pre = payments.pre_authorize(ctx, folio[0], folio[1], PreAuthorizationIn(
        amount=Decimal("80.00"), payment_method_id="pm_card_visa"), payments=client)
    assert pre.status == "PENDING" and gateway.intents == {}
    assert _reconcile(ctx, client)["authorized"] == 1
    assert len(gateway.intents) == 1
    (intent,) = gateway.intents.values()
    assert intent["status"] == "requires_capture"
    assert _state(ctx, folio) == (Decimal("0.00"), ["AUTHORIZED"])  # a hold is not money
