"""The floors: the service's booking transaction (and, beside it, `GET /v1/properties/{id}` and
`POST /v1/properties/{id}/profiles`) written by hand in psycopg2, behind bare Falcon + msgspec
(no middleware), served under the same gunicorn settings as the service
(`bench.floor_app:from_environment()`), against the same schema as the same service role, so
row-level security and every foreign key and index apply. They answer the write path's question
"what would it take": what hand-written Python reaches on this stack and this machine, measured
in the same run as the service (bench/scenarios/floor.py and properties.py).

The property read (`Property.on_get`): one round trip, the settings and the SELECT as ONE
implicit transaction, exactly as the service sends it; the row encoded in the service's public
shape. The profile create (`Profiles.on_post`): 2 round trips, (1) `BEGIN; SET LOCAL ...` with
the property's existence and a profile with the same email in one read, (2) the profile, its
audit row, its outbox row and the idempotency record inserted, and COMMIT; a unique key taken
meanwhile (email or Idempotency-Key) rolls it all back and answers 409.
The same create as ONE call (`ProfilesOneCall`, at ONE_CALL_PREFIX + the path): the settings
and a PL/pgSQL function doing the reads, the check and every write, one implicit transaction;
the bench installs the function in its own database (`install_one_call`). Not a floor of the
service's design (which keeps its use cases in Python, on SQLite too), but the measure of what
going below the hand-written floor would take.

What one `POST /v1/properties/{id}/reservations` does here, as the service does it:
1. `BEGIN; SET LOCAL ...` (timeouts and the tenant, transaction-local, as pms.db.database
   sends them) and one read of the property, room type and rate plan with the stay's rates (an
   array) and the count of restrictions that touch the stay;
2. the nights' `inventory_day` rows locked in date order (`FOR UPDATE`), with the rooms of the
   type and the rooms under maintenance recounted in the same statement; sellable checked here;
3. the sold counts incremented, the reservation inserted at version 1, its audit row, its outbox
   row and the idempotency record (done, with the response body) inserted, and COMMIT, in one
   send.

No SQL `PREPARE` (PgBouncer's transaction mode cannot carry it; banned in this codebase): every
statement is plain text, parsed and planned on each request. (The service now keeps the plans of
its two heaviest booking statements in PL/pgSQL functions, migrations 012 and 013; the floor
stays plain hand-written SQL, as the floor is defined.)

What the booking floor leaves out (none of it is on the benchmark's request shape): restriction rules
(any restriction on the stay answers 422), promo codes, packages, guest profiles, folding by
confirmation number, a replay of a stored idempotent answer (a reused key answers 409), and the
token check (the tenant is read from X-Platform-Env-Id). The GET and profile floors leave out
the token check too, and the profile floor every optional field (company, phone, address,
external reference, negotiated rates): none is on the benchmark's request shape.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
import uuid
import zlib
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import falcon
import msgspec
import psycopg2
import psycopg2.errors

CONFIRMATION_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # as pms.services.reservations.reservations
OUTBOX_PARTITIONS = 64  # pms.models.platform.OUTBOX_PARTITIONS (a test checks they agree)
CENT = Decimal("0.01")

SETTINGS = ("SET LOCAL statement_timeout = 5000; SET LOCAL lock_timeout = 4000; "
            "SET LOCAL app.env_id = %(env)s")


def journal_sql(aggregate: str, target_type: str, *, arg: str = "%({})s",
                commit: bool = True) -> str:
    """What every floor write sends with its COMMIT, as the service's unit of work does: the
    audit row, the outbox row (`hotel:pms:<aggregate>:created`, version 1) and the
    Idempotency-Key record (done, with the response body), then COMMIT (unless not `commit`).
    `arg` names each value (psycopg2's `%(name)s`, or a PL/pgSQL function's `p_name`)."""
    a = {name: arg.format(name) for name in (
        "audit_id", "env", "id", "prop", "request_id", "doc", "event_id", "event_key",
        "partition", "record_id", "key", "fingerprint", "body")}
    return f"""
INSERT INTO audit_entry (id, created_at, updated_at, env_id, action, target_type, target_id,
  property_id, actor_sub, actor_kind, request_id, after)
