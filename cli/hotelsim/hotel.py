"""The simulated hotel: what exists (the model), built and changed only through the HTTP API.

`Hotel.open(...)` builds a property as a hotel's set-up team would (room types, rooms, a rate
plan with its rates, a transaction code, the kiosk configuration, guest profiles). Each
operation is one thing a person or a system does at a hotel, sent as the caller that does it
(staff, a channel, a guest, a kiosk, an anonymous booking funnel); it returns the answer and
keeps the model in step with what the service answered. A refusal is a legitimate outcome: the
client has already checked it is a documented problem, and the invariants check that nothing
changed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from cli.hotelsim.client import Answer, Client


def company_card(company_id: str, brand: str) -> str:
    """A card the payments sandbox reports as the company's own (a company payment method is
    refused otherwise), of that brand."""
    return f"pm_holder_{uuid.UUID(company_id).hex}_{brand}"


TERMINAL = ("CANCELLED", "CHECKED_OUT", "NO_SHOW")
MUTATING = ("POST", "PUT", "PATCH", "DELETE")


@dataclass
class Stay:
    id: str
    room_type_id: str
    arrival: date
    departure: date
    status: str = "CONFIRMED"
    block_id: str | None = None
    profile_id: str | None = None
    room_number: str | None = None
    folio_id: str | None = None
    last_name: str | None = None
    confirmation: str | None = None


@dataclass
class Block:
    id: str
    code: str
    room_type_id: str
    arrival: date
    departure: date
    status: str = "INQUIRY"


@dataclass
class Hotel:
    client: Client
    property_id: str
    room_types: dict[str, str]              # code -> id
    rooms: dict[str, str]                   # room number -> room type id
    room_ids: dict[str, str]                # room number -> room id
    rate_plan_id: str
    business_date: date
    window: int
    stays: dict[str, Stay] = field(default_factory=dict)
    blocks: dict[str, Block] = field(default_factory=dict)
    maintenance: dict[str, str] = field(default_factory=dict)   # id -> room number
    profiles: list[str] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)          # key id -> reservation id
    mutations: list[Answer] = field(default_factory=list)       # every mutating answer
    audits_run: int = 0
    steps: int = 0
    policy_id: str | None = None
    company_id: str | None = None
    company_method_id: str | None = None
    company_paid: Decimal = Decimal(0)                       # what the company remitted
    routed: set[str] = field(default_factory=set)            # stays billed to the company
    company_people: dict[str, str] = field(default_factory=dict)  # role -> traveler profile
    corporate_plan_id: str | None = None
    company_methods: dict[str, str] = field(default_factory=dict)  # method id -> approval
    space_id: str | None = None
    item_id: str | None = None
    events: dict[str, str] = field(default_factory=dict)     # banquet event id -> status
    _seq: int = 0

    # -- set-up ----------------------------------------------------------------------------
    @classmethod
    def open(cls, client: Client, *, rooms: int = 12, window: int = 21) -> Hotel:
        must = client.must
        code = "SIM" + uuid.uuid4().hex[:6].upper()
        prop = must(client.post("/v1/properties", {
            "propertyCode": code, "name": "Simulated Grand", "timezone": "Europe/Berlin",
            "currencyCode": "EUR", "languages": ["en", "de"]}))
        base = f"/v1/properties/{prop['id']}"
        types = {}
        for rt_code, name, occ in (("STD", "Standard Double", 2), ("DLX", "Deluxe King", 3)):
            types[rt_code] = must(client.post(f"{base}/room-types", {
                "code": rt_code, "name": name, "max_occupancy": occ}))["id"]
        numbers: dict[str, str] = {}
        room_ids: dict[str, str] = {}
        for i in range(rooms):
            rt = types["STD"] if i < (rooms * 2 + 2) // 3 else types["DLX"]
            number = f"{1 + i // 10}{i % 10:02d}"
            room = must(client.post(f"{base}/rooms", {"room_number": number, "room_type_id": rt,
                                                      "floor": number[0]}))
            numbers[number], room_ids[number] = rt, room["id"]
        plan = must(client.post(f"{base}/rate-plans", {"code": "BAR", "name": "Best Available"}))
        today = date.fromisoformat(must(client.get(base))["businessDate"]
                                   or _local_today("Europe/Berlin"))
        last = today + timedelta(days=window + 45)
        must(client.put(f"{base}/rate-plans/{plan['id']}/rates", {"rates": [
            {"room_type_id": rt, "from_date": (today - timedelta(days=3)).isoformat(),
             "to_date": last.isoformat(), "amount": amount}
            for rt, amount in ((types["STD"], "110.00"), (types["DLX"], "160.00"))]}))
        must(client.post(f"{base}/transaction-codes", {
            "code": "FB", "name": "Restaurant", "category": "F&B",
            "tax_rules": [{"code": "VAT", "kind": "percentage", "rate": "7", "inclusive": True}]}))
        must(client.put(f"{base}/kiosk-config", {
            "enabled_modes": ["CHECK_IN", "CHECK_OUT", "COLLECT_KEY", "WALK_IN"],
            "add_on_package_codes": [], "lockdown": False, "max_keys_per_stay": 3}))
        hotel = cls(client, prop["id"], types, numbers, room_ids, plan["id"], today, window)
        hotel.guests(("Ada", "Lovelace"), ("Alan", "Turing"), ("Grace", "Hopper"),
                     ("Edsger", "Dijkstra"))
        hotel.open_company()
        hotel.open_function_space()
        return hotel

    def open_function_space(self) -> None:
        """Catering's set-up: a ballroom, a projector to hire, and their transaction code."""
        must = self.client.must
        must(self.client.post(f"{self.base}/transaction-codes", {
            "code": "BQ", "name": "Banqueting", "category": "F&B"}))
        self.space_id = must(self.client.post(f"{self.base}/function-spaces", {
            "name": "Ballroom", "capacities": {"BANQUET": 120, "THEATRE": 200}}))["id"]
        self.item_id = must(self.client.post(f"{self.base}/event-resource-items", {
            "code": "PROJ", "name": "Projector", "kind": "EQUIPMENT", "stock": 2,
            "unit_price": "40.00", "transaction_code": "BQ"}))["id"]

    def open_company(self) -> None:
        """A company on direct bill: its profile, a receivable account with a credit limit, and
        a payment method the credit manager approves to bill the account."""
        must = self.client.must
        corp = must(self.client.post(f"{self.base}/rate-plans", {
            "code": "ACME", "name": "Acme negotiated", "negotiated": True}))["id"]
        start = self.business_date - timedelta(days=3)
        must(self.client.put(f"{self.base}/rate-plans/{corp}/rates", {"rates": [
            {"room_type_id": rt, "from_date": start.isoformat(),
             "to_date": (start + timedelta(days=self.window + 60)).isoformat(),
             "amount": "95.00"} for rt in self.room_types.values()]}))
        company = must(self.client.post(f"{self.base}/profiles", {
            "kind": "COMPANY", "company_name": "Acme Travel GmbH",
            "email": f"ap.{self.property_id[:8]}@acme.example",
            "preferences": {"negotiated_rate_plan_ids": [corp]}}))["id"]
        path = f"{self.base}/companies/{company}"
        for role in ("ADMIN", "TRAVELER"):
            traveler = must(self.client.post(f"{self.base}/profiles", {
                "first_name": "Acme", "last_name": role.title(),
                "email": f"{role.lower()}.{self.property_id[:8]}@acme.example"}))["id"]
            must(self.client.post(f"{path}/users", {"traveler_profile_id": traveler,
                                                    "role": role}))
            self.company_people[role] = traveler
        self.corporate_plan_id = corp
        must(self.client.put(f"{path}/receivable-account",
                             {"credit_limit": "1500.00", "currency": "EUR"}))
        method = must(self.client.post(f"{path}/payment-methods",
                                       {"payment_method_id": company_card(company, "visa")}))["id"]
        must(self.client.post(f"{path}/payment-methods/{method}/approve",
                              {"approval": "BILL_TO_COMPANY"}))
        self.company_id, self.company_method_id = company, method

    def guests(self, *names: tuple[str, str]) -> None:
        """Guest profiles the guest-app bookings act as (created or ensured)."""
        for first, last_name in names:
            self.profiles.append(self.client.must(self.client.post(f"{self.base}/profiles", {
                "first_name": first, "last_name": last_name,
                "email": f"{first.lower()}.{last_name.lower()}@example.com"}))["id"])

    @classmethod
    def attach(cls, client: Client, property_id: str, *, window: int = 21) -> Hotel:
        """The model of a property that exists (the demo hotel), read through the API."""
        must = client.must
        base = f"/v1/properties/{property_id}"
        prop = must(client.get(base))
        types = {rt["code"]: rt["id"] for rt in must(client.get(f"{base}/room-types"))["data"]}
        rooms = must(client.get(f"{base}/rooms", params={"limit": 200}))["data"]
        plans = must(client.get(f"{base}/rate-plans"))["data"]
        plan = next(p for p in plans if not p.get("negotiated"))
        today = date.fromisoformat(prop["businessDate"])
        hotel = cls(client, property_id, types, {r["room_number"]: r["room_type_id"] for r in rooms},
                    {r["room_number"]: r["id"] for r in rooms}, plan["id"], today, window)
        return hotel

    @property
    def base(self) -> str:
        return f"/v1/properties/{self.property_id}"

    def _send(self, method: str, path: str, body: Any = None, **kw: Any) -> Answer:
        answer = self.client.call(method, self.base + path, body, **kw)
        if method in MUTATING:
            self.mutations.append(answer)
        self.steps += 1
        return answer

    def _next(self, prefix: str) -> str:
        self._seq += 1
        return f"{prefix}{self._seq:04d}"

    # -- views of the model --------------------------------------------------------------------
    def live(self, *statuses: str) -> list[Stay]:
        return [s for s in self.stays.values() if s.status in statuses]

    def arriving(self) -> list[Stay]:
        return [s for s in self.live("CONFIRMED") if s.arrival == self.business_date]

    def in_house(self) -> list[Stay]:
        return self.live("CHECKED_IN")

    def nights(self) -> list[date]:
        start = self.business_date - timedelta(days=2)
        return [start + timedelta(days=i) for i in range(self.window + 8)]

    def _remember(self, body: dict[str, Any], *, block_id: str | None = None) -> Stay:
        stay = Stay(body["id"], body["room_type_id"], date.fromisoformat(body["arrival_date"]),
                    date.fromisoformat(body["departure_date"]), body["status"],
                    block_id or body.get("block_id"), body.get("guest_profile_id"),
                    body.get("room_number"), last_name=body.get("guest_last_name"),
                    confirmation=body.get("confirmation_number"))
        self.stays[stay.id] = stay
        return stay

    def refresh(self, stay: Stay) -> None:
        body = self.client.must(self.client.get(f"{self.base}/reservations/{stay.id}"))
        stay.status = body["status"]
        stay.arrival = date.fromisoformat(body["arrival_date"])
        stay.departure = date.fromisoformat(body["departure_date"])
        stay.room_number = body.get("room_number")

    # -- bookings ----------------------------------------------------------------------------
    def book(self, rt_code: str, offset: int, nights: int, caller: str, adults: int = 1) -> Answer:
        arrival = self.business_date + timedelta(days=offset)
        body: dict[str, Any] = {
            "room_type_id": self.room_types[rt_code], "rate_plan_id": self.rate_plan_id,
            "arrival_date": arrival.isoformat(),
            "departure_date": (arrival + timedelta(days=nights)).isoformat(), "adults": adults}
        kw: dict[str, Any] = {}
        if caller == "guest":
            profile = self.profiles[offset % len(self.profiles)]
            body["guest_profile_id"] = profile
            kw = {"as_": "guest", "holder": profile}
        else:
            body["guest"] = {"first_name": "Sim", "last_name": self._next("Guest")}
            if caller == "channel":
                body.update(source="CHANNEL", channel="OTA")
                kw = {"as_": "channel"}
            elif caller == "anonymous":
                kw = {"as_": "anonymous"}
            elif caller == "phone":
                body.update(source="PHONE", channel="PHONE")
        answer = self._send("POST", "/reservations", body, **kw)
        if answer.ok:
            self._remember(answer.body)
        return answer

    def walk_in(self, rt_code: str, nights: int, *, kiosk: bool = False) -> Answer:
        body: dict[str, Any] = {"guest": {"first_name": "Walk", "last_name": self._next("Walker")},
                                "nights": nights, "room_type_id": self.room_types[rt_code],
                                "rate_plan_id": self.rate_plan_id}
        if kiosk:  # a terminal's walk-in is guaranteed by a card it pre-authorizes
            body["payment_method_id"] = "pm_card_visa"
        answer = self._send("POST", "/walk-in", body, as_="kiosk" if kiosk else "staff")
        if answer.ok:
            self._remember(answer.body if "id" in answer.body else answer.body["reservation"])
        return answer

    def edit(self, stay: Stay, nights: int) -> Answer:
        departure = stay.arrival + timedelta(days=nights)
        answer = self._send("PUT", f"/reservations/{stay.id}",
                            {"departure_date": departure.isoformat()})
        if answer.ok:
            self.refresh(stay)
        return answer

    def cancel(self, stay: Stay) -> Answer:
        answer = self._send("POST", f"/reservations/{stay.id}/cancel")
        self.refresh(stay)
        return answer

    def no_show(self, stay: Stay) -> Answer:
        answer = self._send("POST", f"/reservations/{stay.id}/no-show")
        self.refresh(stay)
        return answer

    # -- the front desk ----------------------------------------------------------------------
    def check_in(self, stay: Stay) -> Answer:
        answer = self._send("POST", f"/reservations/{stay.id}/check-in", {})
        if answer.status == 409 and answer.code in ("room_not_ready",):
            answer = self._send("POST", f"/reservations/{stay.id}/check-in",
                                {"dirty_room_reason": "guest accepts the room as it is"})
        self.refresh(stay)
        return answer

    def kiosk_session(self, stay: Stay) -> str | None:
        """A terminal's lookup of the stay (last name and confirmation number)."""
        answer = self._send("POST", "/kiosk/lookup", {"last_name": stay.last_name,
                                                      "confirmation_number": stay.confirmation},
                            as_="kiosk")
        return answer.body.get("kiosk_session") if answer.ok else None

    def kiosk_check_in(self, stay: Stay) -> Answer | None:
        session = self.kiosk_session(stay)
        if session is None:
            return None
        answer = self._send("POST", f"/reservations/{stay.id}/check-in", {}, as_="kiosk",
                            headers={"X-Kiosk-Session": session})
        self.refresh(stay)
        if answer.ok:  # the guest collects a key before walking away
            key = self._send("POST", "/digital-keys", {"reservation_id": stay.id,
                                                       "key_type": "CARD"},
                             as_="kiosk", headers={"X-Kiosk-Session": session})
            if key.ok:
                self.keys[key.body["id"]] = stay.id
        return answer

    def split(self, stay: Stay, offset: int) -> Answer:
        answer = self._send("POST", f"/reservations/{stay.id}/split", {
            "split_date": (stay.arrival + timedelta(days=offset)).isoformat()})
        self.refresh(stay)
        if answer.ok:
            self._remember(answer.body["new_reservation"], block_id=stay.block_id)
        return answer

    def stop_sell(self, offset: int, nights: int, closed: bool) -> Answer:
        start = self.business_date + timedelta(days=offset)
        return self._send("PUT", "/restrictions", {
            "from_date": start.isoformat(),
            "to_date": (start + timedelta(days=nights - 1)).isoformat(), "closed": closed})

    def allotment(self, rt_code: str, offset: int, nights: int, rooms: int | None) -> Answer:
        start = self.business_date + timedelta(days=offset)
        return self._send("PUT", f"/rate-plans/{self.rate_plan_id}/allotments", {
            "room_type_id": self.room_types[rt_code], "from_date": start.isoformat(),
            "to_date": (start + timedelta(days=nights - 1)).isoformat(), "allotment": rooms})

    def folio(self, stay: Stay) -> dict[str, Any] | None:
        answer = self.client.get(f"{self.base}/reservations/{stay.id}/folio")
        return answer.body if answer.ok else None

    def charge(self, stay: Stay, amount: Decimal) -> Answer | None:
        folio = self.folio(stay)
        if folio is None:
            return None
        return self._send("POST", f"/folios/{folio['id']}/charges",
                          {"transaction_code": "FB", "amount": str(amount)})

    def pay(self, stay: Stay, share: Decimal = Decimal(1), method: str = "CASH") -> Answer | None:
        folio = self.folio(stay)
        if folio is None:
            return None
        due = Decimal(str(folio["balance_due"])) * share
        due = due.quantize(Decimal("0.01"))
        if due <= 0:
            return None
        body = {"amount": str(due), "method": method}
        if method == "CARD":
            body["payment_method_id"] = "pm_card_visa"
        return self._send("POST", f"/folios/{folio['id']}/payments", body)

    def check_out(self, stay: Stay, *, settle: bool = True) -> Answer:
        if settle:
            self.pay(stay)
        answer = self._send("POST", f"/reservations/{stay.id}/check-out")
        self.refresh(stay)
        return answer

    def revert(self, stay: Stay) -> Answer:
        answer = self._send("POST", f"/reservations/{stay.id}/revert",
                            {"reason": "checked in the wrong guest"})
        self.refresh(stay)
        return answer

    def invoice(self, stay: Stay) -> Answer | None:
        """The desk prints the invoice of a stay that left (409 while its folio is open)."""
        folio = self.folio(stay)
        if folio is None:
            return None
        answer = self._send("POST", f"/folios/{folio['id']}/invoice")
        answer.noop = answer.status == 200  # the invoice issued before, answered again
        return answer

    def left(self) -> list[Stay]:
        return self.live("CHECKED_OUT")

    def move_room(self, stay: Stay, number: str) -> Answer:
        answer = self._send("PUT", f"/reservations/{stay.id}/room", {"room_number": number})
        self.refresh(stay)
        return answer

    def issue_key(self, stay: Stay) -> Answer:
        answer = self._send("POST", "/digital-keys", {"reservation_id": stay.id,
                                                      "key_type": "MOBILE"})
        if answer.ok:
            self.keys[answer.body["id"]] = stay.id
        return answer

    def activate_key(self, key_id: str) -> Answer:
        return self._key_move(key_id, "activate", "ACTIVE")

    def deactivate_key(self, key_id: str) -> Answer:
        return self._key_move(key_id, "deactivate", "INACTIVE")

    def _key_move(self, key_id: str, move: str, to: str) -> Answer:
        """A key's activate or deactivate; a key already in that state is answered as it is
        (200, nothing written: the API documents the repeat)."""
        before = self.client.get(f"{self.base}/digital-keys", params={"reservation_id": self.keys.get(key_id)}) \
            if key_id in self.keys else None
        was = next((k.get("status") for k in (before.body or {}).get("data", [])
                    if k.get("id") == key_id), None) if before is not None and before.ok else None
        answer = self._send("POST", f"/digital-keys/{key_id}/{move}")
        answer.noop = answer.ok and was == to
        return answer

    def pre_authorize(self, stay: Stay, amount: Decimal) -> Answer | None:
        """A card pre-authorized at the desk (a payment intent with manual confirmation)."""
        folio = self.folio(stay)
        if folio is None:
            return None
        return self._send("POST", f"/folios/{folio['id']}/pre-authorizations",
                          {"amount": str(amount), "payment_method_id": "pm_card_visa"})

    def set_rates(self, rt_code: str, offset: int, nights: int, amount: str) -> Answer:
        """Revenue management reprices a room type for a few nights."""
        start = self.business_date + timedelta(days=offset)
        return self._send("PUT", f"/rate-plans/{self.rate_plan_id}/rates", {"rates": [{
            "room_type_id": self.room_types[rt_code], "from_date": start.isoformat(),
            "to_date": (start + timedelta(days=nights - 1)).isoformat(), "amount": amount}]})

    def retype_room(self, number: str, rt_code: str) -> Answer:
        """A room becomes another type (refused while its type's sold nights need it)."""
        answer = self._send("PATCH", f"/rooms/{self.room_ids[number]}",
                             {"room_type_id": self.room_types[rt_code]})
        if answer.ok:
            self.rooms[number] = self.room_types[rt_code]
        return answer

    def wash_block(self, block: Block, rooms: int) -> Answer:
        return self._send("POST", f"/blocks/{block.id}/wash", {"rooms": rooms})

    def space_out_of_order(self, offset: int, hours: int) -> Answer:
        """The ballroom is closed for repairs for a few hours (refused over a booked event)."""
        day = self.business_date + timedelta(days=offset)
        return self._send("PATCH", f"/function-spaces/{self.space_id}", {"out_of_order": [{
            "start": f"{day.isoformat()}T08:00:00+00:00",
            "end": f"{day.isoformat()}T{8 + hours:02d}:00:00+00:00", "reason": "repairs"}]})

    def housekeeping(self, number: str, status: str) -> Answer:
        room = self.client.must(self.client.get(f"{self.base}/rooms/{self.room_ids[number]}"))
        answer = self._send("PUT", f"/housekeeping/{number}", {"hk_status": status})
        # repeating the current mark is documented as writing nothing
        answer.noop = room.get("hk_status") == status
        return answer

    # -- rooms and inventory ------------------------------------------------------------------
    def out_of_order(self, number: str, offset: int, nights: int, kind: str) -> Answer:
        start = self.business_date + timedelta(days=offset)
        answer = self._send("POST", "/maintenance", {
            "room_id": self.room_ids[number], "kind": kind, "from_date": start.isoformat(),
            "to_date": (start + timedelta(days=nights - 1)).isoformat(), "reason": "repairs"})
        if answer.ok:
            self.maintenance[answer.body["id"]] = number
        return answer

    def end_out_of_order(self, maintenance_id: str) -> Answer:
        answer = self._send("DELETE", f"/maintenance/{maintenance_id}")
        if answer.ok:
            self.maintenance.pop(maintenance_id, None)
        return answer

    def sell_limit(self, rt_code: str, offset: int, nights: int, limit: int | None) -> Answer:
        start = self.business_date + timedelta(days=offset)
        return self._send("PUT", "/inventory", {
            "room_type_id": self.room_types[rt_code], "from_date": start.isoformat(),
            "to_date": (start + timedelta(days=nights - 1)).isoformat(), "sell_limit": limit})

    def add_room(self, rt_code: str) -> Answer:
        number = f"9{len(self.rooms):02d}{self._seq % 10}"
        self._seq += 1
        answer = self._send("POST", "/rooms", {"room_number": number,
                                               "room_type_id": self.room_types[rt_code]})
        if answer.ok:
            self.rooms[number] = self.room_types[rt_code]
            self.room_ids[number] = answer.body["id"]
        return answer

    def delete_room(self, number: str) -> Answer:
        answer = self._send("DELETE", f"/rooms/{self.room_ids[number]}")
        if answer.ok:
            self.rooms.pop(number)
            self.room_ids.pop(number)
            for mid, room in list(self.maintenance.items()):
                if room == number:
                    self.maintenance.pop(mid)
        return answer

    # -- groups ------------------------------------------------------------------------------
    def open_block(self, rt_code: str, offset: int, nights: int, rooms: int) -> Answer:
        arrival = self.business_date + timedelta(days=offset)
        departure = arrival + timedelta(days=nights)
        code = self._next("GRP")
        answer = self._send("POST", "/blocks", {
            "code": code, "name": f"Group {code}", "arrival_date": arrival.isoformat(),
            "departure_date": departure.isoformat(), "rate_plan_id": self.rate_plan_id,
            "allocation": [{"room_type_id": self.room_types[rt_code],
                            "date": arrival.isoformat(),
                            "to_date": (departure - timedelta(days=1)).isoformat(),
                            "allotted": rooms}]})
        if answer.ok:
            body = answer.body
            self.blocks[body["id"]] = Block(body["id"], code, self.room_types[rt_code], arrival,
                                            departure, body["status"])
        return answer

    def block_move(self, block: Block, to: str) -> Answer:
        params = {"cancel_picked": "true"} if to == "cancel" else None
        answer = self._send("POST", f"/blocks/{block.id}/{to}", params=params)
        if answer.ok:
            block.status = answer.body.get("status", block.status)
            if to == "cancel":
                for stay in self.stays.values():
                    if stay.block_id == block.id and stay.status not in TERMINAL:
                        self.refresh(stay)
        return answer

    def pick_up(self, block: Block) -> Answer:
        answer = self._send("POST", f"/blocks/{block.id}/reservations", {
            "room_type_id": block.room_type_id, "arrival_date": block.arrival.isoformat(),
            "departure_date": block.departure.isoformat(),
            "guest": {"last_name": self._next("Delegate")}})
        if answer.ok:
            self._remember(answer.body["reservation"], block_id=block.id)
        return answer

    # -- corporate ---------------------------------------------------------------------------
    def route_to_company(self, stay: Stay, cap: str | None) -> Answer:
        """The desk bills a stay to the company (the whole folio, or up to a cap)."""
        answer = self._send("PUT", f"/reservations/{stay.id}/company-billing", {
            "company_profile_id": self.company_id,
            "company_payment_method_id": self.company_method_id, "cap": cap})
        if answer.ok:
            self.routed.add(stay.id)
        return answer

    def traveler_books(self, rt_code: str, offset: int, nights: int) -> Answer:
        """A company's traveler books the negotiated rate through the company's booking tool."""
        arrival = self.business_date + timedelta(days=offset)
        traveler = self.company_people["TRAVELER"]
        answer = self._send("POST", "/reservations", {
            "room_type_id": self.room_types[rt_code], "rate_plan_id": self.corporate_plan_id,
            "arrival_date": arrival.isoformat(),
            "departure_date": (arrival + timedelta(days=nights)).isoformat(),
            "guest_profile_id": traveler, "company_profile_id": self.company_id,
            "source": "CORPORATE"}, as_="traveler", holder=traveler)
        if answer.ok:
            self._remember(answer.body)
        return answer

    def company_method(self, step: str, n: int) -> Answer | None:
        """The company's ADMIN submits a card; the credit manager approves it POSTPAY,
        re-classifies it to BILL_TO_COMPANY, or removes it (refused while stays use it)."""
        path = f"/companies/{self.company_id}/payment-methods"
        if step == "submit":
            admin = self.company_people["ADMIN"]
            answer = self._send("POST", path, {
                "payment_method_id": company_card(self.company_id, "mastercard")},
                as_="traveler", holder=admin)
            if answer.ok:
                self.company_methods[answer.body["id"]] = answer.body.get("approval", "PENDING")
            return answer
        if not self.company_methods:
            return None
        method = sorted(self.company_methods)[n % len(self.company_methods)]
        if step == "delete":
            answer = self._send("DELETE", f"{path}/{method}")
            if answer.ok:
                self.company_methods.pop(method)
            return answer
        approval = "POSTPAY" if step == "postpay" else "BILL_TO_COMPANY"
        answer = self._send("POST", f"{path}/{method}/approve", {"approval": approval})
        if answer.ok:
            self.company_methods[method] = approval
        return answer

    def receivable(self) -> dict[str, Any]:
        return self.client.must(self.client.get(
            f"{self.base}/companies/{self.company_id}/receivable-account"))

    def company_pays(self, share: Decimal) -> Answer | None:
        """The company remits part of what it owes (a bank transfer)."""
        owed = Decimal(str(self.receivable()["open_balance"]))
        amount = (owed * share).quantize(Decimal("0.01"))
        if amount <= 0:
            return None
        answer = self._send("POST", f"/companies/{self.company_id}/receivable-account/payments",
                            {"amount": str(amount), "currency": "EUR",
                             "reference": self._next("WIRE-")})
        if answer.ok:
            self.company_paid += amount
        return answer

    # -- banquets -----------------------------------------------------------------------------
    def banquet(self, stay: Stay | None, offset: int, hour: int, hours: int) -> Answer:
        """Catering books the ballroom for a dinner, billed to a guest's folio when one hosts."""
        day = self.business_date + timedelta(days=offset)
        folio = self.folio(stay) if stay is not None else None
        body: dict[str, Any] = {
            "name": self._next("Dinner "), "space_id": self.space_id, "setup_style": "BANQUET",
            "start_at": f"{day.isoformat()}T{hour:02d}:00:00+00:00",
            "end_at": f"{day.isoformat()}T{min(hour + hours, 23):02d}:30:00+00:00",
            "attendees_forecast": 40}
        if folio is not None and folio.get("status") == "OPEN":
            body["folio_id"] = folio["id"]
        answer = self._send("POST", "/events", body)
        if answer.ok:
            self.events[answer.body["id"]] = answer.body["status"]
        return answer

    def banquet_move(self, event_id: str, to: str) -> Answer:
        answer = self._send("POST", f"/events/{event_id}/{to}")
        if answer.ok:
            self.events[event_id] = answer.body["status"]
        return answer

    def banquet_post(self, event_id: str, quantity: int) -> Answer:
        """The projector booked for the event, then the event's resources posted to its folio."""
        booked = self._send("POST", f"/events/{event_id}/resources",
                            {"item_id": self.item_id, "quantity": quantity})
        if not booked.ok:
            return booked
        return self._send("POST", f"/events/{event_id}/post")

    # -- policies ------------------------------------------------------------------------------
    def freeze_channel(self, on: bool) -> Answer | None:
        """A revenue manager stops the channel manager booking at this property (a deny rule
        for machine tokens on reservation writes), or lifts the freeze."""
        if on and self.policy_id is None:
            answer = self.client.post("/v1/admin/policy-sets", {
                "name": self._next("channel-freeze-"), "rules": [{
                    "id": "freeze", "effect": "deny", "scopes": ["hotel:pms:reservations:write"],
                    "client_kinds": ["machine"], "property_ids": [self.property_id]}]})
            if answer.ok:
                self.policy_id = answer.body["id"]
        elif not on and self.policy_id is not None:
            answer = self.client.delete(f"/v1/admin/policy-sets/{self.policy_id}")
            if answer.ok:
                self.policy_id = None
        else:
            return None
        self.mutations.append(answer)
        self.steps += 1
        return answer

    # -- the night audit ---------------------------------------------------------------------
    def night_audit(self, runner: Any = None) -> Answer:
        """Close the business date (ahead of the calendar: the simulated month runs faster
        than the clock, so the run names its reason, as a staff override does). `runner`
        closes it another way (the demo runs the audit in process, as `pms-cli end-of-day`),
        then the model reads the new business date."""
        if runner is not None:
            runner()
            self._after_audit()
            return Answer("POST", self.base + "/end-of-day", 200, {}, {})
        body: dict[str, Any] = {}
        answer = self._send("POST", "/end-of-day", body)
        if answer.status == 409 and answer.code and "calendar" in answer.code \
                or answer.status == 409 and answer.code == "business_date_not_over":
            answer = self._send("POST", "/end-of-day",
                                {"override_reason": "simulated month runs ahead of the clock"})
        if not answer.ok:
            return answer
        job = answer.body.get("job_id") or answer.body.get("id")
        import time

        deadline = time.monotonic() + 180
        status = None
        while time.monotonic() < deadline:
            got = self.client.get(f"/v1/jobs/{job}")
            status = got.body.get("status") if got.ok else None
            if status in ("SUCCEEDED", "FAILED"):
                break
            time.sleep(0.2)
        if status != "SUCCEEDED":
            from cli.hotelsim.client import Violation

            raise Violation(f"the night audit job {job} ended {status}: {got.body}")
        self._after_audit()
        return answer

    def _after_audit(self) -> None:
        prop = self.client.must(self.client.get(self.base))
        self.business_date = date.fromisoformat(prop["businessDate"])
        self.audits_run += 1
        for stay in self.stays.values():
            if stay.status in ("CONFIRMED", "CHECKED_IN"):
                self.refresh(stay)


def _local_today(tz: str) -> str:
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    return datetime.now(UTC).astimezone(ZoneInfo(tz)).date().isoformat()
