"""The hotel's month as a Hypothesis rule-based state machine.

Each rule is one act of a person or system at the hotel; Hypothesis draws the sequence (seeded,
reproducible, shrunk to a minimal replay on failure) and `invariants.Checker.check_all` runs
after every step. The night audit closes a day once the day has seen `STEPS_PER_DAY` acts, so a
run of N steps is about N / STEPS_PER_DAY days.

`HotelMonth.stack` is set by the caller (the processes are started once, every example builds a
new hotel in an env of its own); `configure` sets the size of the hotel.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from cli.hotelsim.client import Client
from cli.hotelsim.hotel import Hotel
from tests.simulation.invariants import Checker
from tests.simulation.stack import Stack

PICK = st.integers(min_value=0, max_value=10**6)
RT = st.sampled_from(["STD", "DLX"])
CALLER = st.sampled_from(["staff", "staff", "channel", "guest", "phone", "anonymous"])


def pick(items: list[Any], n: int) -> Any:
    return items[n % len(items)]


class HotelMonth(RuleBasedStateMachine):
    stack: ClassVar[Stack | None] = None
    rooms: ClassVar[int] = 12
    window: ClassVar[int] = 14
    steps_per_day: ClassVar[int] = 12
    days: ClassVar[int] = 30
    figures: ClassVar[dict[str, Any]] = {}

    @classmethod
    def configure(cls, stack: Stack, *, rooms: int, window: int = 14, steps_per_day: int = 12,
                  days: int = 30) -> None:
        cls.stack, cls.rooms, cls.window = stack, rooms, window
        cls.steps_per_day, cls.days = steps_per_day, days
        cls.figures = {"steps": 0, "checks": 0, "days": 0, "refusals": {}, "examples": 0,
                       "rules": {}}

    def __init__(self) -> None:
        super().__init__()
        assert self.stack is not None, "HotelMonth.configure(stack, ...) first"
        self.client = Client(self.stack.base_url, self.stack.settings, uuid.uuid4())
        self.hotel = Hotel.open(self.client, rooms=self.rooms, window=self.window)
        self.checker = Checker(self.hotel, self.stack)
        self.today_steps = 0
        self.figures["examples"] += 1

    def teardown(self) -> None:
        try:
            self.checker.check_all(full=True)
            self.checker.check_ari()
        finally:
            f = self.figures
            f["checks"] += sum(self.checker.checks.values())
            f["steps"] += self.hotel.steps
            f["days"] += self.hotel.audits_run
            for k, v in self.client.refusals.items():
                f["refusals"][k] = f["refusals"].get(k, 0) + v
            self.checker.store.close()

    # Rule names: Hypothesis's first example draws the first rule by name again and again, so
    # `book` comes first (a house filled to its last room), not a rule that changes little.
    def _act(self) -> None:
        import sys

        self.today_steps += 1
        name = sys._getframe(1).f_code.co_name
        self.figures["rules"][name] = self.figures["rules"].get(name, 0) + 1

    # -- bookings -----------------------------------------------------------------------------
    @initialize()
    def opening_bookings(self) -> None:
        for i in range(max(self.rooms // 3, 2)):
            self.hotel.book("STD" if i % 3 else "DLX", i % 3, 1 + i % 3, "staff")

    @rule(rt=RT, offset=st.integers(0, 10), nights=st.integers(1, 4), caller=CALLER)
    def book(self, rt: str, offset: int, nights: int, caller: str) -> None:
        self._act()
        self.hotel.book(rt, offset, nights, caller)

    @rule(rt=RT, nights=st.integers(1, 3))
    def walk_in(self, rt: str, nights: int) -> None:
        self._act()
        self.hotel.walk_in(rt, nights)

    @rule(rt=RT, nights=st.integers(1, 3))
    def kiosk_walk_in(self, rt: str, nights: int) -> None:
        self._act()
        self.hotel.walk_in(rt, nights, kiosk=True)

    @precondition(lambda self: [s for s in self.hotel.live("CONFIRMED", "CHECKED_IN")
                                if s.departure - s.arrival > timedelta(days=1)])
    @rule(n=PICK, offset=st.integers(1, 3))
    def split(self, n: int, offset: int) -> None:
        self._act()
        stays = [s for s in self.hotel.live("CONFIRMED", "CHECKED_IN")
                 if s.departure - s.arrival > timedelta(days=1)]
        self.hotel.split(pick(stays, n), offset)

    @precondition(lambda self: self.hotel.live("CONFIRMED", "CHECKED_IN"))
    @rule(n=PICK, nights=st.integers(1, 5))
    def edit(self, n: int, nights: int) -> None:
        self._act()
        self.hotel.edit(pick(self.hotel.live("CONFIRMED", "CHECKED_IN"), n), nights)

    @precondition(lambda self: self.hotel.live("CONFIRMED"))
    @rule(n=PICK)
    def cancel(self, n: int) -> None:
        self._act()
        self.hotel.cancel(pick(self.hotel.live("CONFIRMED"), n))

    @precondition(lambda self: self.hotel.arriving())
    @rule(n=PICK)
    def no_show(self, n: int) -> None:
        self._act()
        self.hotel.no_show(pick(self.hotel.arriving(), n))

    # -- the front desk ------------------------------------------------------------------------
    @precondition(lambda self: self.hotel.arriving())
    @rule(n=PICK)
    def check_in(self, n: int) -> None:
        self._act()
        self.hotel.check_in(pick(self.hotel.arriving(), n))

    @precondition(lambda self: self.hotel.arriving())
    @rule(n=PICK)
    def kiosk_check_in(self, n: int) -> None:
        self._act()
        self.hotel.kiosk_check_in(pick(self.hotel.arriving(), n))

    @precondition(lambda self: self.hotel.in_house())
    @rule(n=PICK, cents=st.integers(100, 9000))
    def charge(self, n: int, cents: int) -> None:
        self._act()
        self.hotel.charge(pick(self.hotel.in_house(), n), Decimal(cents) / 100)

    @precondition(lambda self: self.hotel.in_house())
    @rule(n=PICK, share=st.sampled_from(["0.5", "1"]), method=st.sampled_from(["CASH", "CARD"]))
    def pay(self, n: int, share: str, method: str) -> None:
        self._act()
        self.hotel.pay(pick(self.hotel.in_house(), n), Decimal(share), method)

    @precondition(lambda self: self.hotel.in_house())
    @rule(n=PICK, settle=st.booleans())
    def check_out(self, n: int, settle: bool) -> None:
        self._act()
        self.hotel.check_out(pick(self.hotel.in_house(), n), settle=settle)

    @precondition(lambda self: self.hotel.in_house())
    @rule(n=PICK)
    def revert(self, n: int) -> None:
        self._act()
        self.hotel.revert(pick(self.hotel.in_house(), n))

    @precondition(lambda self: self.hotel.left())
    @rule(n=PICK)
    def invoice(self, n: int) -> None:
        self._act()
        self.hotel.invoice(pick(self.hotel.left(), n))

    @precondition(lambda self: self.hotel.left())
    @rule(n=PICK)
    def revert_check_out(self, n: int) -> None:
        """The guest who left today comes back (an invoiced stay: its credit note)."""
        self._act()
        self.hotel.revert(pick(self.hotel.left(), n))

    @precondition(lambda self: self.hotel.in_house())
    @rule(n=PICK, m=PICK)
    def move_room(self, n: int, m: int) -> None:
        self._act()
        stay = pick(self.hotel.in_house(), n)
        same = [r for r, rt in self.hotel.rooms.items() if rt == stay.room_type_id]
        if same:
            self.hotel.move_room(stay, pick(same, m))

    @precondition(lambda self: self.hotel.in_house())
    @rule(n=PICK, activate=st.booleans())
    def key(self, n: int, activate: bool) -> None:
        self._act()
        answer = self.hotel.issue_key(pick(self.hotel.in_house(), n))
        if answer.ok and activate:
            self.hotel.activate_key(answer.body["id"])

    @precondition(lambda self: self.hotel.keys)
    @rule(n=PICK)
    def deactivate_key(self, n: int) -> None:
        self._act()
        self.hotel.deactivate_key(pick(sorted(self.hotel.keys), n))

    @precondition(lambda self: self.hotel.in_house())
    @rule(n=PICK, amount=st.sampled_from(["50.00", "150.00"]))
    def pre_authorize(self, n: int, amount: str) -> None:
        self._act()
        self.hotel.pre_authorize(pick(self.hotel.in_house(), n), Decimal(amount))

    @rule(n=PICK, status=st.sampled_from(["CLEAN", "DIRTY", "INSPECTED"]))
    def housekeeping(self, n: int, status: str) -> None:
        self._act()
        self.hotel.housekeeping(pick(list(self.hotel.rooms), n), status)

    # -- rooms and inventory -------------------------------------------------------------------
    @rule(n=PICK, offset=st.integers(0, 8), nights=st.integers(1, 3),
          kind=st.sampled_from(["OUT_OF_ORDER", "OUT_OF_SERVICE"]))
    def out_of_order(self, n: int, offset: int, nights: int, kind: str) -> None:
        self._act()
        self.hotel.out_of_order(pick(list(self.hotel.rooms), n), offset, nights, kind)

    @precondition(lambda self: self.hotel.maintenance)
    @rule(n=PICK)
    def end_out_of_order(self, n: int) -> None:
        self._act()
        self.hotel.end_out_of_order(pick(list(self.hotel.maintenance), n))

    @rule(rt=RT, offset=st.integers(0, 8), nights=st.integers(1, 3),
          limit=st.sampled_from([None, None, 0, 1, 2, 4]))
    def sell_limit(self, rt: str, offset: int, nights: int, limit: int | None) -> None:
        self._act()
        self.hotel.sell_limit(rt, offset, nights, limit)

    @rule(offset=st.integers(0, 8), nights=st.integers(1, 2), closed=st.booleans())
    def stop_sell(self, offset: int, nights: int, closed: bool) -> None:
        self._act()
        self.hotel.stop_sell(offset, nights, closed)

    @rule(rt=RT, offset=st.integers(0, 8), nights=st.integers(1, 3),
          rooms=st.sampled_from([None, None, 0, 1, 3]))
    def set_allotment(self, rt: str, offset: int, nights: int, rooms: int | None) -> None:
        self._act()
        self.hotel.allotment(rt, offset, nights, rooms)

    @rule(rt=RT, offset=st.integers(0, 8), nights=st.integers(1, 3),
          amount=st.sampled_from(["89.00", "120.00", "175.00"]))
    def set_rates(self, rt: str, offset: int, nights: int, amount: str) -> None:
        self._act()
        self.hotel.set_rates(rt, offset, nights, amount)

    @rule(n=PICK, rt=RT)
    def retype_room(self, n: int, rt: str) -> None:
        self._act()
        self.hotel.retype_room(pick(sorted(self.hotel.rooms), n), rt)

    @rule(rt=RT)
    def room_add(self, rt: str) -> None:
        self._act()
        self.hotel.add_room(rt)

    @precondition(lambda self: len(self.hotel.rooms) > 4)
    @rule(n=PICK)
    def delete_room(self, n: int) -> None:
        self._act()
        self.hotel.delete_room(pick(list(self.hotel.rooms), n))

    # -- groups --------------------------------------------------------------------------------
    @rule(rt=RT, offset=st.integers(1, 8), nights=st.integers(1, 3), rooms=st.integers(1, 3))
    def open_block(self, rt: str, offset: int, nights: int, rooms: int) -> None:
        self._act()
        self.hotel.open_block(rt, offset, nights, rooms)

    @precondition(lambda self: self.hotel.blocks)
    @rule(n=PICK, to=st.sampled_from(["tentative", "definite", "definite", "release",
                                      "cut-off", "cancel", "lose"]))
    def move_block(self, n: int, to: str) -> None:
        self._act()
        self.hotel.block_move(pick(list(self.hotel.blocks.values()), n), to)

    @precondition(lambda self: self.hotel.blocks)
    @rule(n=PICK, rooms=st.integers(1, 2))
    def wash_block(self, n: int, rooms: int) -> None:
        self._act()
        self.hotel.wash_block(pick(list(self.hotel.blocks.values()), n), rooms)

    @precondition(lambda self: self.hotel.blocks)
    @rule(n=PICK)
    def pick_up(self, n: int) -> None:
        self._act()
        self.hotel.pick_up(pick(list(self.hotel.blocks.values()), n))

    # -- corporate -----------------------------------------------------------------------------
    @precondition(lambda self: [s for s in self.hotel.live("CONFIRMED", "CHECKED_IN")
                                if s.id not in self.hotel.routed])
    @rule(n=PICK, cap=st.sampled_from([None, None, "80.00"]))
    def route_to_company(self, n: int, cap: str | None) -> None:
        self._act()
        stays = [s for s in self.hotel.live("CONFIRMED", "CHECKED_IN")
                 if s.id not in self.hotel.routed]
        self.hotel.route_to_company(pick(stays, n), cap)

    @rule(rt=RT, offset=st.integers(0, 8), nights=st.integers(1, 3))
    def traveler_books(self, rt: str, offset: int, nights: int) -> None:
        self._act()
        self.hotel.traveler_books(rt, offset, nights)

    @rule(step=st.sampled_from(["submit", "postpay", "bill", "delete"]), n=PICK)
    def company_method(self, step: str, n: int) -> None:
        self._act()
        self.hotel.company_method(step, n)

    @precondition(lambda self: self.hotel.routed)
    @rule(share=st.sampled_from(["0.5", "1"]))
    def company_pays(self, share: str) -> None:
        self._act()
        self.hotel.company_pays(Decimal(share))

    # -- banquets ------------------------------------------------------------------------------
    @rule(n=PICK, offset=st.integers(0, 6), hour=st.sampled_from([12, 18, 19]),
          hours=st.integers(2, 4), hosted=st.booleans())
    def host_banquet(self, n: int, offset: int, hour: int, hours: int, hosted: bool) -> None:
        self._act()
        host = pick(self.hotel.in_house(), n) if hosted and self.hotel.in_house() else None
        self.hotel.banquet(host, offset, hour, hours)

    @precondition(lambda self: self.hotel.events)
    @rule(n=PICK, to=st.sampled_from(["tentative", "definite", "definite", "actual", "close",
                                      "cancel", "lose"]))
    def move_banquet(self, n: int, to: str) -> None:
        self._act()
        self.hotel.banquet_move(pick(sorted(self.hotel.events), n), to)

    @rule(offset=st.integers(0, 6), hours=st.integers(2, 12))
    def space_out_of_order(self, offset: int, hours: int) -> None:
        self._act()
        self.hotel.space_out_of_order(offset, hours)

    @precondition(lambda self: self.hotel.events)
    @rule(n=PICK, quantity=st.integers(1, 3))
    def post_banquet(self, n: int, quantity: int) -> None:
        self._act()
        self.hotel.banquet_post(pick(sorted(self.hotel.events), n), quantity)

    # -- policies ------------------------------------------------------------------------------
    @precondition(lambda self: self.today_steps % 4 == 0)  # now and then, not every step
    @rule(on=st.booleans())
    def freeze_channel(self, on: bool) -> None:
        self._act()
        self.hotel.freeze_channel(on)

    # -- the night audit -----------------------------------------------------------------------
    @precondition(lambda self: self.today_steps >= self.steps_per_day
                  and self.hotel.audits_run < self.days)
    @rule()
    def night_audit(self) -> None:
        self.today_steps = 0
        answer = self.hotel.night_audit()
        if answer.ok:
            self.checker.check_all(full=True)
            self.checker.check_ari()

    @invariant()
    def every_rule_holds(self) -> None:
        self.checker.check_all()
