"""a guest's pre-authorization uses only a payment method the payments service
reports as the guest's own; outbound payment calls carry the env and the holder."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.models import Folio, FolioPayment
from pms.platform import payments as pay
from tests.factories import make_booking_hotel, make_checked_in, make_profile
from tests.helpers import assert_problem


def _guest_stay(api, ctx):  # noqa: ANN001, ANN202
    hotel = make_booking_hotel(ctx, rooms=2)
    guest = make_profile(ctx, hotel.id)
    stay = make_checked_in(ctx, hotel, guest_profile_id=str(guest.id), guest=None,
                           departure_date=(hotel.today + timedelta(days=1)).isoformat())
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == stay.id)
    url = f"/v1/properties/{hotel.id}/folios/{folio.id}/pre-authorizations"
    token = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(guest.id))
    return guest, folio, url, token


def test_a_guest_pre_authorizes_only_with_its_own_payment_method(api, ctx):
    guest, folio, url, token = _guest_stay(api, ctx)
    someone_else = uuid.uuid4()
    for method in ("pm_card_visa", f"pm_holder_{someone_else.hex}", "pm_holder_nothex"):
        resp = api.post(url, {"amount": "50", "payment_method_id": method}, token=token)
        body = assert_problem(resp, 422, "payment_method_not_allowed")
        assert body["errors"][0]["field"] == "payment_method_id"
    with read_scope(ctx):
        assert FolioPayment.select().where(FolioPayment.folio == folio.id).count() == 0
    own = api.post(url, {"amount": "50", "payment_method_id": f"pm_holder_{guest.id.hex}"},
                   token=token)
    assert own.status_code in (200, 201), own.text
    # staff keep using any method the service accepts
    staff = api.post(url, {"amount": "20", "payment_method_id": "pm_card_visa"})
    assert staff.status_code in (200, 201), staff.text


def test_the_sandbox_declines_a_guests_intent_on_another_holders_method():
    sandbox = pay.EmbeddedPayments()
    holder, other = str(uuid.uuid4()), uuid.uuid4()
    env = str(uuid.uuid4())
    declined = sandbox.create_intent(amount=Decimal("5"), currency="EUR",
                                     payment_method_id=f"pm_holder_{other.hex}",
                                     idempotency_key="k1", env_id=env, holder_id=holder)
    assert declined.status == pay.DECLINED and declined.decline_code == pay.NOT_OWNED
    fine = sandbox.create_intent(amount=Decimal("5"), currency="EUR",
                                 payment_method_id=f"pm_holder_{uuid.UUID(holder).hex}",
                                 idempotency_key="k2", env_id=env, holder_id=holder)
    assert fine.ok
    assert sandbox.intents[fine.id]["metadata"] == {"env_id": env, "holder_id": holder}


class _Gateway:
    """Payments endpoints that record the headers each call carried."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str], dict[str, Any]]] = []
        self.owners = {"pm_mine": "6b7e2b5e-0000-4000-8000-000000000001"}
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _record(self, body: dict[str, Any]) -> None:
                gateway.seen.append((self.command, self.path, {
                    k: v for k, v in self.headers.items() if k.lower().startswith("x-platform")},
                    body))

            def do_GET(self) -> None:  # noqa: N802
                self._record({})
                method = self.path.rsplit("/", 1)[1]
                if method not in gateway.owners:
                    return self._send(404, {"title": "not found"})
                return self._send(200, {"id": method, "holder_id": gateway.owners[method],
                                        "card": {"brand": "visa", "last4": "4242",
                                                 "exp_month": 12, "exp_year": 2031}})

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/token":
                    return self._send(200, {"access_token": "t", "expires_in": 600})
                body = json.loads(raw or b"{}")
                self._record(body)
                return self._send(200, {"id": "pi_1", "status": "requires_confirmation",
                                        "amount": body.get("amount", "0"), "currency": "EUR"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_the_http_client_asks_the_owner_and_sends_env_and_holder():
    from pms.config import Settings

    gateway = _Gateway()
    try:
        client = pay.build(Settings(platform_url=gateway.url,
                                    platform_token_url=gateway.url + "/token",
                                    platform_client_id="pms", platform_client_secret="s"))
        env, holder = str(uuid.uuid4()), str(uuid.uuid4())
        assert client.payment_method("pm_mine", env_id=env) == pay.PaymentMethodInfo(
            holder_id=gateway.owners["pm_mine"], brand="visa", last4="4242", exp_month=12,
            exp_year=2031)
        assert client.payment_method("pm_unknown", env_id=env).holder_id is None
        client.create_intent(amount=Decimal("10"), currency="EUR", payment_method_id="pm_mine",
                             idempotency_key="i", env_id=env, holder_id=holder)
    finally:
        gateway.close()
    lookups = [s for s in gateway.seen if s[0] == "GET"]
    assert [path for _, path, _, _ in lookups] == ["/proxy/payments/v1/payment-methods/pm_mine",
                                                   "/proxy/payments/v1/payment-methods/pm_unknown"]
    assert all(headers.get("X-Platform-Env-Id") == env for _, _, headers, _ in lookups)
    (_, path, headers, body), = [s for s in gateway.seen if s[0] == "POST"]
    assert path == "/proxy/payments/v1/payment-intents"
    assert headers.get("X-Platform-Env-Id") == env and headers.get("X-Platform-Holder-Id") == holder
    assert body["metadata"]["env_id"] == env and body["metadata"]["holder_id"] == holder


def test_a_guests_pre_authorization_reaches_the_payments_service_with_env_and_holder(
        settings, database, clock, env_id, ctx):
    """Through the HTTP API: the intent the payments sandbox received names the env and the
    holder (an app built with a sandbox this test can look into)."""
    import falcon.testing

    from pms.app import create_app
    from pms.platform import build_platform
    from tests.conftest import Api

    platform = build_platform(settings)
    api = Api(falcon.testing.TestClient(create_app(settings, db=database, clock=clock,
                                                   platform=platform)), settings, env_id)
    guest, folio, url, token = _guest_stay(api, ctx)
    resp = api.post(url, {"amount": "30", "payment_method_id": f"pm_holder_{guest.id.hex}"},
                    token=token)
    assert resp.status_code in (200, 201), resp.text
    with read_scope(ctx):
        payment = FolioPayment.get(FolioPayment.folio == folio.id)
    assert payment.status == "AUTHORIZED"
    intent = platform.payments.intents[payment.external_id]
    assert intent["metadata"]["env_id"] == str(env_id)
    assert intent["metadata"]["holder_id"] == str(guest.id)


def _methods_url(hotel_id, profile_id) -> str:  # noqa: ANN001
    return f"/v1/properties/{hotel_id}/profiles/{profile_id}/payment-methods"


def test_a_stored_reference_is_one_a_payment_accepts_one_type_everywhere(api, ctx):
    """A reference the guest's profile may store is one its payments accept: a reference that
    payments refuse (`pm:card.visa-1`) is refused when it is added, not after (one type)."""
    guest, folio, url, token = _guest_stay(api, ctx)
    methods = _methods_url(folio.property_id, guest.id)
    for method in ("pm:card.visa-1", f"pm_holder_{guest.id.hex}.visa", "pm-holder"):
        stored = api.post(methods, {"payment_method_id": method}, token=token)
        paid = api.post(url, {"amount": "10", "payment_method_id": method}, token=token)
        assert stored.status_code == paid.status_code == 422, (method, stored.text)
        assert stored.json["errors"][0]["field"] == "payment_method_id"
    own = f"pm_holder_{guest.id.hex}_visa"
    assert api.post(methods, {"payment_method_id": own}, token=token).status_code == 201
    paid = api.post(url, {"amount": "10", "payment_method_id": own}, token=token)
    assert paid.status_code in (200, 201), paid.text


def test_a_reference_is_kept_only_when_the_payments_service_says_it_is_the_profiles(api, ctx):
    guest, folio, _, token = _guest_stay(api, ctx)
    methods = _methods_url(folio.property_id, guest.id)
    for method in ("pm_card_visa", f"pm_holder_{uuid.uuid4().hex}"):  # nobody's; another's
        for caller in (token, None):  # the guest itself, and staff for the guest
            body = assert_problem(api.post(methods, {"payment_method_id": method}, token=caller),
                                  422, "payment_method_not_allowed")
            assert body["errors"][0]["field"] == "payment_method_id"
    assert api.get(methods, token=token).json["data"] == []


def test_a_company_profile_is_refused_on_the_guest_route(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    company = make_profile(ctx, hotel.id, kind="COMPANY", company_name="Acme Travel")
    methods = _methods_url(hotel.id, company.id)
    assert_problem(api.post(methods, {"payment_method_id": f"pm_holder_{company.id.hex}"}),
                   422, "profile_is_company")
    assert api.get(methods).json["data"] == []


def test_a_guest_pays_with_its_stored_reference_without_a_second_ownership_lookup(
        kapi, ctx, platform):
    """The ownership lookup is made once, when the reference is stored: a guest paying with
    it is not asked about again by the PMS (the payments service still checks the intent)."""
    guest, folio, url, token = _guest_stay(kapi, ctx)
    payments = platform.payments
    asked: list[str] = []
    lookup = payments.payment_method

    def counted(payment_method_id, **kw):  # noqa: ANN001, ANN003, ANN202
        asked.append(payment_method_id)
        return lookup(payment_method_id, **kw)

    payments.payment_method = counted
    own = f"pm_holder_{guest.id.hex}_visa"
    stored = kapi.post(_methods_url(folio.property_id, guest.id), {"payment_method_id": own},
                       token=token)
    assert stored.status_code == 201 and asked == [own]
    asked.clear()
    paid = kapi.post(url, {"amount": "10", "payment_method_id": own}, token=token)
    assert paid.status_code in (200, 201), paid.text
    assert asked == [own]  # the payments service's own check of the intent, not the PMS's
    asked.clear()
    other = f"pm_holder_{guest.id.hex}_amex"  # not stored: the PMS asks first
    paid = kapi.post(url, {"amount": "5", "payment_method_id": other}, token=token)
    assert paid.status_code in (200, 201), paid.text
    assert asked == [other, other]
