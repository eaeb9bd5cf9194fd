"""The Procfile's `worker` and `relay` on a fresh exchange where NOTHING is
bound (a deployment that follows the README before any consumer subscribed to `hotel.pms.*`).
Every event comes back unroutable from the broker; none may park, and the internal reactions
(the end-of-day job, confirmation and receipt emails, departure-clean tasks) run all the same.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from pms.db.uow import read_scope
from pms.models import SandboxEmail
from pms.models.platform import Job
from tests.e2e import test_procfile as base
from tests.e2e.procfile import Stack, unique, wait_for
from tests.e2e.test_procfile import ARRIVAL, Burst, departure_tasks, new_ctx, receipts
from tests.factories import make_booking_hotel, make_profile, make_reservation
from tests.helpers import EOD_OVERRIDE

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq]

stack = base.stack  # the module's throwaway database and vhost (fixtures)
bound = base.bound


def bindings(stack: Stack, exchange: str) -> list[str]:
    out = subprocess.run(["rabbitmqctl", "-q", "list_bindings", "-p", stack.vhost,
                          "source_name", "destination_name", "routing_key"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return [line for line in out.splitlines() if line.split("\t")[0] == exchange]


def outbox_states(stack: Stack, env_id: Any) -> dict[str, int]:
    (row,) = stack.query(
        "SELECT set_config('app.cross_env', 'on', true); "
        "SELECT count(*), count(published_at), count(parked_at), "
        "count(*) FILTER (WHERE dispatched_at IS NULL AND dispatch_next_at IS NULL "
        "AND dispatch_attempts > 0) FROM outbox_event WHERE env_id = %s", str(env_id))
    return dict(zip(("rows", "published", "parked", "reactions_parked"), row, strict=True))


def emails(ctx: Any, template: str) -> int:
    with read_scope(ctx):
        return SandboxEmail.select().where(SandboxEmail.template == template).count()


def job_status(ctx: Any, job_id: Any) -> str:
    with read_scope(ctx):
        return Job.get_by_id(job_id).status


@pytest.mark.slow
def test_with_nothing_bound_a_job_finishes_emails_go_out_and_no_row_parks(stack, bound):
    from pms.schemas.end_of_day import EndOfDayIn
    from pms.services import jobs

    exchange = unique("pms-e2e-nobody")
    env = stack.env(exchange)
    procs = [stack.start("worker", env), stack.start("relay", env)]
    try:
        ctx = new_ctx()
        # When: bookings (one with a guest email), check-outs and an end-of-day job (a 202)
        burst = Burst(ctx, writers=2, bookings=2, checkouts=2).start()
        hotel = make_booking_hotel(ctx, rooms=2)
        guest = make_profile(ctx, hotel.id)
        make_reservation(ctx, hotel, guest=None, guest_profile_id=str(guest.id))
        job, _ = jobs.start_end_of_day(ctx, hotel.id, EndOfDayIn(override_reason=EOD_OVERRIDE))
        burst.join()
        expected = sorted(burst.checked_out)

        def reacted() -> bool:
            return (job_status(ctx, job.id) == "SUCCEEDED"
                    and emails(ctx, "booking_confirmation") >= 1
                    and sorted(departure_tasks(ctx)) == expected
                    and receipts(ctx) == len(expected))

        def tails() -> str:
            return "\n\n".join(f"{p.name}:\n{p.tail()}" for p in procs)

        wait_for(reacted, timeout=ARRIVAL,
                 what=f"the job, the emails and the departure tasks ({tails()})")
        # Then: every event was delivered (no subscriber yet), none parked, none backing off
        states = wait_for(lambda: (lambda s: s if s["published"] == s["rows"] else None)(
            outbox_states(stack, ctx.env_id)), timeout=ARRIVAL,
            what=f"every row published ({outbox_states(stack, ctx.env_id)}, {tails()})")
        assert states["parked"] == 0 and states["reactions_parked"] == 0, states
        retried = stack.query("SELECT set_config('app.cross_env', 'on', true); "
                              "SELECT count(*) FROM outbox_event WHERE env_id = %s "
                              "AND attempts > 0", str(ctx.env_id))
        assert retried == [(0,)]  # none was even refused once
        assert bindings(stack, exchange) == []  # nothing was ever bound to this exchange
        assert all(p.alive() for p in procs), tails()
    finally:
        stack.stop_all()
