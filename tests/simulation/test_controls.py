"""Each invariant can fire: a control per check breaks its rule behind the service's back (a
stored row changed with plain SQL, or a fault injected into what the API answered) and shows the
checker catches it, naming the rule. Without these, a check that can never fail would pass the
simulation for ever.

Every control starts from a hotel where every check passes, so the failure is the tampering's.
"""

from __future__ import annotations

import json
import uuid
from copy import deepcopy
from decimal import Decimal

import pytest

from cli.hotelsim.client import Answer, Client, Violation
from cli.hotelsim.hotel import Hotel
from tests.simulation.invariants import Checker

pytestmark = pytest.mark.slow


@pytest.fixture
def world(sim_stack):
    """A small hotel with a stay in house (charged, keyed), one booked ahead, a definite block
    with a pick-up, every check passing."""
    client = Client(sim_stack.base_url, sim_stack.settings, uuid.uuid4())
    hotel = Hotel.open(client, rooms=6, window=7)
    hotel.book("STD", 0, 2, "staff")
    hotel.book("STD", 1, 2, "channel")
    in_house = hotel.arriving()[0]
    assert hotel.check_in(in_house).ok
    assert hotel.charge(in_house, Decimal("23.50")).ok
    key = hotel.issue_key(in_house)
    assert key.ok, key.body
    hotel.open_block("DLX", 2, 2, 2)
    block = next(iter(hotel.blocks.values()))
    assert hotel.block_move(block, "definite").ok
    assert hotel.pick_up(block).ok
    checker = Checker(hotel, sim_stack)
    checker.check_all()
    yield hotel, checker, in_house, key.body["id"]
    checker.store.close()


def fires(check, rule: str) -> None:
    with pytest.raises(Violation, match=rf"\[{rule.replace('.', chr(92) + '.')}\]"):
        check()


def uid(checker: Checker, value: str):
    return uuid.UUID(value)


def test_stored_sold_off_by_one_fires_the_availability_check(world):
    hotel, checker, stay, _ = world
    checker.store.execute("UPDATE inventory_day SET sold = sold + 1 WHERE env_id = ? AND "
                          "room_type_id = ? AND date = ?", checker.store.env,
                          uuid.UUID(stay.room_type_id), stay.arrival.isoformat())
    fires(checker.check_availability, "availability.stored")


def test_a_search_that_disagrees_with_the_recount_fires_the_search_check(world):
    hotel, checker, stay, _ = world
    # the search reads the stored counter; the recount reads the reservations
    checker.store.execute("UPDATE inventory_day SET sold = sold + 1 WHERE env_id = ? AND "
                          "room_type_id = ? AND date = ?", checker.store.env,
                          uuid.UUID(stay.room_type_id), hotel.business_date.isoformat())
    fires(checker.check_search, "availability.search|availability.inventory_api")


def test_a_grid_that_miscounts_its_pickups_fires_the_block_check(world):
    hotel, checker, _, _ = world
    block = next(iter(hotel.blocks.values()))
    checker.store.execute("UPDATE room_block_night SET picked = picked + 1 WHERE env_id = ? "
                          "AND block_id = ?", checker.store.env, uuid.UUID(block.id))
    fires(checker.check_blocks, "blocks.picked")


def test_an_occupied_room_without_an_open_folio_fires_the_folio_check(world):
    hotel, checker, stay, _ = world
    checker.store.execute("UPDATE folio SET status = 'CLOSED' WHERE env_id = ? AND "
                          "reservation_id = ?", checker.store.env, uuid.UUID(stay.id))
    fires(checker.check_folios, "folios.occupied")


def test_a_cancelled_stay_left_with_an_empty_open_folio_fires_the_folio_check(world):
    hotel, checker, stay, _ = world
    ahead = next(s for s in hotel.live("CONFIRMED") if s.block_id is None)
    assert hotel.cancel(ahead).ok
    checker.check_folios()
    checker.store.execute("UPDATE folio SET reservation_id = ? WHERE env_id = ? AND "
                          "reservation_id = ?", uuid.UUID(ahead.id), checker.store.env,
                          uuid.UUID(stay.id))
    # the in-house stay lost its folio to the cancelled one: both halves of the rule fire
    fires(checker.check_folios, "folios.occupied|folios.closed_stay")


def test_a_folio_whose_totals_do_not_add_up_fires_the_balance_check(world, monkeypatch):
    hotel, checker, stay, _ = world
    real = Hotel.folio

    def skewed(self, s):  # the service's arithmetic off by a cent
        body = deepcopy(real(self, s))
        body["charges_total"] = str(Decimal(body["charges_total"]) + Decimal("0.01"))
        return body

    monkeypatch.setattr(Hotel, "folio", skewed)
    fires(checker.check_balances, "folios.balance")


def test_a_live_key_of_a_stay_that_left_fires_the_key_check(world):
    hotel, checker, stay, key_id = world
    assert hotel.check_out(stay).ok
    checker.check_keys()
    checker.store.execute("UPDATE digital_key SET status = 'ACTIVE' WHERE env_id = ? AND id = ?",
                          checker.store.env, uuid.UUID(key_id))
    fires(checker.check_keys, "keys.live")


