"""The rules that hold across capabilities, checked after every step of a simulation.

Each check recounts from the stored rows (plain SQL through `Store`, none of the service's own
code) and compares with what the service stored and what its API answers. A check raises
`Violation` naming the rule, the row and both sides. `CHECKS` lists them in the order they run;
`check_all` runs every one and counts the checks made (the simulation's figures).

Each check has a control in tests/simulation/test_controls.py that breaks its rule behind the
service's back and shows the check fires.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from cli.hotelsim.client import Violation
from cli.hotelsim.hotel import Hotel
from tests.simulation.stack import Stack, Store

LIVE = ("CONFIRMED", "CHECKED_IN", "CHECKED_OUT")   # statuses that keep their nights sold
HOLDING = ("TENTATIVE", "DEFINITE", "ACTUAL")
SEARCH_NIGHTS = 7                                   # nights searched through the API per step


def _id(value: Any) -> str:
    """An id as the API spells it (SQLite stores 32 hex digits, PostgreSQL the dashed form)."""
    if value is None:
        return ""
    text = str(value)
    return text if len(text) == 36 else str(uuid.UUID(text))


def _day(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    return value if isinstance(value, date) else date.fromisoformat(str(value)[:10])


def _money(value: Any) -> Decimal:
    return Decimal(str(value)) if value is not None else Decimal(0)


class Checker:
    """The checks of one simulated hotel: the store behind it, and what was checked so far."""

    def __init__(self, hotel: Hotel, stack: Stack) -> None:
        self.hotel, self.stack = hotel, stack
        self.store: Store = stack.store(hotel.client.env_id)
        self.checks: Counter[str] = Counter()
        self._mutations_seen = 0
        self.ari_events: list[dict[str, Any]] = []
        self.full = False           # every night and folio at this check (audits, teardown)
        self._expected: dict[tuple[str, date], dict[str, Any]] | None = None
        self.rotation = 0
        self._streams: dict[tuple[str, str], list[int]] = defaultdict(list)
        self._outbox_seen: set[str] = set()

    @property
    def pid(self) -> Any:
        return uuid.UUID(self.hotel.property_id)

    def q(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        return self.store.query(sql, *args)

    def fail(self, rule: str, detail: str) -> None:
        raise Violation(f"[{rule}] {detail}")

    # -- availability (SPEC rule 6) -----------------------------------------------------------
    def expected_nights(self) -> dict[tuple[str, date], dict[str, Any]]:
        """Per (room type, night) of the window: the recount of rooms, OOO/OOS, sold, held
        (once per round of checks)."""
        if self._expected is None:
            self._expected = self._recount_nights()
        return self._expected

    def _recount_nights(self) -> dict[tuple[str, date], dict[str, Any]]:
        h = self.hotel
        nights = h.nights()
        first, end = nights[0], nights[-1] + timedelta(days=1)
        rooms = Counter(_id(rt) for (rt,) in self.q(
            "SELECT room_type_id FROM room WHERE env_id = ? AND property_id = ?",
            self.store.env, self.pid))
        room_type = {_id(r): _id(rt) for r, rt in self.q(
            "SELECT id, room_type_id FROM room WHERE env_id = ? AND property_id = ?",
            self.store.env, self.pid)}
        out_of: dict[tuple[str, date], dict[str, str]] = defaultdict(dict)
        for room, kind, start, last in self.q(
                "SELECT room_id, kind, from_date, to_date FROM maintenance WHERE env_id = ? "
                "AND property_id = ? AND active = ?", self.store.env, self.pid, True):
            rt = room_type.get(_id(room))
            day = max(_day(start), first)
            while rt and day <= _day(last) and day < end:
                seen = out_of[(rt, day)]
                if seen.get(_id(room)) != "OUT_OF_ORDER":
                    seen[_id(room)] = kind
                day += timedelta(days=1)
        sold: Counter[tuple[str, date]] = Counter()
        for rt, arrival, departure in self.q(
                "SELECT room_type_id, arrival_date, departure_date FROM reservation "
                f"WHERE env_id = ? AND property_id = ? AND status IN {LIVE!r} "
                "AND departure_date > ? AND arrival_date < ?",
                self.store.env, self.pid, first.isoformat(), end.isoformat()):
            day = _day(arrival)
            while day < _day(departure):
                sold[(_id(rt), day)] += 1
                day += timedelta(days=1)
        held: Counter[tuple[str, date]] = Counter()
        for rt, day, allotted, picked in self.q(
                "SELECT n.room_type_id, n.date, n.allotted, n.picked FROM room_block_night n "
                "JOIN room_block b ON b.id = n.block_id WHERE b.env_id = ? AND b.property_id = ? "
                f"AND b.deducts = ? AND b.cut_off_at IS NULL AND n.cut_off_at IS NULL "
                f"AND b.status IN {HOLDING!r}",
                self.store.env, self.pid, True):
            held[(_id(rt), _day(day))] += max(allotted - picked, 0)
        limits = {(_id(rt), _day(day)): limit for rt, day, limit in self.q(
            "SELECT room_type_id, date, sell_limit FROM inventory_day WHERE env_id = ? "
            "AND property_id = ? AND date >= ? AND date < ?", self.store.env, self.pid,
            first.isoformat(), end.isoformat())}
        out = {}
        for rt in h.room_types.values():
            for night in nights:
                kinds = Counter(out_of[(rt, night)].values())
                physical = rooms[rt]
                usable = physical - kinds["OUT_OF_ORDER"] - kinds["OUT_OF_SERVICE"]
                limit = limits.get((rt, night))
                cap = usable if limit is None else min(usable, limit)
                out[(rt, night)] = {
                    "physical": physical, "ooo": kinds["OUT_OF_ORDER"],
                    "oos": kinds["OUT_OF_SERVICE"], "sold": sold[(rt, night)],
                    "held": held[(rt, night)], "sell_limit": limit,
                    "available": max(cap - sold[(rt, night)] - held[(rt, night)], 0)}
        return out

    def check_availability(self) -> None:
        expected = self.expected_nights()
        nights = self.hotel.nights()
        stored = {(_id(rt), _day(day)): (sold, held or 0) for rt, day, sold, held in self.q(
            "SELECT room_type_id, date, sold, held FROM inventory_day WHERE env_id = ? "
            "AND property_id = ? AND date >= ? AND date <= ?", self.store.env, self.pid,
            nights[0].isoformat(), nights[-1].isoformat())}
        for key, want in expected.items():
            sold, held = stored.get(key, (0, 0))
            if (sold, held) != (want["sold"], want["held"]):
                self.fail("availability.stored", f"{key}: stored sold/held {(sold, held)}, "
                          f"recount {(want['sold'], want['held'])}")
            if want["available"] < 0:
                self.fail("availability.negative", f"{key}: {want}")
            self.checks["availability.stored"] += 1

    def check_search(self) -> None:
        h = self.hotel
        expected = self.expected_nights()
        nights = h.nights()
        answer = h.client.get(f"{h.base}/inventory", params={
            "from_date": nights[0].isoformat(), "to_date": nights[-1].isoformat(),
            "limit": 200})
        body = h.client.must(answer)
        for row in body["data"]:
            key = (row["room_type_id"], _day(row["date"]))
            want = expected.get(key)
            if want is None:
                continue
            got = (row["physical"], row["out_of_order"], row["out_of_service"], row["sold"])
            if got != (want["physical"], want["ooo"], want["oos"], want["sold"]):
                self.fail("availability.inventory_api", f"{key}: GET inventory {got}, recount "
                          f"{(want['physical'], want['ooo'], want['oos'], want['sold'])}")
            self.checks["availability.inventory_api"] += 1
        for night in self.search_nights():
            for rt, available in self.searched(night).items():
                want = expected.get((rt, night))
                if want is not None and available != want["available"]:
                    self.fail("availability.search", f"{night} {rt}: search {available}, "
                              f"recount {want}")
                self.checks["availability.search"] += 1

    def search_nights(self) -> list[date]:
        """The nights searched through the API at this step: every night of the coming week
        within a few steps (two per step, in rotation; all of them with `full`), while the
        stored counts and GET inventory are compared for every night at every step."""
        bd = self.hotel.business_date
        if self.full:
            return [bd + timedelta(days=i) for i in range(SEARCH_NIGHTS)]
        self.rotation += 1
        return sorted({bd + timedelta(days=(self.rotation * 2 + i) % SEARCH_NIGHTS)
                       for i in range(2)})

    def searched(self, night: date) -> dict[str, int]:
        h = self.hotel
        answer = h.client.post(f"{h.base}/availability", {
            "arrival_date": night.isoformat(),
            "departure_date": (night + timedelta(days=1)).isoformat(), "adults": 1})
        body = h.client.must(answer)
        return {rt["room_type_id"]: rt["available"] for rt in body["room_types"]}

    # -- blocks -------------------------------------------------------------------------------
    def check_blocks(self) -> None:
        picked: Counter[tuple[str, str, date]] = Counter()
        for block, rt, arrival, departure in self.q(
                "SELECT block_id, room_type_id, arrival_date, departure_date FROM reservation "
                f"WHERE env_id = ? AND property_id = ? AND block_id IS NOT NULL "
                f"AND status IN {LIVE!r}", self.store.env, self.pid):
            day = _day(arrival)
            while day < _day(departure):
                picked[(_id(block), _id(rt), day)] += 1
                day += timedelta(days=1)
        for block, rt, day, stored in self.q(
                "SELECT n.block_id, n.room_type_id, n.date, n.picked FROM room_block_night n "
                "JOIN room_block b ON b.id = n.block_id WHERE b.env_id = ? AND b.property_id = ?",
                self.store.env, self.pid):
            key = (_id(block), _id(rt), _day(day))
            if stored != picked[key]:
                self.fail("blocks.picked", f"block {key}: grid says {stored} picked, "
                          f"{picked[key]} live reservations")
            self.checks["blocks.picked"] += 1

    # -- folios (SPEC rule 5) and balances ---------------------------------------------------
    def check_folios(self) -> None:
        open_folios: Counter[str] = Counter()
        open_balance: dict[str, Decimal] = defaultdict(Decimal)
        for folio, res in self.q("SELECT id, reservation_id FROM folio WHERE env_id = ? AND "
                                 "property_id = ? AND status = 'OPEN' AND folio_type = 'GUEST' "
                                 "AND reservation_id IS NOT NULL", self.store.env, self.pid):
            open_folios[_id(res)] += 1
            open_balance[_id(res)] += self.folio_balance(folio)
        rooms: Counter[str] = Counter()
        for res, status, room in self.q(
                "SELECT id, status, room_id FROM reservation WHERE env_id = ? AND property_id = ?",
                self.store.env, self.pid):
            res = _id(res)
            if status == "CHECKED_IN":
                if room is None:
                    self.fail("folios.occupied", f"in-house stay {res} has no room")
                rooms[_id(room)] += 1
                if open_folios[res] != 1:
                    self.fail("folios.occupied", f"in-house stay {res} has {open_folios[res]} "
                              "OPEN guest folios (SPEC rule 5: exactly one)")
            elif status == "CHECKED_OUT" and open_folios[res]:
                self.fail("folios.closed_stay", f"checked-out stay {res} keeps an OPEN folio")
            elif status in ("CANCELLED", "NO_SHOW") and open_folios[res] \
                    and open_balance[res] == 0:
                # a fee owed or a deposit to refund keeps it open for the desk; nothing else
                self.fail("folios.closed_stay", f"{status} stay {res} keeps an OPEN folio "
                          "with nothing to settle")
            self.checks["folios.occupied"] += 1
        for room, n in rooms.items():
            if n > 1:
                self.fail("folios.occupied", f"room {room} holds {n} in-house stays")

    def check_balances(self) -> None:
        h = self.hotel
        charges = defaultdict(Decimal)
        for folio, amount in self.q("SELECT folio_id, amount FROM folio_charge WHERE env_id = ?",
                                    self.store.env):
            charges[_id(folio)] += _money(amount)
        in_house = h.in_house()
        if not self.full and len(in_house) > 2:
            start = self.rotation % len(in_house)
            in_house = (in_house + in_house)[start:start + 2]
        for stay in in_house:
            folio = h.folio(stay)
            if folio is None:
                self.fail("folios.occupied", f"in-house stay {stay.id}: no folio to read")
            total = charges[_id(folio["id"])]
            got = _money(folio["charges_total"])
            if got != total:
                self.fail("folios.balance", f"folio {folio['id']}: charges_total {got}, "
                          f"lines add up to {total}")
            balance = _money(folio["posted_balance"])
            if balance != got - _money(folio["payments_total"]):
                self.fail("folios.balance", f"folio {folio['id']}: posted_balance {balance} is "
                          f"not charges {got} less payments {folio['payments_total']}")
            self.checks["folios.balance"] += 1

    def folio_balance(self, folio: Any) -> Decimal:
        """Charges less captured payments of one folio, from its lines."""
        fid = uuid.UUID(_id(folio))
        charges = self.q("SELECT amount FROM folio_charge WHERE env_id = ? AND folio_id = ?",
                         self.store.env, fid)
        paid = self.q("SELECT amount FROM folio_payment WHERE env_id = ? AND folio_id = ? "
                      "AND status = 'CAPTURED'", self.store.env, fid)
        return sum((_money(a) for (a,) in charges), Decimal(0)) - sum(
            (_money(a) for (a,) in paid), Decimal(0))

    # -- corporate receivables ------------------------------------------------------------------
    def check_company(self) -> None:
        """The company's open balance less the credit held for it equals what was billed to it
        (its stays' DIRECT_BILL payments, less their reversals) less what it remitted; never
        below zero."""
        h = self.hotel
        if h.company_id is None:
            return
        account = h.receivable()
        open_balance = _money(account["open_balance"])
        held = _money(account.get("credit_balance"))
        if open_balance < 0 or held < 0:
            self.fail("company.balance", f"open balance {open_balance}, held {held}")
        billed = Decimal(0)
        bills: set[str] = set()
        for pid, amount, _status in self.q(
                "SELECT p.id, p.amount, p.status FROM folio_payment p JOIN folio f "
                "ON f.id = p.folio_id JOIN company_billing b ON b.reservation_id = "
                "f.reservation_id WHERE p.env_id = ? AND b.company_profile_id = ? "
                "AND p.method = 'DIRECT_BILL' AND p.status = 'CAPTURED'",
                self.store.env, uuid.UUID(h.company_id)):
            billed += _money(amount)
            bills.add(_id(pid))
        reversed_ = sum((_money(a) for r, a in self.q(
            "SELECT refund_of, amount FROM folio_payment WHERE env_id = ? AND kind = 'REFUND' "
            "AND refund_of IS NOT NULL", self.store.env) if _id(r) in bills), Decimal(0))
        want = billed - abs(reversed_) - h.company_paid
        if open_balance - held != want:
            self.fail("company.balance", f"open {open_balance} - held {held} != billed {billed} "
                      f"- reversed {abs(reversed_)} - paid {h.company_paid} = {want}")
        self.checks["company.balance"] += 1

    # -- keys ---------------------------------------------------------------------------------
    def check_keys(self) -> None:
        stays = {_id(r): (s, _id(room), _day(dep)) for r, s, room, dep in self.q(
            "SELECT id, status, room_id, departure_date FROM reservation WHERE env_id = ? "
            "AND property_id = ?", self.store.env, self.pid)}
        for key, res, status, room, since, until in self.q(
                "SELECT id, reservation_id, status, room_id, valid_from, valid_until "
                "FROM digital_key WHERE env_id = ? "
                "AND property_id = ? AND status IN ('INACTIVE', 'ACTIVE')",
                self.store.env, self.pid):
            stay_status, stay_room, departure = stays.get(_id(res), (None, None, None))
            # valid within the stay: from its issue to the departure day (its check-out time,
            # or a late check-out's, in the property's zone: a day's slack for the zone)
            if departure is not None and not (
                    str(since) < str(until) and _day(until) <= departure + timedelta(days=1)):
                self.fail("keys.window", f"live key {_id(key)} valid {since} to {until}, the "
                          f"stay departs {departure}")
            if stay_status != "CHECKED_IN":
                self.fail("keys.live", f"live key {_id(key)} ({status}) of a {stay_status} stay")
            if _id(room) != stay_room:
                self.fail("keys.live", f"live key {_id(key)} opens room {_id(room)}, the stay "
                          f"is in {stay_room}")
            self.checks["keys.live"] += 1

    # -- outbox and audit (SPEC rule 4), versions ----------------------------------------------
    def check_documents(self) -> None:
        """Fiscal documents: a folio has at most one invoice in force, and only while CLOSED;
        a credit note cancels an invoice of its own folio; each series is gapless; at audits
        (and teardown) the property's fiscal chain verifies through the API."""
        folios = {_id(f): status for f, status in self.q(
            "SELECT id, status FROM folio WHERE env_id = ? AND property_id = ?",
            self.store.env, self.pid)}
        in_force: Counter[str] = Counter()
        invoices: dict[str, str] = {}
        numbers: dict[str, list[int]] = defaultdict(list)
        rows = self.q("SELECT id, folio_id, kind, refers_to_id, number FROM invoice "
                      "WHERE env_id = ? AND property_id = ?", self.store.env, self.pid)
        for doc, folio, kind, _refers_to, number in rows:
            numbers[kind].append(int(str(number).rsplit("-", 1)[1]))
            if kind == "INVOICE":
                in_force[_id(folio)] += 1
                invoices[_id(doc)] = _id(folio)
        for _doc, folio, kind, refers_to, number in rows:
            if kind != "CREDIT_NOTE":
                continue
            in_force[_id(folio)] -= 1
            if invoices.get(_id(refers_to) if refers_to else "") != _id(folio):
                self.fail("documents.credit_note", f"credit note {number} cancels no invoice "
                          "of its folio")
        for folio, n in in_force.items():
            if n not in (0, 1) or (n == 1 and folios.get(folio) != "CLOSED"):
                self.fail("documents.in_force", f"folio {folio} ({folios.get(folio)}) has {n} "
                          "invoices in force (one, and only while CLOSED)")
        for kind, seen in numbers.items():
            if sorted(seen) != list(range(1, len(seen) + 1)):
                self.fail("documents.series", f"{kind} numbers {sorted(seen)} have a gap")
        self.checks["documents.in_force"] += len(in_force)
        if self.full and rows:
            answer = self.hotel.client.get(f"{self.hotel.base}/fiscal-journal/verification")
            if not answer.ok or not answer.body["ok"] or answer.body["entries"] != (
                    len(rows) + answer.body.get("payments", 0)):
                self.fail("documents.chain", f"the fiscal journal does not verify: "
                          f"{answer.status} {answer.body}")
            self.checks["documents.chain"] += 1

    def check_journal(self) -> None:
        h = self.hotel
        for answer in h.mutations[self._mutations_seen:]:
            rid = answer.headers.get("X-Request-Id")
            if not rid:
                self.fail("journal.request", f"{answer.method} {answer.path}: no X-Request-Id")
            outbox = self.q("SELECT count(*) FROM outbox_event WHERE env_id = ? AND "
                            "request_id = ?", self.store.env, rid)[0][0]
            audit = self.q("SELECT count(*) FROM audit_entry WHERE env_id = ? AND "
                           "request_id = ?", self.store.env, rid)[0][0]
            if answer.ok and answer.noop:
                if outbox or audit:
                    self.fail("journal.noop", f"{answer.method} {answer.path} changed nothing "
                              f"yet wrote {outbox} outbox and {audit} audit rows")
            elif answer.ok and (outbox == 0 or audit == 0):
                self.fail("journal.committed", f"{answer.method} {answer.path} answered "
                          f"{answer.status} with {outbox} outbox and {audit} audit rows")
            if not answer.ok and outbox:
                self.fail("journal.refused", f"{answer.method} {answer.path} refused "
                          f"{answer.status} {answer.code} yet wrote {outbox} outbox rows")
            self.checks["journal.committed" if answer.ok else "journal.refused"] += 1
        self._mutations_seen = len(h.mutations)

    def check_versions(self) -> None:
        touched = set()
        if self.full:  # recount every stream from scratch
            self._streams.clear()
            self._outbox_seen.clear()
        for row_id, kind, subject, version in self.q(
                "SELECT id, aggregate_type, subject, aggregate_version FROM outbox_event "
                "WHERE env_id = ?", self.store.env):
            if _id(row_id) not in self._outbox_seen:  # each row's version counted once
                self._outbox_seen.add(_id(row_id))
                # per stream (aggregate type, subject): a rate plan's rate_plan,
                # rate_schedule, restriction and allotment events are four, a room type's own,
                # inventory and ARI events three (CONTRACT §4)
                self._streams[(kind, subject)].append(version)
                touched.add((kind, subject))
        for stream in (self._streams if self.full else touched):
            versions = sorted(self._streams[stream])
            if versions != list(range(versions[0], versions[0] + len(versions))):
                self.fail("journal.versions", f"stream {stream}: versions {versions} do not "
                          "rise by one")
            self.checks["journal.versions"] += 1

    def check_event_data(self) -> None:
        h = self.hotel
        for stay in list(h.stays.values())[-3:] if not self.full else list(h.stays.values()):
            rows = self.q("SELECT aggregate_version, data FROM outbox_event WHERE env_id = ? "
                          "AND subject = ? AND aggregate_type = 'reservation' "
                          "ORDER BY aggregate_version DESC LIMIT 1", self.store.env, stay.id)
            if not rows:
                self.fail("journal.committed", f"reservation {stay.id} has no event")
            version, data = rows[0]
            data = data if isinstance(data, dict) else __import__("json").loads(data)
            if data.get("status") not in (None, stay.status):
                self.fail("journal.data", f"reservation {stay.id}: last event says "
                          f"{data.get('status')}, the API {stay.status}")
            if "version" in data and data["version"] != version:
                self.fail("journal.data", f"reservation {stay.id}: event version {version} "
                          f"carries data.version {data['version']}")
            self.checks["journal.data"] += 1

    # -- ARI from the bus (PostgreSQL: the relay and RabbitMQ) -----------------------------
    def check_ari(self, *, timeout: float = 120.0) -> None:
        bus = self.stack.bus
        if bus is None:
            return
        from tests.services.test_ari_events import Projection

        deadline = time.monotonic() + timeout
        while True:
            pending = self.q("SELECT count(*) FROM outbox_event WHERE env_id = ? AND "
                             "published_at IS NULL AND parked_at IS NULL", self.store.env)[0][0]
            if pending == 0:
                break
            if time.monotonic() > deadline:
                self.fail("ari.relay", f"{pending} outbox rows still unpublished after "
                          f"{timeout:.0f}s:\n{self.stack.log_tails()}")
            time.sleep(0.25)
        parked = self.q("SELECT count(*) FROM outbox_event WHERE env_id = ? AND "
                        "parked_at IS NOT NULL", self.store.env)[0][0]
        if parked:
            self.fail("ari.relay", f"{parked} outbox rows parked")
        time.sleep(0.3)  # the last confirmed publish reaches the queue
        env = str(self.hotel.client.env_id)
        self.ari_events.extend(e for e in bus.drain() if e.get("platformenvid", env) == env
                               or e.get("envid", env) == env)
        projection = Projection()
        projection.apply([e for e in self.ari_events
                          if e.get("data", {}).get("property_id") == self.hotel.property_id])
        h = self.hotel
        for night in [h.business_date + timedelta(days=i) for i in range(SEARCH_NIGHTS)]:
            for rt, available in self.searched(night).items():
                told = projection.sellable.get((rt, night.isoformat()))
                if told != available:
                    self.fail("ari.projection", f"{night} {rt}: the bus says {told}, the search "
                              f"{available}")
                self.checks["ari.projection"] += 1

    def check_processes(self) -> None:
        dead = self.stack.alive()
        if dead:
            self.fail("processes", f"{dead} exited:\n{self.stack.log_tails()}")

    def check_all(self, *, full: bool = False) -> None:
        self.full = full
        self._expected = None
        try:
            for check in CHECKS:
                check(self)
        finally:
            self.full = False
            self._expected = None


CHECKS: list[Callable[[Checker], None]] = [
    Checker.check_processes, Checker.check_availability, Checker.check_search,
    Checker.check_blocks,
    Checker.check_folios, Checker.check_balances, Checker.check_company, Checker.check_keys,
    Checker.check_documents,
    Checker.check_journal,
    Checker.check_versions, Checker.check_event_data,
]
