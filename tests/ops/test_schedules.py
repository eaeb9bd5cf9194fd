"""The service's recurring work runs without a cron line (pms.scheduling), on SQLite and
PostgreSQL: the Procfile's `relay` process, started from its command line as written, runs the
digital keys' sweeper by itself: a key whose window ended is written EXPIRED with its
`digital_key:expired` event, and a revocation the lock service missed (an outage that outlasted
every retry, `lock_failed`) is sent to the lock again. A tick is claimed by one host only, and
every schedule is registered with the platform's schedule service."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pms.db.scope import unscoped
from pms.db.uow import read_scope, unit_of_work
from pms.devkeys import mint_token
from pms.models import DigitalKey
from pms.models.schedules import ScheduleTick
from pms.platform.locks import EmbeddedLocks, LocksUnavailable
from pms.platform.schedules import EmbeddedSchedules
from pms.scheduling import BY_NAME, SCHEDULES, claim, register_all
from pms.services.keys import lock_sync
from tests.e2e.procfile import Proc, procfile, wait_for
from tests.factories import make_booking_hotel, make_checked_in, pay_folio
from tests.helpers import outbox_types
from workers.publisher import LocalEventPublisher
from workers.relay import OutboxRelay
from workers.subscriptions import default_subscribers

BIN = Path(__import__("sys").executable).parent


def _relay_env(settings, backend, request) -> dict[str, str]:
    if backend == "postgres":
        database = request.getfixturevalue("pg_database")
        url, owner = database.app_url, database.owner_url
    else:
        url = owner = request.getfixturevalue("sqlite_url")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PMS_")}
    env.update({"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "PMS_DATABASE_URL": url,
                "PMS_MIGRATION_DATABASE_URL": owner,
                "PMS_BROKER_URL": "stub://", "PMS_PLATFORM_URL": "embedded",
                "PMS_JWKS_URL": settings.jwks_url, "PMS_HOME": str(settings.home),
                "PMS_SCHEDULE_CHECK_SECONDS": "0.5", "PMS_LOG_LEVEL": "WARNING",
                "PYTHONUNBUFFERED": "1"})
    return env


def _key(kapi, base, reservation_id, key_id) -> dict:
    page = kapi.get(base, params={"reservation_id": str(reservation_id)}).json["data"]
    return next(k for k in page if k["id"] == key_id)


def test_the_relay_process_sweeps_expired_keys_and_resends_a_revocation_after_an_outage(
        kapi, ctx, clock, database, backend, settings, request, tmp_path):
    # the stays lived three days ago: their keys' windows (departure at check-out time) ended
    clock.at = datetime.now(UTC).replace(microsecond=0) - timedelta(days=3)
    past = ctx.with_(now=clock.at)
    issued = int(clock.at.timestamp())  # the app judges a token's times on its own clock
    kapi.token = mint_token(settings, env_id=ctx.env_id,
                            extra={"iat": issued, "exp": issued + 3600})
    hotel = make_booking_hotel(past, rooms=2)
    staying = make_checked_in(past, hotel)
    leaving = make_checked_in(past, hotel)
    base = f"/v1/properties/{hotel.id}/digital-keys"
    expiring = kapi.post(base, json={"reservation_id": str(staying.id), "key_type": "MOBILE"})
    moved_out = kapi.post(base, json={"reservation_id": str(leaving.id), "key_type": "MOBILE"})
    assert expiring.status_code == 201 and moved_out.status_code == 201, moved_out.text
    expiring_id, revoked_id = expiring.json["id"], moved_out.json["id"]
    lock_sync.sync_lock(past, uuid.UUID(revoked_id), EmbeddedLocks())  # the key reached the lock
    folio = kapi.get(f"/v1/properties/{hotel.id}/reservations/{leaving.id}/folio")
    if folio.status_code == 200 and folio.json.get("balance_due") not in (None, "0.00"):
        pay_folio(past, leaving, folio.json["balance_due"])
    out = kapi.post(f"/v1/properties/{hotel.id}/reservations/{leaving.id}/check-out")
    if out.status_code == 409:
        pay_folio(past, leaving, out.json["balance"])
        out = kapi.post(f"/v1/properties/{hotel.id}/reservations/{leaving.id}/check-out")
    assert out.status_code == 200, out.text
    # the lock service is down for longer than every retry: the revocation ends `failed`
    down = EmbeddedLocks(outage=True)
    for _ in range(lock_sync.MAX_LOCK_ATTEMPTS):
        with pytest.raises(LocksUnavailable):
            lock_sync.sync_lock(past, uuid.UUID(revoked_id), down)
    assert _key(kapi, base, leaving.id, revoked_id)["lock"]["state"] == "failed"
    assert "hotel:pms:digital_key:lock_failed" in outbox_types(ctx)
    assert "hotel:pms:digital_key:expired" not in outbox_types(ctx)
    with unit_of_work(ctx):  # the outage was a while ago (updated_at is the wall clock's)
        DigitalKey.update(updated_at=datetime.now(UTC) - lock_sync.RETRY_AFTER - timedelta(
            seconds=5)).where(DigitalKey.id == uuid.UUID(revoked_id)).execute()
    # what is committed so far has been relayed and its reactions sent (to this process's
    # broker, which runs none): from here on only a sweep can reach the lock
    relay = OutboxRelay(LocalEventPublisher(), subscribers=default_subscribers(),
                        env_id=ctx.env_id)
    relay.sweep()
    relay.release()
    with unscoped():
        ScheduleTick.delete().execute()  # other tests of the session ticked already

    proc = Proc("relay", procfile()["relay"], _relay_env(settings, backend, request), tmp_path)
    try:
        def swept() -> bool:
            with read_scope(ctx):
                rows = {str(r.id): r for r in DigitalKey.select()
                        .where(DigitalKey.reservation.in_([staying.id, leaving.id]))}
            with unscoped():  # the tick that swept has recorded what it did
                tick = ScheduleTick.get_or_none(ScheduleTick.name == "digital_keys.sweep")
            assert proc.alive(), proc.tail()
            return (rows[expiring_id].status == "EXPIRED"
                    and rows[revoked_id].lock_state in ("sent", "confirmed")
                    and tick is not None and tick.last_result is not None
                    and tick.last_result.get("expired", 0) >= 1)

        wait_for(swept, timeout=90, what="the relay process's scheduler to sweep the keys")
    finally:
        proc.kill()
    assert "hotel:pms:digital_key:expired" in outbox_types(ctx)
    key = _key(kapi, base, leaving.id, revoked_id)
    assert key["status"] == "REVOKED" and key["lock"]["command"] == "revoke"
    assert _key(kapi, base, staying.id, expiring_id)["status"] == "EXPIRED"
    with unscoped():
        tick = ScheduleTick.get_by_id("digital_keys.sweep")
    assert tick.runs >= 1 and tick.owner and tick.last_result["expired"] >= 1


def test_a_tick_is_claimed_by_one_host_only(database):
    schedule = BY_NAME["kiosk_sessions.purge"]
    with unscoped():
        ScheduleTick.delete().where(ScheduleTick.name == schedule.name).execute()
    now = datetime.now(UTC).replace(microsecond=0)
    assert claim(schedule, now, "host-a") is True
    assert claim(schedule, now, "host-b") is False  # the same tick
    assert claim(schedule, now + schedule.every - timedelta(seconds=1), "host-b") is False
    assert claim(schedule, now + schedule.every, "host-b") is True  # the next one
    with unscoped():
        assert ScheduleTick.get_by_id(schedule.name).owner == "host-b"


def test_every_schedule_is_registered_with_the_schedule_service():
    service = EmbeddedSchedules()
    assert register_all(service) == len(SCHEDULES)
    assert set(service.registered) == {s.name for s in SCHEDULES} >= {
        "digital_keys.sweep", "kiosk_sessions.purge", "idempotency.purge", "outbox.purge",
        "cashiering.reconcile"}
    sweep = service.registered["digital_keys.sweep"]
    assert sweep["every_seconds"] == 120
    assert sweep["command"] == "pms-cli schedules run digital_keys.sweep"
    assert register_all(EmbeddedSchedules(outage=True)) == 0  # logged; the hosts run them



def test_the_schedule_services_trigger_runs_a_due_tick_once(database, backend, settings,
                                                            request):
    """`pms-cli schedules run NAME`, the command each schedule is registered with, takes the
    same claim as the processes' loops: a second trigger within the interval runs nothing."""
    import json
    import subprocess

    with unscoped():
        ScheduleTick.delete().where(ScheduleTick.name == "kiosk_sessions.purge").execute()
    env = _relay_env(settings, backend, request)

    def trigger() -> dict:
        done = subprocess.run([str(BIN / "pms-cli"), "schedules", "run", "kiosk_sessions.purge",
                               "--json"], env=env, capture_output=True, timeout=120, check=True)
        return json.loads(done.stdout)

    assert set(trigger()) == {"kiosk_sessions.purge"}
    assert trigger() == {}
