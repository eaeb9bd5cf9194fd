"""A nullable column added to every tenant table changes nothing: on a fresh, migrated
database whose every table with an `env_id` got one more nullable column (by `ALTER TABLE`, as a
deploy adds one before the code that reads it), the write paths run through the API as before
(a profile, a booking with an Idempotency-Key and its replay, a check-in, a charge, a payment, a
check-out, the folio read) and the new column stays NULL in every row they wrote.

On PostgreSQL this is what makes the stored functions column-agnostic (migration 030): the ones
that returned or took a table's columns one by one now return or take its row, and the callers
name the model's columns; a function naming the table's columns would break or need replacing.
Same on SQLite (no stored functions there: the compiled statements name their columns).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import falcon.testing
import pytest

from pms.app import create_app
from pms.db.database import db as db_proxy
from pms.db.database import make_database
from pms.db.migrator import migrate
from pms.db.uow import read_scope
from pms.models import Folio
from pms.schemas.cashiering import TransactionCodeIn
from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
from pms.services.catalog import catalog
from tests import pg
from tests.conftest import Api
from tests.factories import make_booking_hotel, reservation_body

EXTRA = "h26_added"


def _tenant_tables(database: Any, postgres: bool) -> list[str]:
    if postgres:
        rows = database.execute_sql(
            "SELECT c.table_name FROM information_schema.columns c"
            " JOIN information_schema.tables t ON t.table_schema = c.table_schema"
            " AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'"
            " WHERE c.table_schema = current_schema() AND c.column_name = 'env_id'"
            " ORDER BY 1").fetchall()
        return [r[0] for r in rows]
    tables = [r[0] for r in database.execute_sql(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()]
    return [t for t in tables
            if any(col[1] == "env_id" for col in
                   database.execute_sql(f'PRAGMA table_info("{t}")').fetchall())]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def widened(request, tmp_path):
    """(database, tables): a fresh migrated database, every tenant table one column wider."""
    postgres = request.param == "postgres"
    throwaway = None
    if postgres:
        ok, why = pg.available()
        if not ok:
            pytest.skip(why)
        throwaway = pg.create_database()
        migrate(throwaway.owner_url, service_url=throwaway.app_url)
        owner = make_database(throwaway.owner_url)
        tables = _tenant_tables(owner, True)
        for table in tables:
            owner.execute_sql(f'ALTER TABLE "{table}" ADD COLUMN {EXTRA} text NULL')
        owner.close_all() if hasattr(owner, "close_all") else owner.close()
        database = make_database(throwaway.app_url, pool_size=4)
    else:
        url = f"sqlite:///{tmp_path / 'widened.db'}"
        migrate(url)
        database = make_database(url)
        tables = _tenant_tables(database, False)
        for table in tables:
            database.execute_sql(f'ALTER TABLE "{table}" ADD COLUMN {EXTRA} text NULL')
    db_proxy.initialize(database)
    try:
        yield database, tables
    finally:
        if hasattr(database, "close_all"):
            database.close_all()
        elif not database.is_closed():
            database.close()
        db_proxy.initialize(None)
        if throwaway is not None:
            throwaway.drop()


def test_a_column_added_to_every_tenant_table_changes_nothing(widened, base_settings, ctx,
                                                             clock):
    database, tables = widened
    assert {"reservation", "folio", "folio_charge", "folio_payment", "profile", "audit_entry",
            "outbox_event", "idempotency_record", "room", "room_stay", "inventory_day",
            "property"} <= set(tables)
    api = Api(falcon.testing.TestClient(create_app(base_settings, db=database, clock=clock)),
              base_settings, ctx.env_id)
    hotel = make_booking_hotel(ctx, rooms=2, amount="100.00")
    catalog.create_child(ctx, TRANSACTION_CODE, hotel.id, __import__("msgspec").convert(
        {"code": "FB", "name": "F&B", "category": "F&B"}, TransactionCodeIn))
    base = f"/v1/properties/{hotel.id}"

    # a profile, created then found again by its email
    body = {"kind": "GUEST", "first_name": "Ada", "last_name": "Added",
            "email": "ada.added@example.com"}
    made = api.post(f"{base}/profiles", body)
    assert made.status_code == 201, made.text
    again = api.post(f"{base}/profiles", body)
    assert again.status_code in (200, 201) and again.json["id"] == made.json["id"], again.text

    # a booking with an Idempotency-Key, and its replay
    booking = reservation_body(hotel, departure_date=(hotel.today + timedelta(days=2)).isoformat())
    headers = {"Idempotency-Key": "added-column-1"}
    booked = api.post(f"{base}/reservations", booking, headers=headers)
    assert booked.status_code == 201, booked.text
    replay = api.post(f"{base}/reservations", booking, headers=headers)
    assert replay.status_code == 201 and replay.json == booked.json
    stay = f"{base}/reservations/{booked.json['id']}"

    # check-in, a charge, a payment, the folio, check-out
    checked_in = api.post(f"{stay}/check-in", {})
    assert checked_in.status_code == 200, checked_in.text
    with read_scope(ctx):
        folio_id = Folio.get(Folio.reservation == booked.json["id"]).id
    charged = api.post(f"{base}/folios/{folio_id}/charges",
                       {"transaction_code": "FB", "amount": "12.50"})
    assert charged.status_code == 201, charged.text
    folio = api.get(f"{base}/folios/{folio_id}")
    assert folio.status_code == 200, folio.text
    due = folio.json["balance_due"]
    paid = api.post(f"{base}/folios/{folio_id}/payments", {"amount": "500.00", "method": "CASH"})
    assert paid.status_code == 201, paid.text
    out = api.post(f"{stay}/check-out")
    assert out.status_code in (200, 409), out.text
    if out.status_code == 409:  # overpaid: the credit back in cash, then out
        credit = api.get(f"{base}/folios/{folio_id}").json["balance_due"]
        refunded = api.post(f"{base}/folios/{folio_id}/refunds",
                            {"amount": credit.lstrip("-"), "method": "CASH"})
        assert refunded.status_code == 201, refunded.text
        out = api.post(f"{stay}/check-out")
    assert out.status_code == 200, out.text
    assert due != "0.00"

    # every row written left the added column alone
    with read_scope(ctx):
        filled = {t: database.execute_sql(
            f'SELECT count(*) FROM "{t}" WHERE {EXTRA} IS NOT NULL').fetchone()[0]
            for t in tables}
        written = {t: database.execute_sql(f'SELECT count(*) FROM "{t}"').fetchone()[0]
                   for t in ("folio_charge", "folio_payment", "audit_entry", "outbox_event",
                             "idempotency_record", "reservation")}
    assert {t: n for t, n in filled.items() if n} == {}
    assert all(written.values()), written
