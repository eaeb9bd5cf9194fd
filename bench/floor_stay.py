"""The floors of the rest of a stay: check-in, the folio charge, the card payment and
check-out of bench/scenarios/frontdesk.py, written by hand in psycopg2 behind the same bare
Falcon app as bench/floor_app.py (same schema, same service role with row-level security, same
gunicorn settings), doing the same work as the service: the same rows (lines, payment, ledger
posting, audit and outbox rows of the same types and versions, the folio's and the stay's new
versions), the same answer, field for field.

`POST .../reservations/{id}/check-in` with `{}` (`CheckIn`), 2 round trips:
1. `BEGIN; SET LOCAL ...` and ONE statement: the stay locked with the business date, and the
   room picked and locked by the service's rule (pms_pick_room's: the VACANT rooms of the type
   not marked out of order, clean first, then by number, the first not held by another stay
   nor under maintenance on the nights, FOR UPDATE SKIP LOCKED);
2. the stay's holds released, the room OCCUPIED and held, the guest folio opened (version 0),
   the stay CHECKED_IN at its next version, its audit row (with `before`) and outbox row
   (`hotel:pms:reservation:checked_in`), and COMMIT (a hold overlapping another stay's fails
   on the exclusion constraint: all rolled back, 409).

`POST .../folios/{folio_id}/charges` (`Charge`), 2 round trips and the ledger's mark:
1. `BEGIN; SET LOCAL ...` and ONE read of the folio locked with its stay (FOR UPDATE), the
   business date, the charge's transaction code, the property's room code (for the projected
   room nights of the answer), the folio's lines, its payments and the stay's posted nights;
2. the charge line and its tax lines (the code's inclusive percentages), the PENDING ledger
   posting, the audit row, the folio's new version and the outbox row
   (`hotel:pms:folio:charge_posted`), and COMMIT;
then, after the commit, the posting sent to the ledger (`EmbeddedLedger`, standing for the
ledger service) and marked POSTED in one implicit transaction, as the service does.

`POST .../folios/{folio_id}/payments` (`Payment`), a CARD payment: 4 round trips and the
ledger's mark:
1. as the charge's read; 2. the PENDING payment, audit (`folio.payment_initiated`), the
folio's version and outbox, COMMIT; the payments service (`EmbeddedPayments`, the sandbox
standing for the payment provider) called with no transaction open; 3. `BEGIN; SET LOCAL ...`,
the payment row locked, and the folio's read again (other changes may have come in while no
lock was held); 4. the outcome (CAPTURED, or FAILED and 402), the ledger posting of the
captured money, audit (`folio.payment_captured` / `payment_failed`), the folio's version and
outbox, COMMIT; then the posting's POSTED mark.

`POST .../reservations/{id}/check-out` (`CheckOut`), 2 round trips:
1. `BEGIN; SET LOCAL ...` and ONE statement: the stay, its room and its OPEN guest folio locked
   (the check-in's order), the business date, the folio's totals and the stay's posted nights,
   the room code, and the stay's live digital keys locked and counted;
2. the nights due and not posted (with their taxes) and their PENDING posting (the service
   sends it later), the folio CLOSED (its balance zero, else 409 and nothing written), the room
   VACANT and DIRTY, the holds released, the stay CHECKED_OUT at its next version, audit and
   outbox (`hotel:pms:reservation:checked_out`), and COMMIT.

What these floors leave out (none of it is on the bench's request shape): the token check (the
tenant is read from X-Platform-Env-Id), kiosk and guest (holder) sessions and the guest's
own-method check, block and master folios and routing, stays billed to a company, packages,
exclusive and per-night tax rules, quantity, pre-authorizations, cash, transfer and voucher
payments, refunds in the totals, the payment's entry in the property's fiscal journal
(the service chains it, with the journal head locked, in the outcome's transaction),
Idempotency-Key (the front desk's bench sends none); at
check-in a given or assigned room and `dirty_room_reason` (a dirty pick is 409
room_not_ready); at check-out an early departure and a stay with live digital keys (their
revocation, its lock commands and audit rows). Those a floor refuses (501 not_in_the_floor)
rather than get wrong.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import falcon
import msgspec
import psycopg2
import psycopg2.errors

from bench.floor_app import SETTINGS, Refused, partition_of

CENT = Decimal("0.01")
ACTOR = ("floor", "staff")  # actor_sub, actor_kind of the floors' audit rows
CATEGORY_ACCOUNTS = {"room": "room_revenue", "tax": "tax_payable", "F&B": "fnb_revenue",
                     "mini bar": "fnb_revenue", "other": "other_revenue"}


def money(value: Any) -> Decimal:
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


def stamp(value: Any) -> datetime:
    """A timestamp as the service shows it (UTC; a JSON text of PostgreSQL's parsed)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.astimezone(UTC)


def inclusive_split(gross: Decimal, rules: list[dict[str, Any]]) -> tuple[Decimal, list[tuple]]:
    """pms.domain.tax.split_taxes for inclusive percentages (the bench's codes): the net and
    the (code, name, amount) tax lines, the last rule taking the rounding remainder."""
    pct = [r for r in rules if r.get("inclusive") and r.get("kind") == "percentage"]
    if not pct:
        return gross, []
    total = sum((Decimal(str(r["rate"])) for r in pct), Decimal(0))
    net = money(gross * 100 / (100 + total))
    taxes, taken = [], Decimal(0)
    for i, rule in enumerate(pct):
        tax = (gross - net - taken) if i == len(pct) - 1 else money(net * Decimal(str(rule["rate"])) / 100)
        taken += tax
        if tax:
            taxes.append((rule["code"], rule.get("name") or rule["code"], tax))
    return net, taxes


def posting_lines(amounts: dict[str, Decimal], receivable: str = "guest_ledger") -> list[dict]:
    """pms.services.cashiering.ledger_postings.revenue_lines, for positive amounts: each
    revenue account credited, the receivable debited with the total."""
    lines = [{"account": a, "debit": "0", "credit": str(v)} for a, v in amounts.items() if v]
    total = sum(amounts.values(), Decimal(0))
    return [*lines, {"account": receivable, "debit": str(total), "credit": "0"}]


def change_sql(action_of: str = "%(action)s") -> str:
    """The audit row and the outbox row of a change of an aggregate, at its new version."""
    return f"""
INSERT INTO audit_entry (id, created_at, updated_at, env_id, action, target_type, target_id,
  property_id, actor_sub, actor_kind, request_id, before, after)
VALUES (%(audit_id)s, now(), now(), %(env)s, %(aggregate)s || '.' || {action_of}, %(target_type)s,
  %(subject)s, %(prop)s, '{ACTOR[0]}', '{ACTOR[1]}', %(request_id)s, %(before)s::jsonb,
  %(doc)s::jsonb);
INSERT INTO outbox_event (id, created_at, updated_at, env_id, type, source, subject,
  aggregate_type, aggregate_version, property_id, idempotency_key, time, data, request_id,
  attempts, next_attempt_at, partition, dispatch_attempts)
VALUES (%(event_id)s, now(), now(), %(env)s, 'hotel:pms:' || %(aggregate)s || ':' || {action_of},
  'hotel-pms', %(subject)s, %(aggregate)s, %(version)s, %(prop)s,
  'hotel:pms:' || %(aggregate)s || ':' || {action_of} || ':' || %(subject)s || ':' || %(version)s,
  now(), %(doc)s::jsonb, %(request_id)s, 0, now(), %(partition)s, 0);
"""


def journal(aggregate: str, target_type: str, subject: str, prop: str, action: str,
            version: int, doc: str, before: str | None = None) -> dict[str, Any]:
    """The parameters of `change_sql`."""
    return {"audit_id": str(uuid.uuid4()), "event_id": str(uuid.uuid4()),
            "aggregate": aggregate, "target_type": target_type, "subject": subject,
            "prop": prop, "action": action, "version": version, "doc": doc, "before": before,
            "request_id": uuid.uuid4().hex, "partition": partition_of(subject)}


# -- the folio's state, in one read (as pms_folio_state reads it) ------------------------------

FOLIO_COLUMNS = """
SELECT f.id, f.version, f.status, f.reservation_id, f.property_id, f.room_number, f.folio_type,
  f.currency, f.closed_at, f.created_at, f.block_id,
  COALESCE(p.business_date, (now() AT TIME ZONE p.timezone)::date),
  r.status, r.arrival_date, r.departure_date, r.nightly_prices, r.confirmation_number,
  (SELECT json_build_array(t.code, t.tax_rules) FROM transaction_code t
    WHERE t.env_id = %(env)s AND t.property_id = f.property_id AND t.category = 'room'
      AND t.active ORDER BY t.code = 'ROOM' DESC, t.code LIMIT 1),
  (SELECT json_agg(json_build_array(c.id, c.category, c.description, c.amount::text,
      c.currency, c.quantity, c.business_date, c.night, c.kind, c.created_at,
      c.transaction_code, c.parent_id, c.reversal_of, c.moved_from_folio, c.reason)
      ORDER BY c.created_at, c.id)
    FROM folio_charge c WHERE c.env_id = %(env)s AND c.folio_id = f.id),
  (SELECT json_agg(json_build_array(m.id, m.amount::text, m.currency, m.method,
      m.payment_method_id, m.status, m.created_at, m.kind, m.decline_code,
      m.pre_authorization_id, m.voucher_code) ORDER BY m.created_at, m.id)
    FROM folio_payment m WHERE m.env_id = %(env)s AND m.folio_id = f.id),
  (SELECT array_agg(n.night) FROM folio_charge n
    WHERE n.env_id = %(env)s AND n.reservation_id = f.reservation_id AND n.kind = 'room'
      AND n.night IS NOT NULL){extra}
FROM folio f
JOIN property p ON p.env_id = f.env_id AND p.id = f.property_id
JOIN reservation r ON r.env_id = f.env_id AND r.id = f.reservation_id
WHERE f.env_id = %(env)s AND f.id = %(folio)s AND f.property_id = %(prop)s
FOR UPDATE OF f, r"""

CHARGE_REFS_SQL = "BEGIN; " + SETTINGS + ";" + FOLIO_COLUMNS.format(extra=""",
  (SELECT json_build_array(t.category, t.tax_rules, t.ledger_account) FROM transaction_code t
    WHERE t.env_id = %(env)s AND t.property_id = f.property_id AND t.code = %(code)s
      AND t.active)""")

FOLIO_VERSION_SQL = """
UPDATE folio SET version = %(version)s, updated_at = now()
 WHERE env_id = %(env)s AND id = %(folio)s;"""

CHARGE_LINE_SQL = """
INSERT INTO folio_charge (id, created_at, updated_at, env_id, folio_id, reservation_id,
  category, description, amount, currency, quantity, business_date, night, kind,
  transaction_code, property_id, parent_id)
VALUES (%(id{i})s, %(at{i})s, %(at{i})s, %(env)s, %(folio)s, %(stay)s, %(category{i})s,
  %(description{i})s, %(amount{i})s, %(currency)s, 1, %(today)s, %(night{i})s, %(kind{i})s,
  %(code{i})s, %(prop)s, %(parent{i})s);"""

POSTING_SQL = """
INSERT INTO ledger_posting (id, created_at, updated_at, env_id, property_id, idempotency_key,
  currency, lines, memo, status, attempts)
VALUES (%(posting)s, now(), now(), %(env)s, %(prop)s, %(posting_key)s, %(currency)s,
  %(posting_lines)s::jsonb, %(memo)s, 'PENDING', 0);"""

# after the commit: the posting the ledger booked, marked POSTED (one implicit transaction)
POSTED_SQL = SETTINGS + """;
UPDATE ledger_posting SET status = 'POSTED', external_id = %(external_id)s, posted_at = now(),
  updated_at = now(), attempts = attempts + 1
 WHERE env_id = %(env)s AND id = %(posting)s AND status = 'PENDING'"""


class FolioState:
    """The folio, its stay and its lines as one read returned them; renders the service's
    FolioOut."""

    def __init__(self, row: tuple) -> None:
        (self.id, self.version, self.status, self.stay_id, self.property_id, self.room_number,
         self.folio_type, self.currency, self.closed_at, self.created_at, self.block_id,
         self.today, self.stay_status, self.arrival, self.departure, self.nightly,
         self.confirmation, room_code, charges, payments, posted) = row[:21]
        self.extra = row[21:]
        self.id, self.stay_id, self.property_id = str(self.id), str(self.stay_id), str(self.property_id)
        self.room_code = room_code  # [code, rules] or None
        self.charges = [self._charge(c) for c in charges or []]
        self.payments = [self._payment(m) for m in payments or []]
        self.posted = set(posted or [])

    @staticmethod
    def _charge(c: list) -> dict[str, Any]:
        return {"id": c[0], "category": c[1], "description": c[2], "amount": str(money(c[3])),
                "currency": c[4], "quantity": c[5], "business_date": c[6], "night": c[7],
                "kind": c[8], "created_at": stamp(c[9]), "transaction_code": c[10],
                "parent_id": c[11], "reversal_of": c[12], "moved_from_folio": c[13],
                "reason": c[14]}

    @staticmethod
    def _payment(m: list) -> dict[str, Any]:
        return {"id": m[0], "amount": str(money(m[1])), "currency": m[2], "method": m[3],
                "payment_method_id": m[4], "status": m[5], "created_at": stamp(m[6]),
                "kind": m[7], "decline_code": m[8], "pre_authorization_id": m[9],
                "voucher_code": m[10]}

    def night_rows(self, until: date, business_date: date | None = None,
                   projected: bool = True) -> list[dict[str, Any]]:
        """The room-night lines (and their taxes) of the nights up to `until` not posted."""
        prices = {date.fromisoformat(n["date"]): Decimal(n["amount"]) for n in self.nightly or []}
        code, rules = self.room_code[:2] if self.room_code else (None, [])
        rows: list[dict[str, Any]] = []
        night = self.arrival
        while night < self.departure and night <= until:
            if night not in self.posted:
                net, taxes = inclusive_split(money(prices.get(night, 0)), rules)
                main = {"category": "room", "description":
                        f"Room {self.confirmation} night {night.isoformat()}",
                        "amount": net, "night": night, "kind": "room", "transaction_code": code}
                rows.append(main)
                rows.extend({"category": "tax", "description": name, "amount": amount,
                             "night": None, "kind": "tax", "transaction_code": tax_code,
                             "parent": main} for tax_code, name, amount in taxes)
            night += timedelta(days=1)
        return rows

    def last_night_due(self) -> date:
        end = max(min(self.today, self.departure), self.arrival + timedelta(days=1))
        return end - timedelta(days=1)

    def document(self) -> dict[str, Any]:
        charges_total = sum((Decimal(c["amount"]) for c in self.charges), Decimal(0))
        payments_total = sum((Decimal(p["amount"]) for p in self.payments
                              if p["status"] == "CAPTURED" and p["kind"] == "PAYMENT"), Decimal(0))
        projected = []
        if (self.folio_type == "GUEST" and self.status == "OPEN"
                and self.stay_status == "CHECKED_IN"):
            projected = [{"category": r["category"], "description": r["description"],
                          "amount": str(r["amount"]), "currency": self.currency, "quantity": 1,
                          "night": r["night"], "kind": r["kind"],
                          "transaction_code": r["transaction_code"], "projected": True}
                         for r in self.night_rows(self.last_night_due())]
        projected_total = sum((Decimal(r["amount"]) for r in projected), Decimal(0))
        posted = charges_total - payments_total
        return {"id": self.id, "reservation_id": self.stay_id, "property_id": self.property_id,
                "room_number": self.room_number, "status": self.status,
                "folio_type": self.folio_type, "currency": self.currency,
                "charges_total": str(money(charges_total)),
                "payments_total": str(money(payments_total)),
                "posted_balance": str(money(posted)), "charges": self.charges,
                "payments": self.payments,
                "closed_at": stamp(self.closed_at) if self.closed_at else None,
                "created_at": stamp(self.created_at), "block_id": self.block_id,
                "projected_charges": projected, "projected_total": str(money(projected_total)),
                "balance_due": str(money(posted + projected_total))}


class ChargeIn(msgspec.Struct):
    transaction_code: str
    amount: Decimal
    description: str | None = None


class PaymentIn(msgspec.Struct):
    amount: Decimal
    method: str
    payment_method_id: str | None = None


class _Stay:
    """A resource over one connection per serving thread (autocommit), as floor_app's."""

    def __init__(self, connect: Callable[[], Any], ledger: Any = None,
                 payments: Any = None) -> None:
        self._connect = connect
        self._local = threading.local()
        self.ledger, self.payments = ledger, payments

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self._connect()
            conn.autocommit = True
            self._local.conn = conn
        return conn

    @staticmethod
    def _rollback(conn: Any) -> None:
        if not conn.closed and (conn.get_transaction_status()
                                != psycopg2.extensions.TRANSACTION_STATUS_IDLE):
            with conn.cursor() as cur:
                cur.execute("ROLLBACK")

    def _serve(self, req: falcon.Request, resp: falcon.Response, decoder: Any,
               work: Callable[..., tuple[int, Any]], *ids: str) -> None:
        raw = req.bounded_stream.read()
        conn = None
        try:
            body = decoder.decode(raw or b"{}") if decoder is not None else None
            env = str(uuid.UUID(req.get_header("X-Platform-Env-Id", required=True)))
            args = [str(uuid.UUID(i)) for i in ids]
            conn = self._conn()
            status, doc = work(conn, env, *args, body)
        except (msgspec.ValidationError, msgspec.DecodeError, ValueError):
            status, doc = 422, {"code": "validation_failed"}
        except Refused as exc:
            status, doc = exc.status, {"code": exc.code}
        except psycopg2.errors.LockNotAvailable:
            status, doc = 409, {"code": "conflict"}
        finally:
            if conn is not None:
                self._rollback(conn)
        resp.status, resp.content_type = status, falcon.MEDIA_JSON
        resp.data = doc if isinstance(doc, bytes) else msgspec.json.encode(doc)

    def _mark_posted(self, cur: Any, env: str, posting: dict[str, Any]) -> None:
        """After the commit: the posting booked by the ledger and marked POSTED."""
        if self.ledger is None:
            return
        from pms.platform.ledger import LedgerLine

        lines = [LedgerLine(ln["account"], Decimal(ln["debit"]), Decimal(ln["credit"]))
                 for ln in posting["lines"]]
        booked = self.ledger.post_entry(uuid.UUID(env), idempotency_key=posting["key"],
                                        currency=posting["currency"], lines=lines,
                                        memo=posting["memo"])
        cur.execute(POSTED_SQL, {"env": env, "posting": posting["id"], "external_id": booked.id})

    @staticmethod
    def _posting(state: FolioState, key: str, memo: str, lines: list[dict]) -> dict[str, Any]:
        return {"id": str(uuid.uuid4()), "key": key, "memo": memo, "lines": lines,
                "currency": state.currency}

    @staticmethod
    def _posting_args(posting: dict[str, Any]) -> dict[str, Any]:
        return {"posting": posting["id"], "posting_key": posting["key"], "memo": posting["memo"],
                "posting_lines": msgspec.json.encode(posting["lines"]).decode()}


class Charge(_Stay):
    """`POST .../folios/{folio_id}/charges`: 2 round trips, then the ledger's mark."""

    _decoder = msgspec.json.Decoder(ChargeIn)

    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: str,
                folio_id: str) -> None:
        self._serve(req, resp, self._decoder, self.charge, property_id, folio_id)

    def charge(self, conn: Any, env: str, prop: str, folio: str, body: ChargeIn
               ) -> tuple[int, Any]:
        gross = money(body.amount)
        if gross <= 0 or gross != body.amount.quantize(CENT):
            raise Refused(422, "validation_failed")
        args = {"env": env, "prop": prop, "folio": folio, "code": body.transaction_code}
        with conn.cursor() as cur:
            cur.execute(CHARGE_REFS_SQL, args)  # 1
            row = cur.fetchone()
            if row is None:
                raise Refused(404, "not_found")
            state = FolioState(row)
            code = state.extra[0]
            if code is None:
                raise Refused(422, "validation_failed")
            if state.status != "OPEN":
                raise Refused(409, "folio_closed")
            category, rules, account = code
            net, taxes = inclusive_split(gross, rules)
            at = datetime.now(UTC)
            main_id = str(uuid.uuid4())
            lines = [{"id": main_id, "category": category,
                      "description": (body.description or category)[:200], "amount": net,
                      "night": None, "kind": "charge", "code": body.transaction_code,
                      "parent": None}]
            lines += [{"id": str(uuid.uuid4()), "category": "tax", "description": name[:200],
                       "amount": amount, "night": None, "kind": "tax", "code": tax_code,
                       "parent": main_id} for tax_code, name, amount in taxes]
            write: dict[str, Any] = {"env": env, "prop": state.property_id, "folio": folio,
                                     "stay": state.stay_id, "currency": state.currency,
                                     "today": state.today}
            for i, line in enumerate(lines):
                line["at"] = at + timedelta(microseconds=i)
                write.update({f"{k}{i}": v for k, v in line.items()})
                state.charges.append({
                    "id": line["id"], "category": line["category"],
                    "description": line["description"], "amount": str(line["amount"]),
                    "currency": state.currency, "quantity": 1,
                    "business_date": state.today.isoformat(), "night": None,
                    "kind": line["kind"], "created_at": line["at"],
                    "transaction_code": line["code"], "parent_id": line["parent"],
                    "reversal_of": None, "moved_from_folio": None, "reason": None})
            revenue = account or CATEGORY_ACCOUNTS.get(category, "other_revenue")
            amounts = {revenue: net}
            for _, _, amount in taxes:
                amounts["tax_payable"] = amounts.get("tax_payable", Decimal(0)) + amount
            posting = self._posting(state, f"charge:{main_id}", f"{body.transaction_code} {folio}",
                                    posting_lines(amounts))
            version = state.version + 1
            doc = msgspec.json.encode(state.document())
            write.update(self._posting_args(posting),
                         **journal("folio", "Folio", folio, state.property_id, "charge_posted",
                                   version, doc.decode()))
            sql = ("".join(CHARGE_LINE_SQL.format(i=i) for i in range(len(lines)))
                   + POSTING_SQL + FOLIO_VERSION_SQL + change_sql() + "COMMIT")
            cur.execute(sql, write)  # 2
            self._mark_posted(cur, env, posting)
        return 201, doc


