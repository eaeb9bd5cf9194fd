"""ARI prices per occupancy: a channel that prices a stay from the events it holds (each
night's `prices` for N guests plus the plan's `per_stay`) charges exactly what the search and
the quote answer for N guests, night by night, with the plan's packages of every calculation
(a per-person supplement, a per-night one, one per stay and one per person per stay); a change
of a package, of the plan's packages or of the room type's occupancy re-emits them; the digest's
`prices_hash` finds a consumer that missed one (both backends)."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from decimal import Decimal

import pytest

from pms.db.uow import read_scope
from pms.models.catalog import RatePlan
from pms.models.property import Property, RoomType
from pms.services.rates.pricing import quote_stay
from tests.api.test_ari_api import _push
from tests.factories import make_booking_hotel
from tests.services.test_ari_events import Projection, ari_rows

pytestmark = pytest.mark.usefixtures("database")

WINDOW = 5
GUESTS = 3  # the room type's max_occupancy
PACKAGES = [  # (code, calculation, price): one of each calculation
    ("BKF", "PER_PERSON_PER_NIGHT", "15.00"),  # the occupancy supplement
    ("PARK", "PER_NIGHT", "10.00"),
    ("WELCOME", "PER_STAY", "20.00"),
    ("SPA", "PER_PERSON", "30.00"),
]


@pytest.fixture
def hotel(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=3, max_occupancy=GUESTS)
    base = f"/v1/properties/{hotel.id}"
    # rates that differ night by night
    resp = api.put(f"{base}/rate-plans/{hotel.rate_plan.id}/rates", {"rates": [
        {"room_type_id": str(hotel.room_type.id),
         "from_date": (hotel.today + timedelta(days=i)).isoformat(),
         "to_date": (hotel.today + timedelta(days=i)).isoformat(),
         "amount": f"{100 + 7 * i}.50"} for i in range(WINDOW + 3)]})
    assert resp.status_code == 200, resp.text
    for code, calculation, price in PACKAGES:
        resp = api.post(f"{base}/packages", {"code": code, "name": code, "price": price,
                                             "calculation": calculation})
        assert resp.status_code == 201, resp.text
    resp = api.put(f"{base}/rate-plans/{hotel.rate_plan.id}",
                   {"package_codes": [c for c, _, _ in PACKAGES]})
    assert resp.status_code == 200, resp.text
    return hotel


def _searched(api, hotel, arrival, length, adults, children=0):
    """The search's offer total of the hotel's plan (None: not bookable)."""
    resp = api.post(f"/v1/properties/{hotel.id}/availability", {
        "arrival_date": arrival.isoformat(),
        "departure_date": (arrival + timedelta(days=length)).isoformat(),
        "adults": adults, "children": children})
    assert resp.status_code == 200, resp.text
    (rt,) = [r for r in resp.json["room_types"] if r["room_type_id"] == str(hotel.room_type.id)]
    (offer,) = [o for o in rt["offers"] if o["rate_plan_id"] == str(hotel.rate_plan.id)]
    return (Decimal(offer["total"]) if offer["bookable"] else None), offer


def _quoted(ctx, hotel, arrival, length, adults, children=0):
    with read_scope(ctx):
        quote = quote_stay(ctx, property=Property.get_by_id(hotel.id),
                           room_type=RoomType.get_by_id(hotel.room_type.id),
                           rate_plan=RatePlan.get_by_id(hotel.rate_plan.id), arrival=arrival,
                           departure=arrival + timedelta(days=length), adults=adults,
                           children=children)
    return quote.total if quote.bookable else None


def assert_channel_charges_the_quote(api, ctx, hotel, projection, *, guests=GUESTS):
    """Every stay of 1 to 3 nights arriving in the window, for 1..guests guests (as adults,
    and as one adult with children): the consumer's total is the search's and the quote's."""
    compared = 0
    for i in range(WINDOW):
        arrival = hotel.today + timedelta(days=i)
        for length in (1, 3):
            nights = [arrival + timedelta(days=k) for k in range(length)]
            for n in range(1, guests + 1):
                held = projection.stay_total(hotel.room_type.id, hotel.rate_plan.id, nights, n)
                searched, offer = _searched(api, hotel, arrival, length, n)
                assert held == searched, (arrival, length, n, offer)
                assert _quoted(ctx, hotel, arrival, length, n) == searched
                assert _searched(api, hotel, arrival, length, 1, n - 1)[0] == searched
                compared += 1
    return compared