VALUES ({a['audit_id']}, now(), now(), {a['env']}, '{aggregate}.created', '{target_type}',
  {a['id']}, {a['prop']}, 'floor', 'staff', {a['request_id']}, {a['doc']}::jsonb);
INSERT INTO outbox_event (id, created_at, updated_at, env_id, type, source, subject,
  aggregate_type, aggregate_version, property_id, idempotency_key, time, data, request_id,
  attempts, next_attempt_at, partition, dispatch_attempts)
VALUES ({a['event_id']}, now(), now(), {a['env']}, 'hotel:pms:{aggregate}:created', 'hotel-pms',
  {a['id']}, '{aggregate}', 1, {a['prop']}, {a['event_key']}, now(), {a['doc']}::jsonb,
  {a['request_id']}, 0, now(), {a['partition']}, 0);
INSERT INTO idempotency_record (id, created_at, updated_at, env_id, key, fingerprint, state,
  response_status, response_body, response_headers, expires_at, request_id)
VALUES ({a['record_id']}, now(), now(), {a['env']}, {a['key']}, {a['fingerprint']}, 'done', 201,
  {a['body']}, '{{}}'::jsonb, now() + interval '24 hours', {a['request_id']});
""" + ("COMMIT" if commit else "")

# round trip 1: the transaction, its settings, and every reference of the stay in one read
REFS_SQL = "BEGIN; " + SETTINGS + """;
SELECT p.currency_code, COALESCE(p.business_date, current_date), rt.max_occupancy,
  (SELECT array_agg(rs.amount ORDER BY rs.date) FROM rate_schedule rs
    WHERE rs.env_id = %(env)s AND rs.rate_plan_id = rp.id AND rs.room_type_id = rt.id
      AND rs.date >= %(arr)s AND rs.date < %(dep)s),
  (SELECT count(*) FROM restriction r
    WHERE r.env_id = %(env)s AND r.property_id = p.id AND r.date >= %(arr)s AND r.date <= %(dep)s
      AND (r.rate_plan_id IS NULL OR r.rate_plan_id = rp.id)
      AND (r.room_type_id IS NULL OR r.room_type_id = rt.id))
FROM property p
JOIN room_type rt ON rt.env_id = p.env_id AND rt.property_id = p.id
JOIN rate_plan rp ON rp.env_id = p.env_id AND rp.property_id = p.id
WHERE p.env_id = %(env)s AND p.id = %(prop)s AND rt.id = %(rt)s AND rp.id = %(rp)s AND rp.active"""

# round trip 2: lock the nights in date order, rooms and maintenance recounted under the lock
LOCK_SQL = """
SELECT d.id, d.date, d.sold, d.sell_limit,
  (SELECT count(*) FROM room r WHERE r.env_id = %(env)s AND r.room_type_id = %(rt)s),
  (SELECT count(DISTINCT m.room_id) FROM maintenance m JOIN room r ON r.id = m.room_id
    WHERE m.env_id = %(env)s AND r.env_id = %(env)s AND r.room_type_id = %(rt)s AND m.active
      AND m.from_date <= d.date AND m.to_date >= d.date)
FROM inventory_day d
WHERE d.env_id = %(env)s AND d.room_type_id = %(rt)s AND d.date >= %(arr)s AND d.date < %(dep)s
ORDER BY d.date
FOR UPDATE OF d"""

# round trip 3: every write and the commit
WRITE_SQL = """
UPDATE inventory_day SET sold = sold + 1, updated_at = now() WHERE id = ANY(%(days)s::uuid[]);
INSERT INTO reservation (id, created_at, updated_at, env_id, version, property_id, room_type_id,
  rate_plan_id, confirmation_number, status, arrival_date, departure_date, adults, children,
  source, channel, guest_first_name, guest_last_name, guest_last_name_normalized, currency,
  room_total, packages_total, discount_total, total_amount, nightly_prices)
VALUES (%(id)s, now(), now(), %(env)s, 1, %(prop)s, %(rt)s, %(rp)s, %(conf)s, 'CONFIRMED',
  %(arr)s, %(dep)s, %(adults)s, %(children)s, 'DIRECT', 'WEB', %(first)s, %(last)s, %(last_n)s,
  %(currency)s, %(total)s, 0, 0, %(total)s, %(nightly)s::jsonb);
