"""A whole stay through the generated, typed client (run with .venv-clientgen's Python by
tests/api/test_openapi_client.py): search, profile, booking, edit, check-in, charge, payment,
check-out. Every answer must parse into the generated model of its schema (the attrs model of
openapi-python-client and the pydantic model of datamodel-code-generator alike). Then a
reservation whose status the client does not know (written into the database by the test) is
read: the typed client keeps the value as a string instead of failing.

argv: generated dir, base URL, token, env id, property id, room type id, rate plan id,
      today (YYYY-MM-DD), id of the reservation with the unknown status, that status.
Prints one line per step: `<operation> <status> <model>`.
"""

from __future__ import annotations

import datetime
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load  # noqa: E402

(generated, base_url, token, env_id, property_id, room_type_id, rate_plan_id, today,
 odd_id, odd_status) = sys.argv[1:11]
pkg, pyd, OPS = load(generated)
M = pkg.models
client = pkg.AuthenticatedClient(base_url=base_url, token=token,
                                 headers={"X-Platform-Env-Id": env_id},
                                 raise_on_unexpected_status=True)


def call(op: str, model: str, **kw: Any) -> Any:
    answer = OPS[op].sync_detailed(client=client, **kw)
    assert 200 <= answer.status_code < 300, (op, answer.status_code, answer.content[:800])
    parsed = answer.parsed
    assert isinstance(parsed, getattr(M, model)), (op, model, type(parsed), answer.content[:300])
    getattr(pyd, model).model_validate_json(answer.content)  # the pydantic model too
    print(op, int(answer.status_code), type(parsed).__name__)
    return parsed


arrival = datetime.date.fromisoformat(today)
departure = arrival + datetime.timedelta(days=2)
stay = {"arrival_date": arrival.isoformat(), "departure_date": departure.isoformat(),
        "adults": 2}

offers = call("search_availability", "AvailabilityOut", property_id=property_id,
              body=M.AvailabilityIn.from_dict(stay))
profile = call("create_profile", "ProfileOut", property_id=property_id,
               body=M.ProfileIn.from_dict({"first_name": "Ada", "last_name": "Lovelace",
                                           "email": f"ada.{env_id[:8]}@example.com"}))
booked = call("create_reservation", "ReservationOut", property_id=property_id,
              idempotency_key=f"book-{env_id}",
              body=M.ReservationIn.from_dict({**stay, "room_type_id": room_type_id,
                                              "rate_plan_id": rate_plan_id,
                                              "guest_profile_id": str(profile.id)}))
assert booked.status == M.ReservationStatus.CONFIRMED, booked.status
rid = booked.id
edited = call("update_reservation", "ReservationOut", property_id=property_id, id=rid,
              body=M.ReservationPatch.from_dict({"adults": 1}))
assert edited.adults == 1
call("create_transaction_code", "TransactionCodeOut", property_id=property_id,
     body=M.TransactionCodeIn.from_dict({"code": "FB", "name": "F&B", "category": "F&B"}))
checked_in = call("check_in_reservation", "ReservationOut", property_id=property_id, id=rid,
                  body=M.CheckInIn.from_dict({}))
assert checked_in.status == M.ReservationStatus.CHECKED_IN, checked_in.status
folio = call("get_reservation_folio", "FolioOut", property_id=property_id, id=rid)
folio = call("create_folio_charge", "FolioOut", property_id=property_id, id=folio.id,
             body=M.ChargeIn.from_dict({"transaction_code": "FB", "amount": "9.50"}))
due = Decimal(folio.balance_due)
assert due > 0, folio.to_dict()
call("create_folio_payment", "PaymentResultOut", property_id=property_id, id=folio.id,
     idempotency_key=f"pay-{env_id}",
     body=M.PaymentIn.from_dict({"amount": str(due), "method": "CASH"}))
settled = call("get_folio", "FolioOut", property_id=property_id, id=folio.id)
assert Decimal(settled.balance_due) == 0, settled.to_dict()
out = call("check_out_reservation", "ReservationOut", property_id=property_id, id=rid)
assert out.status == M.ReservationStatus.CHECKED_OUT, out.status
call("list_reservations", "ReservationPage", property_id=property_id)

# a value added to a closed set after this client was generated
odd = call("get_reservation", "ReservationOut", property_id=property_id, id=odd_id)
assert odd.status == odd_status and not isinstance(odd.status, M.ReservationStatus), odd.status
print("unknown-status", odd.status)
print("offers", len(offers.to_dict().get("offers", offers.to_dict())))