PAYMENT_REFS_SQL = "BEGIN; " + SETTINGS + ";" + FOLIO_COLUMNS.format(extra="")
PAYMENT_SQL = """
INSERT INTO folio_payment (id, created_at, updated_at, env_id, folio_id, amount, currency,
  method, payment_method_id, status, kind, idempotency_key, business_date, attempts)
VALUES (%(payment)s, %(at)s, %(at)s, %(env)s, %(folio)s, %(amount)s, %(currency)s, 'CARD',
  %(method_id)s, 'PENDING', 'PAYMENT', %(payment_key)s, %(today)s, 0);"""
OUTCOME_REFS_SQL = ("BEGIN; " + SETTINGS + """;
SELECT 1 FROM folio_payment WHERE env_id = %(env)s AND id = %(payment)s FOR UPDATE;"""
                    + FOLIO_COLUMNS.format(extra=""))
OUTCOME_SQL = """
UPDATE folio_payment SET status = %(status)s, external_id = %(external_id)s, attempts = %(attempts)s,
  decline_code = %(decline_code)s, updated_at = now()
 WHERE env_id = %(env)s AND id = %(payment)s;"""


class Payment(_Stay):
    """`POST .../folios/{folio_id}/payments`, a card payment: 4 round trips, the sandbox
    called between the two transactions, then the ledger's mark."""

    _decoder = msgspec.json.Decoder(PaymentIn)

    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: str,
                folio_id: str) -> None:
        self._serve(req, resp, self._decoder, self.pay, property_id, folio_id)

    def pay(self, conn: Any, env: str, prop: str, folio: str, body: PaymentIn
            ) -> tuple[int, Any]:
        amount = money(body.amount)
        if (body.method != "CARD" or not body.payment_method_id or amount <= 0
                or amount != body.amount.quantize(CENT)):
            raise Refused(422, "validation_failed")
        args = {"env": env, "prop": prop, "folio": folio}
        payment_id = str(uuid.uuid4())
        key = f"payment:{payment_id}"
        with conn.cursor() as cur:
            cur.execute(PAYMENT_REFS_SQL, args)  # 1
            row = cur.fetchone()
            if row is None:
                raise Refused(404, "not_found")
            state = FolioState(row)
            if state.status != "OPEN":
                raise Refused(409, "folio_closed")
            at = datetime.now(UTC)
            payment = {"id": payment_id, "amount": str(amount), "currency": state.currency,
                       "method": "CARD", "payment_method_id": body.payment_method_id,
                       "status": "PENDING", "created_at": at, "kind": "PAYMENT",
                       "decline_code": None, "pre_authorization_id": None, "voucher_code": None}
            state.payments.append(payment)
            version = state.version + 1
            doc = msgspec.json.encode(state.document()).decode()
            cur.execute(PAYMENT_SQL + FOLIO_VERSION_SQL + change_sql() + "COMMIT", {
                **args, "payment": payment_id, "at": at, "amount": amount,
                "currency": state.currency, "method_id": body.payment_method_id,
                "payment_key": key, "today": state.today,
                **journal("folio", "Folio", folio, state.property_id, "payment_initiated",
                          version, doc)})  # 2
            result = self.payments.charge(  # no transaction open
                amount=amount, currency=state.currency, idempotency_key=key,
                payment_method_id=body.payment_method_id, metadata={"folio_id": folio},
                env_id=env, holder_id=None)
            cur.execute(OUTCOME_REFS_SQL, {**args, "payment": payment_id})  # 3
            state = FolioState(cur.fetchone())
            current = next((p for p in state.payments if p["id"] == payment_id), None)
            if current is None or current["status"] != "PENDING":  # finished meanwhile
                self._rollback(conn)
                return 201, {"payment": current, "folio": state.document()}
            current["status"] = "CAPTURED" if result.ok else "FAILED"
            current["decline_code"] = None if result.ok else (result.decline_code or "declined")
            version = state.version + 1
            outcome = {**args, "payment": payment_id, "status": current["status"],
                       "external_id": result.id, "attempts": 1,
                       "decline_code": current["decline_code"], "currency": state.currency}
            sql = OUTCOME_SQL
            posting = None
            if result.ok:
                posting = self._posting(state, key, f"payment {payment_id}", [
                    {"account": "payments_clearing", "debit": str(amount), "credit": "0"},
                    {"account": "guest_ledger", "debit": "0", "credit": str(amount)}])
                outcome.update(self._posting_args(posting))
                sql += POSTING_SQL
            folio_doc = state.document()
            outcome.update(journal("folio", "Folio", folio, state.property_id,
                                   "payment_captured" if result.ok else "payment_failed",
                                   version, msgspec.json.encode(folio_doc).decode()))
            cur.execute(sql + FOLIO_VERSION_SQL + change_sql() + "COMMIT", outcome)  # 4
            if posting is not None:
                self._mark_posted(cur, env, posting)
        if not result.ok:
            return 402, {"code": "payment_declined", "payment_id": payment_id,
                         "decline_code": current["decline_code"]}
        return 201, {"payment": current, "folio": folio_doc}