""" + journal_sql("reservation", "Reservation")


# GET /v1/properties/{id}: one round trip, one implicit transaction (as pms.db.database sends
# a read outside a transaction); the columns the service's public shape shows, in its names
PROPERTY_KEYS = ("id", "propertyCode", "name", "timezone", "currencyCode", "languages",
                 "displayAddress", "contacts", "businessDate", "createdAt", "updatedAt")
PROPERTY_SQL = SETTINGS + """;
SELECT id, code, name, timezone, currency_code, languages, display_address, contacts,
  business_date, created_at, updated_at
FROM property WHERE env_id = %(env)s AND id = %(prop)s"""

# POST /v1/properties/{id}/profiles, round trip 1: the property, and a profile with the email
PROFILE_REFS_SQL = "BEGIN; " + SETTINGS + """;
SELECT EXISTS (SELECT 1 FROM property WHERE env_id = %(env)s AND id = %(prop)s),
  (SELECT id FROM profile WHERE env_id = %(env)s AND email_normalized = %(email_n)s)"""

# round trip 2: every write and the commit
PROFILE_WRITE_SQL = """
INSERT INTO profile (id, created_at, updated_at, env_id, version, kind, first_name, last_name,
  email, email_normalized, preferences, origin_property_id)
VALUES (%(id)s, now(), now(), %(env)s, 1, 'GUEST', %(first)s, %(last)s, %(email)s, %(email_n)s,
  '{"negotiated_rate_plan_ids":[],"sso_provider":null}'::jsonb, %(prop)s);
""" + journal_sql("profile", "Profile")

# The profile create as ONE call ("what it would take": the whole transaction in the
# database, one round trip, one implicit transaction with the settings): the same reads and
# writes as the 2 round trips above, in a PL/pgSQL function the bench installs in its own
# database (install_one_call; the service has no such function). NULL when it created the
# profile, else the id of the profile with the email; no property raises P0002.
PROFILE_ARGS = ("env", "prop", "id", "first", "last", "email", "email_n", "audit_id",
                "event_id", "event_key", "partition", "record_id", "key", "fingerprint", "doc",
                "body", "request_id")
_ARG_TYPES = {"env": "uuid", "prop": "uuid", "id": "uuid", "audit_id": "uuid",
              "event_id": "uuid", "record_id": "uuid", "partition": "int"}
ONE_CALL_FUNCTION = "floor_profile_create"
ONE_CALL_PREFIX = "/one-call"  # the one-call create's path: this prefix + the service's path
ONE_CALL_DDL = f"""
CREATE OR REPLACE FUNCTION {ONE_CALL_FUNCTION}(
  {", ".join(f"p_{n} {_ARG_TYPES.get(n, 'text')}" for n in PROFILE_ARGS)})
RETURNS uuid LANGUAGE plpgsql AS $fn$
DECLARE existing uuid;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM property WHERE env_id = p_env AND id = p_prop) THEN
    RAISE EXCEPTION 'no such property' USING ERRCODE = 'P0002';
  END IF;
  SELECT id INTO existing FROM profile WHERE env_id = p_env AND email_normalized = p_email_n;
  IF existing IS NOT NULL THEN
    RETURN existing;
  END IF;
  INSERT INTO profile (id, created_at, updated_at, env_id, version, kind, first_name, last_name,
    email, email_normalized, preferences, origin_property_id)
  VALUES (p_id, now(), now(), p_env, 1, 'GUEST', p_first, p_last, p_email, p_email_n,
    '{{"negotiated_rate_plan_ids":[],"sso_provider":null}}'::jsonb, p_prop);
  {journal_sql("profile", "Profile", arg="p_{}", commit=False)}
  RETURN NULL;
