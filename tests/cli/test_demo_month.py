"""`pms-cli demo --days N` (what `make run` does on a new install, with 30): the demo hotel opened
N days ago and lived them through the API, so the console and the curl line meet a hotel in
mid-month: today's arrivals waiting, guests in house with folios and keys, today's departures
still in house, a group block picked up, no-shows in the night audit log, the month ahead
booked. On the embedded default (SQLite), as a newcomer runs it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

pytestmark = pytest.mark.slow

DAYS = 7


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("pms-cli")
    return [str(script)] if script.exists() else [sys.executable, "-m", "cli.main"]


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PMS_")}
    env["PMS_HOME"] = str(home)
    return subprocess.run([*_cli(), *args], env=env, capture_output=True, text=True,
                          timeout=900)


def test_the_demo_hotel_lives_its_month_through_the_api(tmp_path: Path):
    home = tmp_path / "home"
    for step in (("db", "migrate"), ("dev", "keys")):
        done = _run(home, *step)
        assert done.returncode == 0, done.stdout + done.stderr
    done = _run(home, "demo", "--days", str(DAYS), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    today = datetime.now(UTC).astimezone(ZoneInfo("Europe/Berlin")).date().isoformat()
    assert summary["created"] and summary["business_date"] == today, summary
    db = sqlite3.connect(next(home.rglob("*.db")))

    def one(sql: str, *args: object) -> int:
        return db.execute(sql, args).fetchone()[0]

    assert one("SELECT count(*) FROM night_audit_run WHERE status = 'DONE'") == DAYS
    assert one("SELECT count(*) FROM reservation WHERE status = 'CONFIRMED' "
               "AND arrival_date = ?", today) > 0, "arrivals today"
    in_house = one("SELECT count(*) FROM reservation WHERE status = 'CHECKED_IN'")
    assert in_house > 0
    assert one("SELECT count(*) FROM reservation r WHERE r.status = 'CHECKED_IN' AND NOT EXISTS "
               "(SELECT 1 FROM folio f WHERE f.reservation_id = r.id AND f.status = 'OPEN')") == 0
    assert one("SELECT count(*) FROM digital_key WHERE status = 'ACTIVE'") > 0
    assert one("SELECT count(*) FROM reservation WHERE status = 'CHECKED_IN' "
               "AND departure_date = ?", today) > 0, "departures today"
    assert one("SELECT count(*) FROM reservation WHERE status = 'CHECKED_OUT'") > 0
    assert one("SELECT count(*) FROM reservation WHERE status = 'NO_SHOW'") > 0
    assert one("SELECT count(*) FROM folio_charge WHERE kind = 'room'") > 0  # nights posted
    assert one("SELECT count(*) FROM room_block WHERE status = 'DEFINITE'") == 1
    assert one("SELECT count(*) FROM reservation WHERE block_id IS NOT NULL") > 0
    assert one("SELECT count(*) FROM banquet_event WHERE status = 'DEFINITE'") == 1
    assert one("SELECT count(*) FROM company_billing") > 0  # a company on direct bill
    assert one("SELECT count(*) FROM reservation WHERE status = 'CONFIRMED' AND "
               "arrival_date > date(?, '+20 days')", today) > 0, "the month ahead"
    # the history is dated as it was lived (the stays' own times; created_at is the row's
    # write time, which is now)
    first = db.execute("SELECT min(checked_in_at) FROM reservation").fetchone()[0]
    assert first[:10] < today
    # the events reached their reactions before the command returned: every check-out has its
    # departure clean, and nothing is left for a relay to publish
    assert one("SELECT count(*) FROM reservation r WHERE r.status = 'CHECKED_OUT' AND NOT EXISTS "
               "(SELECT 1 FROM housekeeping_task t WHERE t.room_id = r.room_id "
               "AND t.kind = 'DEPARTURE_CLEAN')") == 0
    assert one("SELECT count(*) FROM outbox_event WHERE published_at IS NULL") == 0
    # a second run leaves the lived hotel as it is
    again = _run(home, "demo", "--days", str(DAYS), "--json")
    assert again.returncode == 0 and not json.loads(again.stdout)["created"]