def add_routes(app: falcon.App, connect: Callable[[], Any], *, ledger: Any = None,
               payments: Any = None) -> None:
    """The stay's floors on `app` (the ledger and the payments service: their sandboxes)."""
    if ledger is None:
        from pms.platform.ledger import EmbeddedLedger

        ledger = EmbeddedLedger()
    if payments is None:
        from pms.platform.payments import EmbeddedPayments

        payments = EmbeddedPayments()
    app.add_route("/v1/properties/{property_id}/folios/{folio_id}/charges",
                  Charge(connect, ledger))
    app.add_route("/v1/properties/{property_id}/folios/{folio_id}/payments",
                  Payment(connect, ledger, payments))
    add_stay_routes(app, connect)


# -- check-in and check-out --------------------------------------------------------------------

RESERVATION_COLUMNS = (
    "id", "confirmation_number", "property_id", "status", "arrival_date", "departure_date",
    "departure_time", "adults", "children", "room_type_id", "rate_plan_id", "guest_profile_id",
    "guest_first_name", "guest_last_name", "source", "channel", "room_id", "currency",
    "room_total", "packages_total", "discount_total", "total_amount", "nightly_prices",
    "promo_code", "pre_checked_in_at", "cancellation_fee", "no_show_fee", "cancelled_at",
    "checked_in_at", "checked_out_at", "split_from", "notes", "version", "created_at",
    "updated_at", "block_id", "company_profile_id", "company_billed")
