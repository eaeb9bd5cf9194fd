"""The `traceparent` of a request reaches every outbound call it causes: the
payments service's intents, confirmations and charges made in the request, the ledger postings
made after its commit, and an actor message sent while it (or an outbox reaction) runs carries
it to the calls the actor makes. A fake gateway (a real HTTP server, tests/services) records
the header of every call."""

from __future__ import annotations

import falcon.testing
import pytest
from dramatiq import Worker
from dramatiq.brokers.stub import StubBroker

from pms.app import create_app
from pms.platform import Platform, build_platform, trace
from pms.platform import ledger as ledger_mod
from tests.conftest import Api
from tests.factories import make_fb_stay
from tests.services.test_payments_http import FakeGateway, http_payments
from workers.tracing import TraceMessages

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def gateway():
    fake = FakeGateway()
    yield fake
    fake.close()


def test_payment_calls_and_ledger_postings_carry_the_requests_traceparent(
        settings, database, clock, ctx, gateway):
    platform = build_platform(settings)
    clients = {**platform.clients, "payments": http_payments(gateway, timeout_s=5),
               "ledger": ledger_mod.build(gateway.settings())}
    app = create_app(settings, db=database, clock=clock,
                     platform=Platform(settings=settings, clients=clients))
    api = Api(falcon.testing.TestClient(app), settings, ctx.env_id)
    hotel, _res, folio = make_fb_stay(ctx)
    base = f"/v1/properties/{hotel.id}/folios/{folio.id}"
    preauth = api.post(base + "/pre-authorizations",
                       {"amount": "50", "payment_method_id": "pm_card_visa"},
                       headers={"traceparent": TP})
    assert preauth.status_code in (201, 202), preauth.text
    paid = api.post(base + "/payments",
                    {"amount": "20", "method": "CARD", "payment_method_id": "pm_card_visa"},
                    headers={"traceparent": TP})
    assert paid.status_code in (201, 202), paid.text
    cash = api.post(base + "/payments", {"amount": "5", "method": "CASH"},
                    headers={"traceparent": TP})
    assert cash.status_code == 201, cash.text
    calls = [(path, tp) for path, tp in gateway.seen_trace if path != "/token"]
    paths = " ".join(path for path, _ in calls)
    assert "/payment-intents" in paths and "/charges" in paths, calls
    assert "/ledger/" in paths, calls  # the postings sent after the commit
    assert all(tp == TP for _, tp in calls), calls
    # a request without one sends none
    gateway.seen_trace.clear()
    api.post(base + "/payments", {"amount": "1", "method": "CARD",
                                  "payment_method_id": "pm_card_visa"})
    assert gateway.seen_trace and all(tp is None for p, tp in gateway.seen_trace
                                      if p != "/token")


def test_an_actor_message_carries_the_senders_traceparent_to_its_run():
    broker = StubBroker()
    broker.add_middleware(TraceMessages())
    seen: list[str | None] = []

    import dramatiq

    @dramatiq.actor(broker=broker, queue_name="trace-test")
    def record() -> None:
        seen.append(trace.current())

    with trace.use(TP):  # a request or an outbox reaction sends it
        message = record.send()
    assert message.options["traceparent"] == TP
    record.send()  # sent outside any trace
    worker = Worker(broker, worker_threads=1)
    worker.start()
    try:
        broker.join("trace-test", timeout=60_000)
        worker.join()
    finally:
        worker.stop()
    assert sorted(seen, key=str) == sorted([TP, None], key=str)
    assert trace.current() is None


def test_outbox_reactions_run_with_the_traceparent_of_the_request_that_wrote_the_event(api):
    from workers.publisher import LocalEventPublisher
    from workers.relay import OutboxRelay

    made = api.post("/v1/properties", {"propertyCode": "TRACE1", "timezone": "UTC",
                                       "currencyCode": "EUR"}, headers={"traceparent": TP})
    assert made.status_code == 201, made.text
    seen: list[tuple[str | None, str | None]] = []

    def react(event):  # what a subscriber calls (an actor's send, a platform call) sees it
        seen.append((event.get("traceparent"), trace.current()))

    OutboxRelay(LocalEventPublisher(), subscribers={"hotel:pms:property:created": [react]},
                env_id=api.env_id).run_once()
    assert seen == [(TP, TP)]
    assert trace.current() is None
