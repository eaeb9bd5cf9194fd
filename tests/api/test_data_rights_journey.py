"""A guest's data rights end to end, as the guest acts with their own token: three past stays
(one invoiced), messages, feedback and a company binding; the guest exports everything (every
stored field of theirs is in it, nothing of the other guest), asks for a dry run of the
erasure, then erases. Afterwards no stored row outside the legal holds holds their name,
e-mail, phone or address (every table scanned, with the control that the scan saw them
before), the invoice is untouched and listed as held, and `profile:erased` reached the bus
(a real RabbitMQ exchange, through the outbox relay) without personal data."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest

from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.models import Folio, Invoice
from tests.conftest import need_server
from tests.factories import make_booking_hotel, make_checked_in, make_profile
from tests.helpers import assert_problem, rows_holding

_RUN = uuid.uuid4().hex[:8]  # the scan reads every table: this run's person is its own
ADA = {"first_name": f"Adalind{_RUN}", "last_name": f"Quokkaforth{_RUN}",
       "phone": f"+4477{int(_RUN, 16) % 10**7:07d}", "email": f"adalind.{_RUN}@example.com"}
STREET = f"{_RUN} Wombat Crescent"


@pytest.mark.rabbitmq
def test_a_guest_exports_then_erases_everything_of_theirs(api, ctx):
    from tests.workers.amqp import Bus, amqp_url, available
    from workers.publisher import AmqpEventPublisher
    from workers.relay import OutboxRelay

    hotel = make_booking_hotel(ctx, rooms=4)
    base = f"/v1/properties/{hotel.id}"
    ada = make_profile(ctx, hotel.id, address={"line1": STREET, "city": "Perth"}, **ADA)
    bob = make_profile(ctx, hotel.id, first_name="Robert", last_name="Sharerson",
                       email="bob.sharerson@example.com")
    guest = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(ada.id), sub=f"guest-{ada.id}")
    tomorrow = (hotel.today + timedelta(days=1)).isoformat()

    stays, folios = [], []
    for person in (ada, ada, ada, bob):
        stay = make_checked_in(ctx, hotel, guest_profile_id=str(person.id), guest=None,
                               departure_date=tomorrow)
        with read_scope(ctx):
            folio = Folio.get(Folio.reservation == stay.id)
        sent = api.post(f"{base}/reservations/{stay.id}/messages",
                        {"direction": "outgoing", "body": f"Dear {person.first_name}, welcome"})
        assert sent.status_code == 201, sent.text
        balance = assert_problem(api.post(f"{base}/reservations/{stay.id}/check-out"), 409,
                                 "folio_not_closable")["balance"]
        api.post(f"{base}/folios/{folio.id}/payments", {"amount": balance, "method": "CASH"})
        assert api.post(f"{base}/reservations/{stay.id}/check-out").status_code == 200
        stays.append(stay)
        folios.append(folio)
    assert api.post(f"{base}/folios/{folios[0].id}/invoice").status_code == 201
    said = api.post(f"{base}/feedback", {"reservation_id": str(stays[1].id), "rating": 5,
                                         "comment": f"{ADA['first_name']} will be back"},
                    token=guest)
    assert said.status_code in (201, 200), said.text
    company = api.post(f"{base}/profiles", {"kind": "COMPANY", "company_name": "Acme"}).json
    bound = api.post(f"{base}/companies/{company['id']}/users",
                     {"traveler_profile_id": str(ada.id), "role": "TRAVELER"})
    assert bound.status_code in (201, 202), bound.text

    # the export, asked by the guest: every stored field of theirs, nothing of Bob's
    doc = api.get(f"{base}/profiles/{ada.id}/personal-data", params={"format": "json"},
                  token=guest)
    assert doc.status_code == 200, doc.text
    data = doc.json["data"]
    profile = data["profile"][0]
    assert (profile["email"], profile["phone"], profile["address"]["line1"]) == (
        ADA["email"], ADA["phone"], STREET)
    assert sorted(r["id"] for r in data["reservations"]) == sorted(str(s.id) for s in stays[:3])
    assert len(data["messages"]) == 3 and len(data["feedback"]) == 1
    assert len(data["invoices"]) == 1 and len(data["company_bindings"]) == 1
    assert len(data["folios"]) == 3
    text = json.dumps(doc.json)
    assert "Sharerson" not in text and bob.email not in text and str(stays[3].id) not in text

    # the dry run, then the erasure, by the guest
    url = f"{base}/profiles/{ada.id}/erasure"
    with read_scope(ctx):
        invoice = Invoice.get(Invoice.folio_id == folios[0].id)
    document_before = json.dumps(invoice.document, sort_keys=True)
    dry = api.post(url, {"dry_run": True}, token=guest).json
    assert dry["blockers"] == [] and dry["erased"] is False
    assert [h["id"] for h in dry["held"]] == [str(invoice.id)]
    needles = [ADA["email"], ADA["last_name"], ADA["first_name"], ADA["phone"], STREET]
    before = rows_holding(ctx, needles)
    assert {"profile", "reservation_message", "feedback"} <= set(before), before  # the control
    done = api.post(url, {}, token=guest)
    assert done.status_code == 200, done.text
    assert done.json["erased"] is True
    assert rows_holding(ctx, needles) == {}  # the street too, in the journal's images
    with read_scope(ctx):
        assert json.dumps(Invoice.get_by_id(invoice.id).document,
                          sort_keys=True) == document_before
    assert [h["id"] for h in done.json["held"]] == [str(invoice.id)]
    # Bob's data is untouched
    assert api.get(f"{base}/profiles/{bob.id}").json["email"] == bob.email

    # the erasure event reached the bus, without personal data
    ok, why = available()
    need_server(ok, "RabbitMQ", why)
    bus = Bus(amqp_url())
    try:
        queue = bus.queue("hotel.pms.profile.erased")
        relay = OutboxRelay(AmqpEventPublisher(bus.url, bus.exchange), env_id=ctx.env_id,
                            retention=timedelta(days=7))
        while relay.run_once().published:
            pass
        got = [event for _props, event in bus.drain(queue)]
    finally:
        bus.close()
    assert [e["subject"] for e in got] == [str(ada.id)]
    published = json.dumps(got[0])
    for needle in needles:
        assert needle.lower() not in published.lower()