def _new(ctx, seen):
    new = [e for e in ari_rows(ctx) if e["id"] not in seen]
    seen.update(e["id"] for e in new)
    return new


def test_a_channel_charges_what_the_pms_quotes_for_every_occupancy_night_by_night(
        api, ctx, hotel):
    projection = Projection()
    projection.apply(ari_rows(ctx))
    assert assert_channel_charges_the_quote(api, ctx, hotel, projection) == WINDOW * 2 * GUESTS
    rt, plan, day = str(hotel.room_type.id), str(hotel.rate_plan.id), hotel.today.isoformat()
    # the night's prices: the rate, the per-night package, the supplement per guest
    assert projection.prices[(rt, day)][plan] == {"1": "125.5", "2": "140.5", "3": "155.5"}
    meta = projection.plans[(rt, plan)]
    assert meta["per_stay"] == {"1": "50", "2": "80", "3": "110"}
    assert [p["code"] for p in meta["packages"]] == ["BKF", "PARK", "WELCOME", "SPA"]
    assert meta["packages"][0] == {"code": "BKF", "calculation": "PER_PERSON_PER_NIGHT",
                                   "price": "15", "currency": hotel.rate_plan.currency}
    # the old field stays: the night's rate alone
    assert projection.rates[(rt, day)][plan] == "100.5"
    # control: a channel that priced from `rates` alone (the packages left out) would charge
    # less than the quote for every occupancy, so the comparison above is not vacuous
    for n in range(1, GUESTS + 1):
        searched, _ = _searched(api, hotel, hotel.today, 1, n)
        assert Decimal(projection.rates[(rt, day)][plan]) < searched
    # over the room type's occupancy there is no price, and the search refuses
    assert projection.stay_total(rt, plan, [hotel.today], GUESTS + 1) is None
    _, offer = _searched(api, hotel, hotel.today, 1, GUESTS + 1)
    assert not offer["bookable"] and "over_occupancy" in {r["code"] for r in offer["reasons"]}


def test_leaving_out_the_supplement_or_any_package_is_seen(api, ctx, hotel):
    """A channel's total misses the quote by exactly the part an event would leave out: the
    per-guest supplement and each package count, each on its own."""
    projection = Projection()
    projection.apply(ari_rows(ctx))
    rt, plan = str(hotel.room_type.id), str(hotel.rate_plan.id)
    arrival = hotel.today + timedelta(days=1)
    nights = [arrival, arrival + timedelta(days=1)]
    for n in (1, 2):
        searched, _ = _searched(api, hotel, arrival, 2, n)
        rates_only = sum(Decimal(projection.rates[(rt, d.isoformat())][plan]) for d in nights)
        parts = {"BKF": Decimal(15) * n * 2, "PARK": Decimal(10) * 2, "WELCOME": Decimal(20),
                 "SPA": Decimal(30) * n}
        assert searched == rates_only + sum(parts.values())
        assert projection.stay_total(rt, plan, nights, n) == searched
        for code, part in parts.items():  # each left out on its own: the quote disagrees
            assert rates_only + sum(parts.values()) - part != searched, code


