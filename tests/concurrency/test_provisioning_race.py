"""Admin provisionings of several companies at once with the same new e-mail, over real HTTP
in parallel (gunicorn, 4 workers) on PostgreSQL: the traveler is created once (the profile
service's insert-or-find); every other request folds onto it (200, the same traveler bound as
its company's ADMIN) or answers 409 profile_conflict, never a 500."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from pms.db.uow import read_scope
from pms.models import OutboxEvent, Profile
from tests.concurrency.conftest import fire
from tests.concurrency.test_company_races import _admins, _company
from tests.factories import make_booking_hotel
from tests.helpers import random_ref

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_parallel_provisionings_of_companies_with_one_new_email_fold(pms_server, pg_db, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    firms = [_company(ctx, hotel) for _ in range(6)]
    headers = pms_server.headers(ctx.env_id)
    email = f"{random_ref('same')}@acme.example"

    def send(i: int, session: Any) -> tuple[int, Any]:
        url = (f"{pms_server.base_url}/v1/properties/{hotel.id}/companies/{firms[i].id}"
               "/admin-provisioning")
        resp = session.put(url, json={"email": email, "first_name": "A", "last_name": "B"},
                           headers=headers, timeout=60)
        return resp.status_code, resp.json().get("code") or resp.json()["admin_profile_ids"]

    results = fire(len(firms), send)
    statuses = Counter(status for status, _ in results)
    assert set(statuses) <= {200, 409} and statuses[200] >= 1, (results, pms_server.log_tail())
    assert {code for status, code in results if status == 409} <= {"profile_conflict"}
    with read_scope(ctx):
        [traveler] = Profile.select().where(Profile.email_normalized == email)
        assert OutboxEvent.select().where(OutboxEvent.type == "hotel:pms:profile:created",
                                          OutboxEvent.subject == str(traveler.id)).count() == 1
    for firm, (status, body) in zip(firms, results, strict=True):
        admins = [a.traveler_profile_id for a in _admins(ctx, firm.id)]
        if status == 200:
            assert body == [str(traveler.id)] and admins == [traveler.id]
        else:
            assert admins == []
