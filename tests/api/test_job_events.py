"""A job that finishes says so on the bus: `hotel:pms:job:succeeded` or `hotel:pms:job:failed`
with the job as `GET /v1/jobs/{id}` answers it and its result, the stream's second version
(`job:queued` is the first), so an ARI push, a rooming list or a bulk change needs no polling
(both backends)."""

from __future__ import annotations

import uuid

import pytest

from pms.services import jobs
from tests.api.test_room_blocks import _block, _rows
from tests.api.test_room_blocks import hotel as block_hotel  # noqa: F401
from tests.factories import make_booking_hotel
from tests.helpers import audit_actions, outbox_rows

pytestmark = pytest.mark.usefixtures("database")


def _job_events(ctx, job_id):
    return [(e.type, e.aggregate_version, e.data) for e in outbox_rows(ctx)
            if e.subject == job_id and e.type.startswith("hotel:pms:job:")]


def test_an_ari_push_records_job_succeeded_with_its_result(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    resp = api.post(f"/v1/properties/{hotel.id}/ari/push", {"months": ["2030-02"]})
    assert resp.status_code == 202, resp.text
    job_id = resp.json["id"]
    assert [t for t, _, _ in _job_events(ctx, job_id)] == ["hotel:pms:job:queued"]
    jobs.run_job(ctx, uuid.UUID(job_id))
    got = api.get(f"/v1/jobs/{job_id}").json
    (queued, done) = _job_events(ctx, job_id)
    assert (done[0], done[1]) == ("hotel:pms:job:succeeded", 2)
    assert done[2]["status"] == "SUCCEEDED" == got["status"]
    assert done[2]["finished_at"] is not None and done[2]["kind"] == "ari_push"
    assert done[2]["result"] == api.get(f"/v1/jobs/{job_id}/result").json["result"]
    assert done[2]["result"]["nights"] == 28
    assert "job.succeeded" in audit_actions(ctx)
    jobs.run_job(ctx, uuid.UUID(job_id))  # run twice: a finished job says nothing more
    assert len(_job_events(ctx, job_id)) == 2


def test_a_rooming_list_records_job_succeeded_with_every_rows_outcome(api, ctx, block_hotel):  # noqa: F811
    h = block_hotel
    block = _block(api, h, rooms=3)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    resp = api.post(f"{h.base}/blocks/{block['id']}/rooming-list",
                    {"rows": _rows(h, 2), "mode": "per_row"})
    assert resp.status_code == 202, resp.text
    jobs.run_job(ctx, uuid.UUID(resp.json["id"]))
    (_, done) = _job_events(ctx, resp.json["id"])
    assert done[0] == "hotel:pms:job:succeeded"
    assert [r["outcome"] for r in done[2]["result"]["rows"]] == ["created", "created"]


def test_a_job_given_up_on_records_job_failed(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    resp = api.post(f"/v1/properties/{hotel.id}/ari/push", {"months": ["2030-02"]})
    job_id = resp.json["id"]
    # the worker's last retry gave up on the message (workers.actors)
    assert jobs.fail_job(ctx, uuid.UUID(job_id), "worker gave up") is True
    (_, done) = _job_events(ctx, job_id)
    assert (done[0], done[1]) == ("hotel:pms:job:failed", 2)
    assert done[2]["status"] == "FAILED" and done[2]["error"] == "worker gave up"
    assert api.get(f"/v1/jobs/{job_id}").json["status"] == "FAILED"
    assert jobs.fail_job(ctx, uuid.UUID(job_id), "again") is False
    assert len(_job_events(ctx, job_id)) == 2


def test_a_rooming_lists_reservations_are_audited_as_its_requester_not_the_worker(
        api, ctx, block_hotel):  # noqa: F811
    from pms.db.uow import read_scope
    from pms.models.platform import AuditEntry
    from workers.middleware import message_ctx

    h = block_hotel
    block = _block(api, h, rooms=3)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    resp = api.post(f"{h.base}/blocks/{block['id']}/rooming-list",
                    {"rows": _rows(h, 2), "mode": "per_row"})
    job_id = resp.json["id"]
    with read_scope(ctx):
        (queued,) = AuditEntry.select().where((AuditEntry.action == "job.queued")
                                               & (AuditEntry.target_id == job_id))
    worker = message_ctx(ctx.env_id, "run_job")
    jobs.run_job(worker, uuid.UUID(job_id))
    with read_scope(ctx):
        created = list(AuditEntry.select().where(AuditEntry.action == "reservation.created"))
    assert len(created) == 2
    assert {(a.actor_sub, a.actor_kind) for a in created} == {
        (queued.actor_sub, queued.actor_kind)}
    assert queued.actor_sub != worker.sub
    assert api.get(f"/v1/jobs/{job_id}").json["input"]["requested_by"]["sub"] == queued.actor_sub