END $fn$"""
PROFILE_ONE_CALL_SQL = (SETTINGS + f"; SELECT {ONE_CALL_FUNCTION}("
                        + ", ".join(f"%({n})s" for n in PROFILE_ARGS) + ")")


def install_one_call(owner_url: str) -> None:
    """Create the one-call floor's function in the bench database (as its owner)."""
    conn = psycopg2.connect(owner_url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute(ONE_CALL_DDL)
    finally:
        conn.close()


class Guest(msgspec.Struct):
    first_name: str
    last_name: str


class BookingIn(msgspec.Struct):
    room_type_id: uuid.UUID
    rate_plan_id: uuid.UUID
    arrival_date: date
    departure_date: date
    adults: int = 1
    children: int = 0
    guest: Guest | None = None


class Refused(Exception):
    """An answer other than 201: the status and a problem code."""

    def __init__(self, status: int, code: str) -> None:
        super().__init__(code)
        self.status, self.code = status, code


def partition_of(subject: str) -> int:
    """pms.models.platform.outbox_partition, repeated so the floor imports nothing of pms."""
    return zlib.crc32(subject.encode()) % OUTBOX_PARTITIONS


def sellable(rooms: int, blocked: int, sold: int, sell_limit: int | None) -> int:
    """Rooms of a type still for sale on a night, as the service's NightCount counts them."""
    free = rooms - blocked - sold
    if sell_limit is not None:
        free = min(free, sell_limit - sold)
    return free


class _Handler:
    """A resource over one connection per serving thread (autocommit: BEGIN goes out with the
    first statement, as the service's does)."""

    _decoder: msgspec.json.Decoder  # a POST resource's body decoder (see _answer)

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._local = threading.local()

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self._connect()
            conn.autocommit = True
            self._local.conn = conn
        return conn

    def _answer(self, req: falcon.Request, resp: falcon.Response, property_id: str,
                write: Callable[[str, str, Any, str, str], tuple[int, bytes]]) -> None:
        """A POST: the body decoded by `self._decoder`, the tenant and the Idempotency-Key
        read, then `write(env, property, body, key, fingerprint)` -> (status, document); a
        body or an id that does not parse answers 422, a `Refused` its own status."""
        raw = req.bounded_stream.read()
        try:
            body = self._decoder.decode(raw)
            env_id = str(uuid.UUID(req.get_header("X-Platform-Env-Id", required=True)))
            key = req.get_header("Idempotency-Key", required=True)
            status, doc = write(env_id, str(uuid.UUID(property_id)), body, key,
                                hashlib.sha256(raw).hexdigest())
        except (msgspec.ValidationError, msgspec.DecodeError, ValueError):
            status, doc = 422, b'{"code":"validation_failed"}'
        except Refused as exc:
            status, doc = exc.status, msgspec.json.encode({"code": exc.code})
        resp.status, resp.data, resp.content_type = status, doc, falcon.MEDIA_JSON

    @staticmethod
    def _rollback(conn: Any) -> None:
        if conn.closed:
            return
        if conn.get_transaction_status() != psycopg2.extensions.TRANSACTION_STATUS_IDLE:
            with conn.cursor() as cur:
                cur.execute("ROLLBACK")


class Booking(_Handler):
    """`POST /v1/properties/{property_id}/reservations`: the 3-round-trip transaction."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        super().__init__(connect)
        self._decoder = msgspec.json.Decoder(BookingIn)

    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: str) -> None:
        self._answer(req, resp, property_id, lambda *args: (201, self.book(*args)))

    def book(self, env_id: str, property_id: str, body: BookingIn, key: str,
             fingerprint: str) -> bytes:
        nights = (body.departure_date - body.arrival_date).days
        if nights < 1 or body.adults < 1:
            raise Refused(422, "validation_failed")
        args = {"env": env_id, "prop": property_id, "rt": str(body.room_type_id),
                "rp": str(body.rate_plan_id), "arr": body.arrival_date,
                "dep": body.departure_date}
        conn = self._conn()
        try:
            with conn.cursor() as cur:
                cur.execute(REFS_SQL, args)  # 1
                refs = cur.fetchone()
                if refs is None:
                    raise Refused(422, "unknown_reference")
                currency, today, max_occupancy, rates, restrictions = refs
                if (body.arrival_date < today or body.adults + body.children > max_occupancy
                        or restrictions or not rates or len(rates) != nights):
                    raise Refused(422, "stay_not_bookable")
                cur.execute(LOCK_SQL, args)  # 2
                days = cur.fetchall()
                if len(days) != nights or any(sellable(r[4], r[5], r[2], r[3]) < 1 for r in days):
                    raise Refused(409, "room_type_unavailable")
                doc, write = self._document(args, body, currency, days, rates, key, fingerprint)
                cur.execute(WRITE_SQL, write)  # 3
            return doc
        except psycopg2.errors.UniqueViolation:
            self._rollback(conn)
            raise Refused(409, "idempotency_key_in_use") from None
        except BaseException:
            self._rollback(conn)
            raise

    @staticmethod
    def _document(args: dict[str, Any], body: BookingIn, currency: str, days: list[tuple],
                  rates: list[Decimal], key: str, fingerprint: str
                  ) -> tuple[bytes, dict[str, Any]]:
        """The reservation document (response, audit `after`, event data and the idempotency
        record's body: encoded once) and the parameters of the writes."""
        res_id = str(uuid.uuid4())
        guest = body.guest or Guest(first_name="", last_name="")
        nightly = [{"date": d[1].isoformat(), "amount": str(a.quantize(CENT))}
                   for d, a in zip(days, rates, strict=True)]
        total = str(sum(rates, Decimal(0)).quantize(CENT))
        confirmation = "".join(secrets.choice(CONFIRMATION_ALPHABET) for _ in range(10))
        out = {"id": res_id, "confirmation_number": confirmation, "status": "CONFIRMED",
               "property_id": args["prop"], "room_type_id": args["rt"],
               "rate_plan_id": args["rp"], "arrival_date": args["arr"].isoformat(),
               "departure_date": args["dep"].isoformat(), "adults": body.adults,
               "children": body.children, "guest_first_name": guest.first_name,
               "guest_last_name": guest.last_name, "source": "DIRECT", "channel": "WEB",
               "currency": currency, "room_total": total, "packages_total": "0.00",
               "discount_total": "0.00", "total_amount": total, "nightly_prices": nightly,
               "room_id": None, "version": 1,
               "created_at": datetime.now(UTC).isoformat()}
        doc = msgspec.json.encode(out)
        text = doc.decode()
        write = {**args, "days": [d[0] for d in days], "id": res_id, "conf": confirmation,
                 "adults": body.adults, "children": body.children, "first": guest.first_name,
                 "last": guest.last_name, "last_n": guest.last_name.strip().lower(),
                 "currency": currency, "total": total, "nightly": msgspec.json.encode(nightly).decode(),
                 "audit_id": str(uuid.uuid4()), "event_id": str(uuid.uuid4()),
                 "event_key": f"hotel:pms:reservation:created:{res_id}:1",
                 "partition": partition_of(res_id), "record_id": str(uuid.uuid4()),
                 "key": key, "fingerprint": fingerprint, "body": text,
                 "request_id": uuid.uuid4().hex, "doc": text}
        return doc, write


class Property(_Handler):
    """`GET /v1/properties/{property_id}`: one round trip, the service's implicit transaction."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: str) -> None:
        try:
            args = {"env": str(uuid.UUID(req.get_header("X-Platform-Env-Id", required=True))),
                    "prop": str(uuid.UUID(property_id))}
        except ValueError:
            raise falcon.HTTPNotFound() from None
        with self._conn().cursor() as cur:
            cur.execute(PROPERTY_SQL, args)
            row = cur.fetchone()
        if row is None:
            raise falcon.HTTPNotFound()
        resp.data = msgspec.json.encode(dict(zip(PROPERTY_KEYS, row, strict=True)))
        resp.content_type = falcon.MEDIA_JSON


class ProfileIn(msgspec.Struct):
    first_name: str
    last_name: str
    email: str


class Profiles(_Handler):
    """`POST /v1/properties/{property_id}/profiles`: the 2-round-trip transaction."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        super().__init__(connect)
        self._decoder = msgspec.json.Decoder(ProfileIn)

    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: str) -> None:
        self._answer(req, resp, property_id, self.create)

    @staticmethod
    def _document(args: dict[str, Any], body: ProfileIn, key: str, fingerprint: str
                  ) -> tuple[bytes, dict[str, Any]]:
        """The new profile's document (response, audit `after`, event data, idempotency
        body: encoded once) and the parameters of its writes."""
        now = datetime.now(UTC)
        profile_id = str(uuid.uuid4())
        out = {"profile_id": profile_id, "id": profile_id, "kind": "GUEST",
               "first_name": body.first_name, "last_name": body.last_name,
               "company_name": None, "email": body.email, "phone": None,
               "external_ref": None, "language": None, "address": None,
               "preferences": {"sso_provider": None, "negotiated_rate_plan_ids": [],
                               "provisioned_admin_at": None},
               "loyalty_number": None, "created_at": now, "updated_at": now}
        doc = msgspec.json.encode(out)
        text = doc.decode()
        return doc, {**args, "id": profile_id, "first": body.first_name, "last": body.last_name,
                     "email": body.email, "audit_id": str(uuid.uuid4()),
                     "event_id": str(uuid.uuid4()),
                     "event_key": f"hotel:pms:profile:created:{profile_id}:1",
                     "partition": partition_of(profile_id), "record_id": str(uuid.uuid4()),
                     "key": key, "fingerprint": fingerprint, "doc": text, "body": text,
                     "request_id": uuid.uuid4().hex}

    def create(self, env_id: str, property_id: str, body: ProfileIn, key: str,
               fingerprint: str) -> tuple[int, bytes]:
        args = {"env": env_id, "prop": property_id, "email_n": body.email.strip().lower()}
        conn = self._conn()
        try:
            with conn.cursor() as cur:
                cur.execute(PROFILE_REFS_SQL, args)  # 1
                known, existing = cur.fetchone()
                if not known:
                    raise Refused(404, "not_found")
                if existing is not None:  # ensure: the profile with this email, as it is
                    self._rollback(conn)
                    return 200, msgspec.json.encode({"id": existing})
                doc, write = self._document(args, body, key, fingerprint)
                cur.execute(PROFILE_WRITE_SQL, write)  # 2
            return 201, doc
        except psycopg2.errors.UniqueViolation:
            self._rollback(conn)
            raise Refused(409, "conflict") from None
        except BaseException:
            self._rollback(conn)
            raise


class ProfilesOneCall(Profiles):
    """The same create as ONE round trip: the settings and a call of the function
    `install_one_call` creates, one implicit transaction (what it would take to go below the
    2-round-trip floor: the use case's reads, checks and writes in the database)."""

    def create(self, env_id: str, property_id: str, body: ProfileIn, key: str,
               fingerprint: str) -> tuple[int, bytes]:
        args = {"env": env_id, "prop": property_id, "email_n": body.email.strip().lower()}
        doc, write = self._document(args, body, key, fingerprint)
        try:
            with self._conn().cursor() as cur:
                cur.execute(PROFILE_ONE_CALL_SQL, write)  # 1
                (existing,) = cur.fetchone()
        except psycopg2.errors.NoDataFound:
            raise Refused(404, "not_found") from None
        except psycopg2.errors.UniqueViolation:
            raise Refused(409, "conflict") from None
        if existing is not None:  # ensure: the profile with this email, as it is
            return 200, msgspec.json.encode({"id": str(existing)})
        return 201, doc


class Ready:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.data, resp.content_type = b'{"status":"ok"}', falcon.MEDIA_JSON


def create_app(connect: Callable[[], Any]) -> falcon.App:
    """The bare app over `connect()` (one connection per serving thread)."""
    app = falcon.App()
    app.add_route("/", Ready())
    app.add_route("/v1/properties/{property_id}/reservations", Booking(connect))
    app.add_route("/v1/properties/{property_id}", Property(connect))
    app.add_route("/v1/properties/{property_id}/profiles", Profiles(connect))
    app.add_route(ONE_CALL_PREFIX + "/v1/properties/{property_id}/profiles",
                  ProfilesOneCall(connect))
    from bench import floor_stay  # the rest of a stay (it imports this module)

    floor_stay.add_routes(app, connect)
    return app


def from_environment() -> falcon.App:
    """Gunicorn entry point: PMS_DATABASE_URL, as the service reads it."""
    url = os.environ["PMS_DATABASE_URL"]
    return create_app(lambda: psycopg2.connect(url, application_name="pms-floor"))
