"""The embedded default end to end (StubBroker worker threads + in-process relay)."""

from __future__ import annotations

import time

from pms.db.uow import read_scope
from pms.models import OutboxEvent, SandboxEmail
from tests.factories import make_booking_hotel, make_profile, make_reservation
from workers.runtime import start_embedded


def test_embedded_runtime_publishes_and_reacts_after_commit(ctx, database, base_settings):
    runtime = start_embedded(base_settings, idle_interval=5.0)
    try:
        hotel = make_booking_hotel(ctx)
        guest = make_profile(ctx, hotel.id)
        make_reservation(ctx, hotel, guest_profile_id=str(guest.id))
        deadline = time.monotonic() + 60  # a condition, not a timing: generous when loaded
        while time.monotonic() < deadline:
            with read_scope(ctx):
                pending = OutboxEvent.select().where(OutboxEvent.published_at.is_null()).count()
                sent = SandboxEmail.select().count()
            if pending == 0 and sent == 1:
                break
            time.sleep(0.1)
        assert (pending, sent) == (0, 1)
    finally:
        runtime.shutdown()
