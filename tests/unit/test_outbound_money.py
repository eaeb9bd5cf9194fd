"""Amounts sent to the payments and ledger services are at the currency's scale ("80.00", never
the database's "80.0000"): the HTTP clients are driven with a recording gateway (no network)."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms.platform.ledger import HttpLedger, LedgerLine
from pms.platform.payments import EmbeddedPayments, HttpPayments


class RecordingGateway:
    """Stands in for GatewayHttp: records each call and answers like the service would."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def call(self, method: str, path: str, body: dict[str, Any], *,
             idempotency_key: str | None = None) -> dict[str, Any]:
        self.calls.append((method, path, body))
        return {"id": f"x_{len(self.calls)}", "status": "succeeded", "currency": "EUR",
                **{k: v for k, v in body.items() if k == "amount"}}


def test_outbound_payment_and_ledger_amounts_are_quantized_to_the_currency():
    gateway = RecordingGateway()
    payments = HttpPayments(gateway)  # type: ignore[arg-type]
    # NUMERIC(14, 4) reads back as "80.0000": the services must see "80.00" / "8000".
    payments.charge(amount=Decimal("80.0000"), currency="EUR", idempotency_key="c1",
                    payment_method_id="pm_card_visa")
    payments.create_intent(amount=Decimal("8000.0000"), currency="JPY",
                           payment_method_id="pm_card_visa", idempotency_key="i1")
    ledger = HttpLedger(gateway)  # type: ignore[arg-type]
    ledger.post_entry(uuid.uuid4(), idempotency_key="p1", currency="EUR", lines=[
        LedgerLine("guest_ledger", debit=Decimal("80.0000")),
        LedgerLine("room_revenue", credit=Decimal("80.0000"))])
    amounts = [body["amount"] for _, path, body in gateway.calls if "amount" in body]
    assert amounts == ["80.00", "8000"]
    posting = next(body for _, path, body in gateway.calls if path == "/postings")
    assert [(line["debit"], line["credit"]) for line in posting["lines"]] == [
        ("80.00", "0.00"), ("0.00", "80.00")]


def test_embedded_payments_record_amounts_at_the_currency_scale():
    sandbox = EmbeddedPayments()
    result = sandbox.charge(amount=Decimal("80.0000"), currency="EUR", idempotency_key="c1",
                            payment_method_id="pm_card_visa")
    assert sandbox.charges[result.id]["amount"] == "80.00"
