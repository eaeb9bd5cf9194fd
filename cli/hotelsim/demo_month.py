"""The demo hotel's living month: a past of `days` days and bookings for the month ahead.

The demo property is opened `days` days ago (its business date then, its rates from then); the
app runs in process with its clock set to that morning, and each simulated day the hotel does
what a hotel does, through the HTTP API: bookings arrive from the desk, the phone, a channel and
the guest app; most arrivals check in (some at the kiosk, with a key), in-house guests run up
F&B charges and pay, due departures settle and check out, now and then a booking is cancelled; a
group block is contracted, made definite and picked up, with its dinner in the ballroom; stays
of a company's travellers are billed to it on direct bill, and it pays on Mondays. The
night audit then closes the day (the no-shows land in its log), the day's events reach their
reactions (housekeeping's departure cleans, the guests' e-mails; on the embedded default in
process, elsewhere through the relay and worker processes) and the clock moves to the next
morning. The month ends on today's morning: today's arrivals are waiting, in-house guests hold
folios and keys, today's departures are still in house, and the next month is booked.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from cli.hotelsim.client import Client, WsgiTransport
from cli.hotelsim.hotel import Hotel
from pms.clock import FixedClock
from pms.config import Settings

CALLERS = ("staff", "staff", "phone", "channel", "channel", "guest")


DEMO_TIMEZONE = "Europe/Berlin"  # the demo property's (cli.demo)


def opening_moment(days: int, *, now: datetime | None = None) -> datetime:
    """The morning the demo hotel opened: 09:00 at the hotel, `days` days before its local
    date now (the UTC date is the day before for an hour or two around the hotel's midnight,
    and the month must end on the hotel's today)."""
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(DEMO_TIMEZONE)
    local = (now or datetime.now(UTC)).astimezone(zone).date()
    return datetime.combine(local - timedelta(days=days), time(9), zone).astimezone(UTC)


def live_month(settings: Settings, env_id: uuid.UUID, property_id: str, *, days: int,
               ahead: int = 30, seed: int = 7, opened: datetime,
               progress: Any = None) -> dict[str, Any]:
    """Live `days` days of the demo hotel from `opened` (its business date that day) and book
    the `ahead` days after them. Returns the figures of the month."""
    from pms.app import create_app
    from workers.runtime import embedded_worker, settle_embedded

    rng = random.Random(seed)
    clock = FixedClock(opened)
    client = Client(WsgiTransport(create_app(settings, clock=clock)), settings, env_id,
                    clock=clock)
    hotel = Hotel.attach(client, property_id, window=days + ahead)
    hotel.guests(("Grace", "Hopper"), ("Ada", "Lovelace"), ("Alan", "Turing"),
                 ("Katherine", "Johnson"), ("Edsger", "Dijkstra"))
    rooms = len(hotel.rooms)
    codes = list(hotel.room_types)
    per_day = max(2, round(rooms * 0.85 / 2.2))
    client.must(client.put(f"{hotel.base}/kiosk-config", {
        "enabled_modes": ["CHECK_IN", "CHECK_OUT", "COLLECT_KEY", "WALK_IN"],
        "add_on_package_codes": [], "lockdown": False, "max_keys_per_stay": 3}))
    hotel.open_company()        # Acme Travel on direct bill
    hotel.open_function_space()  # the ballroom and its projector
    # a group contracts its rooms first: four days after today, two nights
    group = None
    for code in codes:
        answer = hotel.open_block(code, days + 4, 2, 3)
        if answer.ok:
            group = hotel.blocks[answer.body["id"]]
            hotel.block_move(group, "tentative")
            hotel.block_move(group, "definite")
            break
    # the whole period's bookings, made over the days before each arrival
    for offset in range(days + ahead):
        for _ in range(rng.randint(per_day - 1, per_day + 1)):
            book_one(hotel, rng, offset, codes)
    block_day = max(days - 3, 0)
    with embedded_worker(settings) as join:
        for day in range(days + 1):  # the days lived, then today's morning
            a_day(hotel, rng, codes, group=group if day == block_day else None,
                   last=(day == days))
            if day == days:
                break
            _close_the_day(hotel, settings, env_id, clock)
            settle_embedded(settings, join)  # the day's events reach their reactions in their day
            if progress:
                progress(day + 1, days)
        settle_embedded(settings, join)
    return {"business_date": hotel.business_date.isoformat(),
            "reservations": len(hotel.stays),
            "in_house": len(hotel.in_house()),
            "arrivals_today": len(hotel.arriving()),
            "departures_today": len([s for s in hotel.in_house()
                                     if s.departure == hotel.business_date]),
            "blocks": len(hotel.blocks), "night_audits": hotel.audits_run,
            "banquet_events": len(hotel.events), "billed_to_company": len(hotel.routed),
            "requests": sum(client.answers.values()),
            "refused": sum(client.refusals.values()),
            "refusals": ", ".join(f"{k} x{v}" for k, v in client.refusals.most_common(6))}


def book_one(hotel: Hotel, rng: random.Random, offset: int, codes: list[str]) -> None:
    """One booking `offset` days ahead, from a caller drawn as the demo's mix."""
    caller = rng.choice(CALLERS)
    nights = rng.choice((1, 1, 2, 2, 3, 4))
    hotel.book(rng.choice(codes), offset, nights, caller, adults=rng.choice((1, 2, 2)))


def a_day(hotel: Hotel, rng: random.Random, codes: list[str], *, group: Any,
          last: bool) -> None:
    """What the hotel does in a day before its night audit (the bench's simulated day runs
    the same): arrivals, charges, a walk-in, cancels, a group's day, company billing, the
    departures."""
    _arrivals(hotel, rng, share=0.5 if last else 0.88)
    for stay in hotel.in_house():
        if rng.random() < 0.5:
            hotel.charge(stay, Decimal(rng.randint(800, 9000)) / 100)
    if rng.random() < 0.7:
        hotel.walk_in(rng.choice(codes), rng.randint(1, 2))
    for stay in rng.sample(hotel.live("CONFIRMED"), k=min(2, len(hotel.live("CONFIRMED")))):
        if stay.arrival > hotel.business_date and rng.random() < 0.5:
            hotel.cancel(stay)
    if group is not None:
        _group_day(hotel, group)
    # Acme's travellers are billed to the company; it pays its statement on Mondays
    for stay in [s for s in hotel.live("CONFIRMED") if s.id not in hotel.routed][:1]:
        if rng.random() < 0.5:
            hotel.route_to_company(stay, None)
    if hotel.business_date.weekday() == 0:
        hotel.company_pays(Decimal("0.8"))
    if last:
        # a morning has its departures: guests who arrived earlier and leave today
        if not [s for s in hotel.in_house() if s.departure == hotel.business_date]:
            for stay in [s for s in hotel.in_house() if s.arrival < hotel.business_date][:2]:
                hotel.edit(stay, (hotel.business_date - stay.arrival).days)
        return
    for stay in [s for s in hotel.in_house() if s.departure <= hotel.business_date]:
        hotel.check_out(stay, settle=True)


def _group_day(hotel: Hotel, group: Any) -> None:
    """The coordinator sends the first names of the rooming list and books the group's dinner
    in the ballroom, billed to its host's folio."""
    for _ in range(2):
        hotel.pick_up(group)
    host = hotel.in_house()[0] if hotel.in_house() else None
    dinner = hotel.banquet(host, 4, 19, 3)
    if dinner.ok:
        hotel.banquet_move(dinner.body["id"], "tentative")
        hotel.banquet_move(dinner.body["id"], "definite")


def _arrivals(hotel: Hotel, rng: random.Random, *, share: float) -> None:
    """`share` of today's arrivals check in (today, the last day: half are still to come):
    some at the kiosk, which hands out a key; most at the desk, where many take a mobile key."""
    arriving = hotel.arriving()
    rng.shuffle(arriving)
    for stay in arriving[:round(len(arriving) * share)]:
        if rng.random() < 0.2:
            hotel.kiosk_check_in(stay)
            continue
        hotel.check_in(stay)
        if stay.status == "CHECKED_IN" and rng.random() < 0.6:
            key = hotel.issue_key(stay)
            if key.ok:
                hotel.activate_key(key.body["id"])


def _close_the_day(hotel: Hotel, settings: Settings, env_id: uuid.UUID, clock: FixedClock
                   ) -> None:
    """The night auditor's run (as `pms-cli end-of-day` runs it), then the next morning."""
    from pms.context import system_ctx
    from pms.services.night_audit.end_of_day import run_night_audit

    # 01:00 the next night: the business date's calendar day has passed at the hotel
    ctx = system_ctx(env_id, sub="night-auditor").with_(now=clock.now() + timedelta(hours=16))
    clock.advance(hours=24)  # 09:00 the next morning, with the morning's sessions
    hotel.client.tokens.clear()
    hotel.night_audit(runner=lambda: run_night_audit(ctx, uuid.UUID(hotel.property_id)))