_R = ", ".join(f"r.{c}" for c in RESERVATION_COLUMNS)
OUT_OF_ORDER = "'{OUT_OF_ORDER,OUT_OF_SERVICE}'::text[]"  # pms.services.reservations.room_holds

# check-in, round trip 1: the stay locked with the business date, and the room picked and
# locked by the service's rule (pms_pick_room: the VACANT rooms of the type not marked out of
# order, clean ones first, then by number; the first not held by another stay nor under
# maintenance on the nights, FOR UPDATE SKIP LOCKED) in the same statement; the candidates
# are sorted first (OFFSET 0 keeps the holds' and maintenance's checks out of the sort) and
# checked in that order until one passes, as the function walks them
CHECK_IN_REFS_SQL = "BEGIN; " + SETTINGS + f""";
SELECT {_R}, COALESCE(p.business_date, (now() AT TIME ZONE p.timezone)::date),
  pick.id, pick.room_number, pick.hk_status
FROM reservation r
JOIN property p ON p.env_id = r.env_id AND p.id = r.property_id
LEFT JOIN LATERAL (
  SELECT c.id, c.room_number, c.hk_status FROM (
    SELECT m.id, m.room_number, m.hk_status FROM room m
     WHERE m.env_id = %(env)s AND m.property_id = r.property_id
       AND m.room_type_id = r.room_type_id AND m.status = 'VACANT'
       AND m.hk_status <> ALL({OUT_OF_ORDER})
     ORDER BY m.hk_status = 'DIRTY', m.room_number OFFSET 0) c
   WHERE NOT EXISTS (SELECT 1 FROM room_stay h
       WHERE h.env_id = %(env)s AND h.room_id = c.id AND h.reservation_id <> r.id
         AND h.start_date < r.departure_date
         AND h.end_date > COALESCE(p.business_date, (now() AT TIME ZONE p.timezone)::date))
     AND NOT EXISTS (SELECT 1 FROM maintenance x
       WHERE x.env_id = %(env)s AND x.room_id = c.id AND x.active
         AND x.from_date < r.departure_date
         AND x.to_date >= COALESCE(p.business_date, (now() AT TIME ZONE p.timezone)::date))
   LIMIT 1 FOR UPDATE OF c SKIP LOCKED) pick ON true
WHERE r.env_id = %(env)s AND r.id = %(stay)s AND r.property_id = %(prop)s
FOR UPDATE OF r"""

