"""Corporate fields as SPEC spells them, through the HTTP API on SQLite and PostgreSQL: a
company payment method answers `approval` (PENDING, POSTPAY, BILL_TO_COMPANY, REJECTED), its
only lifecycle, in its responses, its list and its events."""

from __future__ import annotations

from tests.api.test_company_direct_bill import corp  # noqa: F401  (the fixture)
from tests.helpers import outbox_rows, owned_method


def test_a_company_payment_method_answers_approval(corp, ctx):  # noqa: F811
    url = f"{corp.base}/payment-methods"
    made = corp.api.post(url, {"payment_method_id": owned_method(corp.company)})
    assert made.status_code == 201, made.text
    assert made.json["approval"] == "PENDING" and "status" not in made.json
    approved = corp.api.post(f"{url}/{made.json['id']}/approve", {"approval": "POSTPAY"})
    assert approved.json["approval"] == "POSTPAY" and "status" not in approved.json
    [listed] = [m for m in corp.api.get(url).json["data"] if m["id"] == made.json["id"]]
    assert listed["approval"] == "POSTPAY" and "status" not in listed
    event = outbox_rows(ctx)[-1]
    assert event.type == "hotel:pms:company_payment_method:approved"
    assert event.data["approval"] == "POSTPAY" and "status" not in event.data