def test_a_change_without_its_audit_row_fires_the_journal_check(world):
    hotel, checker, stay, _ = world
    answer = hotel.charge(stay, Decimal("4.00"))
    assert answer.ok
    checker.store.execute("UPDATE audit_entry SET request_id = 'gone' WHERE env_id = ? AND "
                          "request_id = ?", checker.store.env, answer.headers["X-Request-Id"])
    fires(checker.check_journal, "journal.committed")


def test_a_refusal_that_wrote_an_event_fires_the_journal_check(world):
    hotel, checker, stay, _ = world
    committed = hotel.charge(stay, Decimal("4.00"))
    checker.check_journal()
    # the same request id, reported as refused: its outbox row is a change nothing answered for
    hotel.mutations.append(Answer("POST", committed.path, 409, {"code": "conflict"},
                                  committed.headers))
    fires(checker.check_journal, "journal.refused")


def test_a_version_gap_fires_the_journal_check(world):
    hotel, checker, stay, _ = world
    row = checker.store.query("SELECT id FROM outbox_event WHERE env_id = ? AND subject = ? "
                              "ORDER BY aggregate_version DESC LIMIT 1", checker.store.env,
                              stay.id)[0][0]
    checker.store.execute("UPDATE outbox_event SET aggregate_version = aggregate_version + 5 "
                          "WHERE env_id = ? AND id = ?", checker.store.env, row)
    fires(lambda: checker.check_all(full=True), "journal.versions")


def test_an_event_whose_data_is_not_the_aggregate_fires_the_journal_check(world):
    hotel, checker, stay, _ = world
    row, data = checker.store.query(
        "SELECT id, data FROM outbox_event WHERE env_id = ? AND subject = ? ORDER BY "
        "aggregate_version DESC LIMIT 1", checker.store.env, stay.id)[0]
    data = data if isinstance(data, dict) else json.loads(data)
    data["status"] = "CANCELLED"
    checker.store.execute("UPDATE outbox_event SET data = ? WHERE env_id = ? AND id = ?",
                          json.dumps(data), checker.store.env, row)
    fires(checker.check_event_data, "journal.data")


def test_a_5xx_or_a_refusal_without_a_problem_fails_the_answer_rule(world):
    hotel, checker, _, _ = world
    client = hotel.client
    with pytest.raises(Violation, match="answered 500"):
        client.check_answer(Answer("GET", hotel.base, 500, {}, {}))
    with pytest.raises(Violation, match="not problem\\+json"):
        client.check_answer(Answer("GET", hotel.base, 409, {"code": "x"},
                                   {"Content-Type": "application/json"}))
    with pytest.raises(Violation, match="does not document"):
        client.check_answer(Answer("GET", hotel.base, 402, {"code": "payment_required"},
                                   {"Content-Type": "application/problem+json"}))


def test_a_channel_told_a_stale_count_fires_the_ari_check(world, sim_stack):
    if sim_stack.bus is None:
        pytest.skip("ARI reaches a bus on the broker-backed stack (PostgreSQL + RabbitMQ)")
    hotel, checker, stay, _ = world
    checker.check_ari()
    assert checker.checks["ari.projection"] > 0
    last = max((e for e in checker.ari_events if e["subject"] == stay.room_type_id),
               key=lambda e: e["aggregateversion"])
    told = deepcopy(last)
    told["aggregateversion"] += 1
    for night in told["data"]["nights"]:
        night["sellable"] += 1
    checker.ari_events.append(told)
    fires(checker.check_ari, "ari.projection")


def test_a_receivable_that_moved_by_itself_fires_the_company_check(world):
    hotel, checker, _, _ = world
    checker.check_company()
    checker.store.execute("UPDATE company_receivable_account SET open_balance = open_balance + 1"
                          " WHERE env_id = ? AND company_profile_id = ?", checker.store.env,
                          uuid.UUID(hotel.company_id))
    fires(checker.check_company, "company.balance")


def test_a_key_that_outlives_its_stay_fires_the_key_window_check(world):
    hotel, checker, stay, key_id = world
    checker.check_keys()
    later = (stay.departure + __import__("datetime").timedelta(days=5)).isoformat()
    checker.store.execute("UPDATE digital_key SET valid_until = ? WHERE env_id = ? AND id = ?",
                          f"{later} 11:00:00+00:00", checker.store.env, uuid.UUID(key_id))
    fires(checker.check_keys, "keys.window")


def test_a_credit_note_lost_or_a_document_edited_fires_the_document_checks(world):
    hotel, checker, stay, _ = world
    assert hotel.check_out(stay, settle=True).ok
    assert hotel.invoice(stay).status == 201
    assert hotel.revert(stay).ok  # the invoice is cancelled by its credit note
    checker.check_all(full=True)  # the control: every document check passes
    invoice = checker.q("SELECT id, document FROM invoice WHERE env_id = ? AND "
                        "kind = 'INVOICE'", checker.store.env)[0]
    document = invoice[1] if isinstance(invoice[1], dict) else json.loads(invoice[1])
    checker.store.execute("UPDATE invoice SET document = ? WHERE env_id = ? AND id = ?",
                          json.dumps({**document, "charges_total": "0.01"}), checker.store.env,
                          invoice[0])
    checker.full = True
    fires(checker.check_documents, "documents.chain")
    checker.store.execute("DELETE FROM invoice WHERE env_id = ? AND kind = 'CREDIT_NOTE'",
                          checker.store.env)
    fires(checker.check_documents, "documents.in_force")