# round trip 2: the holds released, the room occupied and held (an overlap with another
# stay's hold is refused by the exclusion constraint: rolled back, 409), the folio opened (or
# given the room number), the stay CHECKED_IN at its next version, audit, outbox, COMMIT
CHECK_IN_SQL = """
DELETE FROM room_stay WHERE env_id = %(env)s AND reservation_id = %(stay)s;
UPDATE room SET status = 'OCCUPIED', updated_at = %(at)s WHERE env_id = %(env)s AND id = %(room)s;
INSERT INTO room_stay (id, created_at, updated_at, env_id, reservation_id, property_id, room_id,
  start_date, end_date)
VALUES (%(hold)s, %(at)s, %(at)s, %(env)s, %(stay)s, %(prop)s, %(room)s, %(today)s, %(dep)s);
UPDATE folio SET room_number = %(number)s, updated_at = %(at)s
 WHERE env_id = %(env)s AND reservation_id = %(stay)s AND folio_type = 'GUEST'
   AND status = 'OPEN' AND room_number IS DISTINCT FROM %(number)s;
INSERT INTO folio (id, created_at, updated_at, env_id, version, reservation_id, property_id,
  room_number, status, folio_type, currency)
VALUES (%(folio)s, %(at)s, %(at)s, %(env)s, 0, %(stay)s, %(prop)s, %(number)s, 'OPEN', 'GUEST',
  %(currency)s)
ON CONFLICT DO NOTHING;
UPDATE reservation SET status = 'CHECKED_IN', version = %(version)s, room_id = %(room)s,
  checked_in_at = %(at)s, checked_in_business_date = %(today)s, updated_at = %(at)s
 WHERE env_id = %(env)s AND id = %(stay)s;""" + change_sql() + "COMMIT"

