"""A simulated hotel day at load: HOTELS hotels of ROOMS rooms, each its own env, each living
its days in a thread of its own through the HTTP API of the service under gunicorn.

A day is what the demo month's hotel does (`cli.hotelsim.demo_month.a_day`, through
`cli.hotelsim.hotel.Hotel`, the client `make simulate` drives): most arrivals check in, some at
the kiosk with a key; in-house guests run up F&B charges and pay; a walk-in; a few cancels;
a stay billed to the company, which pays on Mondays; the due departures settle and check out.
The day also books its share of the window ahead. Then the night audit closes it, in process,
as `pms-cli end-of-day` runs it. The hotels are opened and booked over their window before
the first measured day.

Printed: the day's requests per second over all hotels, beside pgbench tpcb-like measured in
the same run, and the CPU per request of the service and of the database's backends. A regression in any journey of the day lowers the ratio; no goal is set, and the
ratio is read beside earlier runs. Each measured run is the hotels' next day. Run it with
`python -m bench.run simulated_day`.
"""

from __future__ import annotations

import os
import random
import threading
import uuid
from typing import Any

DESCRIPTION = ("a simulated hotel day at load: 4 hotels x 30 rooms, the demo's day through the "
               "HTTP API + the night audit, vs pgbench tpcb-like")
ORDER = 90
HOTELS = int(os.environ.get("PMS_BENCH_SIM_HOTELS", "4"))
ROOMS = int(os.environ.get("PMS_BENCH_SIM_ROOMS", "30"))
WINDOW = 14  # days ahead the hotels keep booked


class _Hotel:
    """One hotel of the run: its model, its seeded walk and the night audit's context."""

    def __init__(self, bench: Any, seed: int) -> None:
        from cli.hotelsim.client import Client
        from cli.hotelsim.demo_month import book_one
        from cli.hotelsim.hotel import Hotel

        self.env_id = uuid.uuid4()
        self.rng = random.Random(seed)
        self.client = Client(bench.app().base_url, bench.settings, self.env_id)
        self.hotel = Hotel.open(self.client, rooms=ROOMS, window=WINDOW)
        self.codes = list(self.hotel.room_types)
        self.per_day = max(2, round(ROOMS * 0.85 / 2.2))
        self.ctx = bench.seed_ctx(self.env_id)
        for offset in range(WINDOW):
            for _ in range(self.rng.randint(self.per_day - 1, self.per_day + 1)):
                book_one(self.hotel, self.rng, offset, self.codes)
        self.error: BaseException | None = None

    def live_a_day(self) -> None:
        from cli.hotelsim.demo_month import a_day, book_one
        from pms.db.database import db
        from pms.platform.ledger import EmbeddedLedger
        from pms.services.night_audit.end_of_day import Hooks, run_night_audit

        try:
            a_day(self.hotel, self.rng, self.codes, group=None, last=False)
            for _ in range(self.rng.randint(self.per_day - 1, self.per_day + 1)):
                book_one(self.hotel, self.rng, WINDOW - 1, self.codes)

            def audit() -> None:
                try:
                    out = run_night_audit(self.ctx, uuid.UUID(self.hotel.property_id),
                                          hooks=Hooks(ledger=EmbeddedLedger()),
                                          override_reason="bench: simulated days run ahead")
                finally:  # (the thread's pooled connection back: the bench's pool is small)
                    db.close()
                if out.status != "DONE":
                    raise RuntimeError(f"night audit failed: {out.error}")

            self.hotel.night_audit(runner=audit)
        except BaseException as exc:  # reported by the measuring thread
            self.error = exc


def run(bench: Any) -> list[Any]:
    from bench.lib import Measurement, Result, timed_threads

    tpcb = bench.baseline("pgbench_tpcb_like")
    bench.log(f"simulated day: opening {HOTELS} hotels of {ROOMS} rooms")
    hotels = [_Hotel(bench, seed) for seed in range(HOTELS)]
    bench.analyze()

    def one_day() -> Measurement:
        before = [(sum(h.client.answers.values()), sum(h.client.refusals.values()),
                   h.hotel.steps) for h in hotels]
        threads = [threading.Thread(target=h.live_a_day) for h in hotels]
        sample = bench._cpu_sample(bench.app().base_url)
        seconds = timed_threads(threads)
        used = bench._cpu_delta(sample)
        for h in hotels:
            if h.error is not None:
                raise RuntimeError(f"a simulated day failed: {h.error!r}") from h.error
        requests = sum(sum(h.client.answers.values()) - b[0] for h, b in zip(hotels, before, strict=True))
        refused = sum(sum(h.client.refusals.values()) - b[1] for h, b in zip(hotels, before, strict=True))
        acts = sum(h.hotel.steps - b[2] for h, b in zip(hotels, before, strict=True))
        return Measurement(rate=requests / seconds, unit="req/s", extra={
            "server_cpu_ms_per_req": round(used["server"] * 1000 / max(1, requests), 4),
            "db_cpu_ms_per_req": round(used["db"] * 1000 / max(1, requests), 4),
            "hotels": HOTELS, "rooms": ROOMS, "requests": requests, "acts": acts,
            "refused": refused, "seconds": round(seconds, 2),
            "in_house": sum(len(h.hotel.in_house()) for h in hotels)})

    measured = bench.repeat(one_day)
    return [Result(f"simulated day, {HOTELS} hotels x {ROOMS} rooms in parallel", measured,
                   baseline=tpcb.name,
                   note="requests of the whole day, the night audit's time included; srv ms "
                        "leaves out the audit (it runs in this process), db ms counts it")]