def test_package_plan_and_occupancy_changes_reprice_the_events(api, ctx, hotel):
    base = f"/v1/properties/{hotel.id}"
    seen: set[str] = set()
    projection = Projection()
    projection.apply(_new(ctx, seen))
    packages = {p["code"]: p["id"] for p in api.get(f"{base}/packages").json["data"]}
    # a package's price
    resp = api.put(f"{base}/packages/{packages['BKF']}", {"price": "18.00"})
    assert resp.status_code == 200, resp.text
    new = _new(ctx, seen)
    rated = [n for e in new for n in e["data"]["nights"] if n["rates"]]
    assert rated and all(str(hotel.rate_plan.id) in n["prices"] for n in rated)
    projection.apply(new)
    assert assert_channel_charges_the_quote(api, ctx, hotel, projection)
    # the plan's packages
    resp = api.put(f"{base}/rate-plans/{hotel.rate_plan.id}",
                   {"package_codes": ["BKF", "WELCOME"]})
    assert resp.status_code == 200, resp.text
    projection.apply(_new(ctx, seen))
    assert assert_channel_charges_the_quote(api, ctx, hotel, projection)
    # a package deleted (the quote no longer finds it)
    assert api.put(f"{base}/rate-plans/{hotel.rate_plan.id}",
                   {"package_codes": ["BKF"]}).status_code == 200
    resp = api.delete(f"{base}/packages/{packages['WELCOME']}")
    assert resp.status_code in (200, 204), resp.text
    projection.apply(_new(ctx, seen))
    assert assert_channel_charges_the_quote(api, ctx, hotel, projection)
    # the room type's occupancy: a fourth guest is priced
    resp = api.put(f"{base}/room-types/{hotel.room_type.id}", {"max_occupancy": GUESTS + 1})
    assert resp.status_code == 200, resp.text
    projection.apply(_new(ctx, seen))
    assert assert_channel_charges_the_quote(api, ctx, hotel, projection, guests=GUESTS + 1)
    # a package in another currency: the quote refuses the plan, the events price it no more
    resp = api.post(f"{base}/packages", {"code": "USDX", "name": "x", "price": "5.00",
                                         "currency": "USD" if hotel.rate_plan.currency != "USD"
                                         else "EUR"})
    assert resp.status_code == 201, resp.text
    assert api.put(f"{base}/rate-plans/{hotel.rate_plan.id}",
                   {"package_codes": ["BKF", "USDX"]}).status_code == 200
    projection.apply(_new(ctx, seen))
    assert _searched(api, hotel, hotel.today, 1, 1)[0] is None
    assert projection.stay_total(hotel.room_type.id, hotel.rate_plan.id, [hotel.today],
                                 1) is None


def consumer_prices_hash(projection, room_type_id, days):
    """The guide's canonical form of a month's prices, from a consumer's own state."""
    rt, lines, priced = str(room_type_id), [], set()
    for day in days:
        entries = []
        for plan, per in sorted(projection.prices.get((rt, day), {}).items()):
            priced.add(plan)
            entries += [f"{plan}/{n}={a}" for n, a in sorted(per.items(), key=lambda x: int(x[0]))]
        lines.append(f"{day}|{','.join(entries)}")
    for plan in sorted(priced):
        meta = projection.plans[(rt, plan)]
        stay = ",".join(f"{n}={a}" for n, a in
                        sorted(meta["per_stay"].items(), key=lambda x: int(x[0])))
        packages = ",".join(f"{p['code']}:{p['calculation']}:{p['price']}:{p['currency']}"
                            for p in meta["packages"])
        lines.append(f"{plan}|{stay}|{packages}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _month_days(entry):
    from datetime import date

    first, last = date.fromisoformat(entry["from_date"]), date.fromisoformat(entry["to_date"])
    return [(first + timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]


def test_the_digest_hashes_the_prices_and_finds_a_missed_package_change(api, ctx, hotel):
    month = hotel.today.strftime("%Y-%m")
    seen: set[str] = set()
    _new(ctx, seen)
    _push(api, ctx, hotel, {"months": [month]})
    consumer = Projection(gaps_ok=True)
    consumer.apply(_new(ctx, seen))

    def digest():
        resp = api.get(f"/v1/properties/{hotel.id}/ari/digest", params={"from": month,
                                                                       "to": month})
        assert resp.status_code == 200, resp.text
        (entry,) = resp.json["data"]
        return entry

    entry = digest()
    assert entry["prices_hash"] == consumer_prices_hash(consumer, hotel.room_type.id,
                                                        _month_days(entry))
    # a package's price changes and the consumer misses the events: the old hash (sellable,
    # rates, allotments, restrictions) still agrees, the prices hash does not
    packages = {p["code"]: p["id"] for p in
                api.get(f"/v1/properties/{hotel.id}/packages").json["data"]}
    assert api.put(f"/v1/properties/{hotel.id}/packages/{packages['SPA']}",
                   {"price": "35.00"}).status_code == 200
    missed = _new(ctx, seen)
    assert missed
    after = digest()
    assert after["hash"] == entry["hash"]
    assert after["prices_hash"] != consumer_prices_hash(consumer, hotel.room_type.id,
                                                        _month_days(after))
    # a push of the month heals it
    _push(api, ctx, hotel, {"months": [month]})
    consumer.apply(_new(ctx, seen))
    assert after["prices_hash"] == consumer_prices_hash(consumer, hotel.room_type.id,
                                                        _month_days(after))