# check-out, round trip 1: the stay, its room and its OPEN guest folio locked (in the
# check-in's order: the folio's lock taken as its lateral row is read), the business date, the folio's totals and posted nights, the room code,
# and the stay's live digital keys locked
CHECK_OUT_REFS_SQL = "BEGIN; " + SETTINGS + f""";
SELECT {_R}, COALESCE(p.business_date, (now() AT TIME ZONE p.timezone)::date),
  rm.room_number, rm.status, f.id, f.currency,
  (SELECT COALESCE(sum(c.amount), 0) FROM folio_charge c
    WHERE c.env_id = %(env)s AND c.folio_id = f.id),
  (SELECT COALESCE(sum(m.amount), 0) FROM folio_payment m
    WHERE m.env_id = %(env)s AND m.folio_id = f.id AND m.status = 'CAPTURED'
      AND m.kind = 'PAYMENT'),
  (SELECT array_agg(n.night) FROM folio_charge n
    WHERE n.env_id = %(env)s AND n.reservation_id = r.id AND n.kind = 'room'
      AND n.night IS NOT NULL),
  (SELECT json_build_array(t.code, t.tax_rules, t.ledger_account) FROM transaction_code t
    WHERE t.env_id = %(env)s AND t.property_id = r.property_id AND t.category = 'room'
      AND t.active ORDER BY t.code = 'ROOM' DESC, t.code LIMIT 1),
  (SELECT count(*) FROM (SELECT k.id FROM digital_key k
    WHERE k.env_id = %(env)s AND k.reservation_id = r.id AND k.status IN ('INACTIVE', 'ACTIVE')
    FOR UPDATE OF k) live)
FROM reservation r
JOIN property p ON p.env_id = r.env_id AND p.id = r.property_id
JOIN room rm ON rm.env_id = r.env_id AND rm.id = r.room_id
LEFT JOIN LATERAL (SELECT g.id, g.currency FROM folio g
  WHERE g.env_id = r.env_id AND g.reservation_id = r.id AND g.folio_type = 'GUEST'
    AND g.status = 'OPEN' FOR UPDATE OF g) f ON true
WHERE r.env_id = %(env)s AND r.id = %(stay)s AND r.property_id = %(prop)s
FOR UPDATE OF r, rm"""

