"""What the web process wires with a real broker: nothing. Jobs reach the worker's `run_job`
through the outbox (the relay's subscriber of `hotel:pms:job:queued`), never from the web process
after commit, and the relay polls, so no nudge is registered either."""

from __future__ import annotations

from pms.config import Settings


def test_web_with_a_real_broker_registers_no_after_commit_work():
    from pms import wiring
    from workers import runtime

    before = wiring.current().after_emit
    started = runtime.start_for_web(Settings(broker_url="amqp://guest:guest@127.0.0.1:1/%2F"))
    assert started.worker is None and started.relay is None and started.threads == []
    assert wiring.current().after_emit == before


def test_job_queued_events_send_run_job():
    from workers.subscriptions import default_subscribers

    assert [fn.__name__ for fn in default_subscribers()["hotel:pms:job:queued"]] == [
        "_on_job_queued"]


def test_embedded_runtime_can_be_switched_off():
    from workers import runtime

    started = runtime.start_for_web(Settings(embedded_runtime=False))
    assert started.worker is None and started.relay is None


def test_setting_is_read_from_the_environment():
    from pms.config import load_settings

    assert load_settings({"PMS_EMBEDDED_RUNTIME": "0"}).embedded_runtime is False
    assert load_settings({}).embedded_runtime is True
