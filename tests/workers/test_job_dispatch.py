"""Async jobs go to the worker processes (Dramatiq `run_job`) when the broker is real; the web
process only enqueues. Scale-out: no job runs in a web worker's thread in production."""

from __future__ import annotations

import uuid

from pms.config import Settings


def test_web_dispatches_jobs_to_the_run_job_actor():
    from pms.services import jobs
    from workers import actors, runtime

    # actors are bound to the suite's StubBroker: the message lands on its "pms-jobs" queue
    actors.broker.flush_all()
    try:
        runtime.start_for_web(Settings(broker_url="amqp://guest:guest@127.0.0.1:1/%2F"))
        env, job = uuid.uuid4(), uuid.uuid4()
        jobs.dispatch(type("Ctx", (), {"env_id": env})(), job)
        queued = [m for m in actors.broker.queues["pms-jobs"].queue]
        assert len(queued) == 1
        from dramatiq import Message

        message = Message.decode(queued[0]) if isinstance(queued[0], bytes) else queued[0]
        assert message.actor_name == "run_job" and list(message.args) == [str(env), str(job)]
    finally:
        actors.broker.flush_all()
        jobs.set_dispatcher(None)
        from pms.db.uow import clear_after_emit_hooks
        from pms.services.housekeeping import set_room_dispatcher

        clear_after_emit_hooks()
        set_room_dispatcher(None)


def test_embedded_runtime_can_be_switched_off():
    from workers import runtime

    started = runtime.start_for_web(Settings(embedded_runtime=False))
    assert started.worker is None and started.relay is None


def test_setting_is_read_from_the_environment():
    from pms.config import load_settings

    assert load_settings({"PMS_EMBEDDED_RUNTIME": "0"}).embedded_runtime is False
    assert load_settings({}).embedded_runtime is True