# round trip 2: the room nights and their taxes, their PENDING posting, the folio closed, the
# room VACANT and DIRTY, the holds released, the stay CHECKED_OUT, audit, outbox, COMMIT
CHECK_OUT_SQL = """
UPDATE folio SET status = 'CLOSED', closed_at = %(at)s, updated_at = %(at)s
 WHERE env_id = %(env)s AND id = %(folio)s;
UPDATE room SET status = 'VACANT', hk_status = 'DIRTY', updated_at = %(at)s
 WHERE env_id = %(env)s AND id = %(room)s;
DELETE FROM room_stay WHERE env_id = %(env)s AND reservation_id = %(stay)s;
UPDATE reservation SET status = 'CHECKED_OUT', version = %(version)s, checked_out_at = %(at)s,
  checked_out_business_date = %(today)s, updated_at = %(at)s
 WHERE env_id = %(env)s AND id = %(stay)s;""" + change_sql() + "COMMIT"


def reservation_doc(r: dict[str, Any], room_number: str | None) -> dict[str, Any]:
    """pms.schemas.reservations.reservation_out of a reservation's columns."""
    def at(v: Any) -> Any:
        return stamp(v) if v is not None else None

    def cash(v: Any) -> Any:
        return str(money(v)) if v is not None else None

    return {
        "id": str(r["id"]), "confirmation_number": r["confirmation_number"],
        "property_id": str(r["property_id"]), "status": r["status"],
        "arrival_date": r["arrival_date"], "departure_date": r["departure_date"],
        "departure_time": r["departure_time"],
        "nights": (r["departure_date"] - r["arrival_date"]).days, "adults": r["adults"],
        "children": r["children"], "room_type_id": r["room_type_id"],
        "rate_plan_id": r["rate_plan_id"], "guest_profile_id": r["guest_profile_id"],
        "guest_first_name": r["guest_first_name"], "guest_last_name": r["guest_last_name"],
        "source": r["source"], "channel": r["channel"], "room_id": r["room_id"],
        "room_number": room_number, "currency": r["currency"],
        "room_total": cash(r["room_total"]), "packages_total": cash(r["packages_total"]),
        "discount_total": cash(r["discount_total"]), "total_amount": cash(r["total_amount"]),
        "nightly_prices": [{"date": n["date"], "amount": str(money(n["amount"]))}
                           for n in r["nightly_prices"] or []],
        "promo_code": r["promo_code"], "pre_checked_in": r["pre_checked_in_at"] is not None,
        "cancellation_fee": cash(r["cancellation_fee"]), "no_show_fee": cash(r["no_show_fee"]),
        "cancelled_at": at(r["cancelled_at"]), "checked_in_at": at(r["checked_in_at"]),
        "checked_out_at": at(r["checked_out_at"]), "split_from": r["split_from"],
        "notes": r["notes"], "version": r["version"], "created_at": at(r["created_at"]),
        "updated_at": at(r["updated_at"]), "block_id": r["block_id"],
        "company_profile_id": r["company_profile_id"]}


def _encode(doc: dict[str, Any]) -> str:
    return msgspec.json.encode(doc).decode()


