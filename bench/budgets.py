"""The round trips each front-desk use case may send to PostgreSQL, each named and explained once.

A budget is what a use case costs on the wire today, counted (a counting psycopg2 connection, no
timings), and what each of its round trips carries. `tests/budgets/` pins every budget here: a
change that adds a round trip fails there, in one place, and either removes it or moves the
number here with its reason. Behaviour tests never count round trips. Where a hand-written floor
exists (`bench.floor_app`, `bench.floor_stay`), `floor` is its count and `why` says what the service sends beyond it;
`make bench` prints the measured counts beside these.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    name: str
    round_trips: int
    why: str
    floor: int | None = None  # the hand-written floor's round trips, where there is one
    commits: int = 1  # COMMITs sent: a read outside a transaction sends none


BOOKING = Budget(
    "booking", 3, floor=3,
    why="the references with rates and restrictions (1); the reservation with its nights locked, "
        "recounted and sold in one statement (1); audit + outbox + COMMIT (1)")
BOOKING_COLD_NIGHT = Budget(
    "booking of a night with no calendar row", BOOKING.round_trips + 1,
    why="as a booking, plus one: the missing calendar rows (beyond the horizon a room type is "
        "created with) are made and taken in one more round trip, not the slow path's five")
BOOKING_WITH_KEY = Budget(
    "booking with an Idempotency-Key, through the HTTP API", 3, floor=3,
    why="the key's claim rides the references' round trip, the gate's policy-version check the "
        "transaction's first message; the idempotency record goes with audit + outbox + COMMIT")
PROFILE_CREATE_WITH_KEY = Budget(
    "profile create with an Idempotency-Key, through the HTTP API", 3, floor=2,
    why="the claim with the references (1); the profile's INSERT (1); audit + outbox + record "
        "+ COMMIT (1). The floor sends the INSERT with the journal rows; the service waits for "
        "its answer (INSERT ... ON CONFLICT DO NOTHING RETURNING id): when a parallel request "
        "took the email first, nothing is written and the answer is that profile")
GET_PROPERTY = Budget(
    "GET of a property, through the HTTP API", 1, floor=1, commits=0,
    why="the gate's check of the cached policy version rides the read's own statement")
CHARGE = Budget(
    "folio charge", 2, floor=2,
    why="the locks and the folio's state in one read, with whether the stay is billed to a "
        "company (1); the lines + ledger posting + audit + the folio's new version + outbox "
        "with the COMMIT (1). With a ledger, one more after the COMMIT, the floor's too: the "
        "posting marked POSTED")
CARD_PAYMENT = Budget(
    "card payment", 4, commits=2, floor=4,
    why="the PENDING payment row in a transaction of its own (2), the payments service called "
        "outside any transaction, then the outcome: the payment's row, the stay's and the "
        "folio's locks and the folio's state, with the property's fiscal-journal head locked "
        "and read for a capture (1: the entry chains the head's hash; the floor keeps no "
        "journal), the payment's UPDATE + journal entry + head + ledger posting + audit + the "
        "folio's new version + outbox with the COMMIT (1). With a ledger, one more after the "
        "COMMIT, the floor's too: the posting marked POSTED")
CHECK_IN = Budget(
    "check-in with the room picked by the rule", 2, floor=2,
    why="the reservation with the business date, and the room picked and locked by "
        "pms_pick_room in the same statement (1: pms.services.frontdesk.stay_reads; the pick "
        "gated by the stay's own checks, so a stay refused locks no room); the holds released, "
        "the room occupied and held, the folio + the reservation's UPDATE with its new "
        "version + audit + outbox with the COMMIT (1). As the floor, the hold is not waited "
        "for: the room was checked under its lock, and an overlap all the same breaks the "
        "exclusion constraint, which the unit of work answers as 409 with nothing written")
CHECK_OUT = Budget(
    "check-out", 2, floor=2,
    why="the reservation with the business date, its room and its folios, locked in that "
        "order and the guest folio read, then the stay's live digital keys locked and "
        "counted (pms_lock_live_keys), with the departure rule's setting (the env's and the "
        "property's invoicing module): one statement (1: pms.services.frontdesk.stay_reads; "
        "the count and the setting read ahead for the check-out hooks); the room-night lines "
        "+ posting + closing + room + holds + the reservation's UPDATE + audit + outbox with "
        "the COMMIT (1). A stay not billed to a company reads no routing "
        "(`reservation.company_billed`). A stay with live keys sends one more: the keys' "
        "hook reads the rows it revokes (the floor's path has no keys)")

ALL = (BOOKING, BOOKING_COLD_NIGHT, BOOKING_WITH_KEY, PROFILE_CREATE_WITH_KEY, GET_PROPERTY,
       CHARGE, CARD_PAYMENT, CHECK_IN, CHECK_OUT)


def explain(budget: Budget, log: list[str] | None) -> str:
    """The failure message of a budget test: the budget, its reason and what was sent."""
    sent = "\n---\n".join(log or [])
    return f"{budget.name}: budget {budget.round_trips} round trips ({budget.why})\nsent:\n{sent}"