class CheckIn(_Stay):
    """`POST .../reservations/{id}/check-in` with the room picked by the rule: 2 round trips."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: str,
                reservation_id: str) -> None:
        self._serve(req, resp, None, self.check_in, property_id, reservation_id)

    def check_in(self, conn: Any, env: str, prop: str, stay: str, _body: Any
                 ) -> tuple[int, Any]:
        args = {"env": env, "prop": prop, "stay": stay}
        with conn.cursor() as cur:
            cur.execute(CHECK_IN_REFS_SQL, args)  # 1
            row = cur.fetchone()
            if row is None:
                raise Refused(404, "not_found")
            r = dict(zip(RESERVATION_COLUMNS, row, strict=False))
            today, room, number, hk = row[len(RESERVATION_COLUMNS):]
            if r["status"] != "CONFIRMED":
                raise Refused(409, "invalid_transition")
            if r["arrival_date"] > today:
                raise Refused(409, "check_in_too_early")
            if r["departure_date"] <= today:
                raise Refused(409, "stay_ended")
            if r["room_id"] is not None or r["block_id"] is not None:
                raise Refused(501, "not_in_the_floor")  # an assigned room, a block's stay
            if room is None:
                raise Refused(409, "room_unavailable")
            if hk not in ("CLEAN", "INSPECTED"):
                raise Refused(409, "room_not_ready")
            before = _encode(reservation_doc(r, None))
            at = datetime.now(UTC)
            r.update(status="CHECKED_IN", version=r["version"] + 1, room_id=str(room),
                     checked_in_at=at, updated_at=at)
            doc = msgspec.json.encode(reservation_doc(r, number))
            try:
                cur.execute(CHECK_IN_SQL, {  # 2
                    **args, "at": at, "room": room, "hold": str(uuid.uuid4()), "today": today,
                    "dep": r["departure_date"], "number": number, "folio": str(uuid.uuid4()),
                    "currency": r["currency"],
                    **journal("reservation", "Reservation", stay, prop, "checked_in",
                              r["version"], doc.decode(), before)})
            except psycopg2.errors.ExclusionViolation:
                raise Refused(409, "room_unavailable") from None
        return 200, doc


class CheckOut(_Stay):
    """`POST .../reservations/{id}/check-out`: 2 round trips."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: str,
                reservation_id: str) -> None:
        self._serve(req, resp, None, self.check_out, property_id, reservation_id)

    def check_out(self, conn: Any, env: str, prop: str, stay: str, _body: Any
                  ) -> tuple[int, Any]:
        args = {"env": env, "prop": prop, "stay": stay}
        with conn.cursor() as cur:
            cur.execute(CHECK_OUT_REFS_SQL, args)  # 1
            row = cur.fetchone()
            if row is None:
                raise Refused(404, "not_found")
            r = dict(zip(RESERVATION_COLUMNS, row, strict=False))
            (today, number, room_status, folio, currency, charged, paid, posted, room_code,
             live_keys) = row[len(RESERVATION_COLUMNS):]
            if r["status"] != "CHECKED_IN" or room_status != "OCCUPIED":
                raise Refused(409, "invalid_transition")
            if folio is None:
                raise Refused(501, "not_in_the_floor")  # no OPEN guest folio
            last = max(min(today, r["departure_date"]),
                       r["arrival_date"] + timedelta(days=1)) - timedelta(days=1)
            if (live_keys or r["company_billed"] or r["block_id"] is not None
                    or last + timedelta(days=1) < r["departure_date"]):
                raise Refused(501, "not_in_the_floor")  # keys, company, block, early leave
            code, rules, account = room_code if room_code else (None, [], None)
            prices = {date.fromisoformat(n["date"]): money(n["amount"])
                      for n in r["nightly_prices"] or []}
            at = datetime.now(UTC)
            lines: list[dict[str, Any]] = []
            night = r["arrival_date"]
            while night <= last:
                if night not in set(posted or []):
                    net, taxes = inclusive_split(prices.get(night, Decimal(0)), rules)
                    main = str(uuid.uuid4())
                    lines.append({"id": main, "category": "room", "kind": "room",
                                  "description": f"Room {r['confirmation_number']} night "
                                                 f"{night.isoformat()}",
                                  "amount": net, "night": night, "code": code, "parent": None})
                    lines += [{"id": str(uuid.uuid4()), "category": "tax", "kind": "tax",
                               "description": name[:200], "amount": amount, "night": None,
                               "code": tax_code, "parent": main}
                              for tax_code, name, amount in taxes]
                night += timedelta(days=1)
            balance = Decimal(charged) - Decimal(paid) + sum(
                (ln["amount"] for ln in lines), Decimal(0))
            if balance != 0:
                raise Refused(409, "folio_not_closable" if balance > 0 else "folio_credit_balance")
            write: dict[str, Any] = {**args, "at": at, "folio": str(folio), "room": r["room_id"],
                                     "today": today, "currency": currency}
            sql = "".join(CHARGE_LINE_SQL.format(i=i) for i in range(len(lines)))
            for i, line in enumerate(lines):
                line["at"] = at + timedelta(microseconds=i)
                write.update({f"{k}{i}": v for k, v in line.items()})
            if lines:
                amounts: dict[str, Decimal] = {}
                for line in lines:
                    acct = ("tax_payable" if line["kind"] == "tax"
                            else account or CATEGORY_ACCOUNTS["room"])
                    amounts[acct] = amounts.get(acct, Decimal(0)) + line["amount"]
                nights = [ln["night"] for ln in lines if ln["night"] is not None]
                write.update({"posting": str(uuid.uuid4()),
                              "posting_key": f"room-nights:{stay}:{nights[0]}:{nights[-1]}",
                              "memo": f"Room nights {r['confirmation_number']}"[:200],
                              "posting_lines": _encode(posting_lines(amounts))})  # type: ignore[arg-type]
                sql += POSTING_SQL
            before = _encode(reservation_doc(r, number))
            r.update(status="CHECKED_OUT", version=r["version"] + 1, checked_out_at=at,
                     updated_at=at)
            doc = msgspec.json.encode(reservation_doc(r, number))
            write.update(journal(
                "reservation", "Reservation", stay, prop, "checked_out", r["version"],
                doc.decode(), before))
            cur.execute(sql + CHECK_OUT_SQL, write)  # 2
        return 200, doc


def add_stay_routes(app: falcon.App, connect: Callable[[], Any]) -> None:
    app.add_route("/v1/properties/{property_id}/reservations/{reservation_id}/check-in",
                  CheckIn(connect))
    app.add_route("/v1/properties/{property_id}/reservations/{reservation_id}/check-out",
                  CheckOut(connect))
