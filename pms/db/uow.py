"""The unit of work: one use case, one transaction, with its outbox and audit rows.

Everything written inside `unit_of_work(ctx)` (domain rows, `uow.emit()` outbox rows and
`uow.audit()` journal rows) commits or rolls back together (SPEC rule 4). The commit rule is
peewee's: a clean exit commits, an exception rolls back; so services validate first and raise to
abort, with no early return inside the block. Post-commit callbacks (a relay nudge) run only after
a successful commit and never raise into the caller. No broker call happens in here.
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import peewee

from pms import wiring
from pms.context import Ctx
from pms.db import failures, versioned
from pms.db.base import AggregateModel, BaseModel, TenantModel
from pms.db.current import CURRENT_UOW, REQUEST_TXN
from pms.db.database import announce_xact, db, is_postgres, read_statements, write_begin_args
from pms.db.scope import tenant_scope
from pms.models.platform import AuditEntry, IdempotencyRecord, OutboxEvent, outbox_partition

log = logging.getLogger("pms.uow")

MASKED_KEY_PARTS = ("secret", "token", "password", "card", "cvc", "cvv", "pan")

class UnitOfWork:
    """What one use case writes besides its domain rows: events, audit, post-commit work."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.events: list[OutboxEvent] = []
        self.audits: list[AuditEntry] = []
        self._after_commit: list[Callable[[], None]] = []
        # work that must run last inside the transaction, after the use case (the
        # ARI events of the nights the use case touched); keyed so a hook registers once
        self._before_commit: dict[str, Callable[[], None]] = {}
        self._born: set[Any] = set()
        # rows locked in this unit of work: (model, id) -> the last version an event gave it
        # here (None before the first), whichever object of the row the event was for
        self._locked: dict[Any, int | None] = {}
        # PostgreSQL: the queued writes (outbox and audit INSERTs, `add`, `write`), sent with
        # the transaction's next statement (the autoflush, pms.db.current) or its COMMIT; an
        # entry that is a (model, id) key is that row's UPDATE, compiled when the batch is
        # taken (`save`), from `_saving`: key -> (the row object, every column?)
        self._batch: list[tuple[str, list[Any]] | tuple[type, Any]] = []
        self._saving: dict[Any, tuple[TenantModel, bool]] = {}
        # writes of rows whose owner's version must move with them (pms.db.versioned)
        self.versioned_writes: list[tuple[type, set[str] | None]] = []
        # what a store read ahead, in a statement of this unit of work, for a later step of it
        # (key: the step's own, e.g. departure_documents.read_ahead_key); the step takes it
        # here first and reads for itself when it is absent. Nothing outlives the unit of work.
        self.read_ahead: dict[Any, Any] = {}
        # the errors queued writes answer for the constraints they may break (`queue`)
        self._refusals: dict[str, Callable[[], Exception]] = {}

    def born(self, row: AggregateModel) -> AggregateModel:
        """Declare `row` created in this unit of work at version 1: its first event takes
        version 1 without the `version + 1` UPDATE. PERF: that UPDATE of a row
        inserted in the same transaction re-ran its foreign-key checks (0.55 ms on the
        server). Automatic: an AggregateModel row inserted at version 1 inside a
        unit of work declares itself (`AggregateModel._write`, `insert_statement`); services
        never call this."""
        if row.version != 1:
            raise RuntimeError(f"{type(row).__name__} {row.id} is not at version 1")
        self._born.add((type(row), row.id))
        return row

    def locked(self, row: AggregateModel) -> AggregateModel:
        """Declare `row` read FOR UPDATE in this unit of work: the version it was read with is
        current and stays so until the commit. Its next event then takes version + 1 with no
        statement of its own (PostgreSQL; PERF: the `version + 1 ... RETURNING` UPDATE was a
        round trip per change), the new version being written by the row's queued UPDATE
        (`save`; the version alone when the use case saved the row otherwise). Automatic
: the locked reads declare their rows (`pms.db.locking.for_update`, a
        `Statement` with `locks=`); services never call this. Returns `row`."""
        version = row.__data__.get("version")
        if version is not None:  # (read without its version, a lock alone: nothing to trust)
            self.locked_version(type(row), row.id, version)
        return row

    def locked_version(self, model: type, row_id: Any, version: int) -> None:
        """`locked` for the row of `model` with that id, read with its lock at `version`."""
        key = (model, row_id)
        last = self._locked.get(key)
        if last is None or version > last:
            self._locked[key] = version  # the version read with the lock: current

    def save(self, row: TenantModel) -> None:
        """Save an existing row: the one save a service calls inside a unit of work. The unit
        of work times the UPDATE (every column, as `row.save()` writes them): on PostgreSQL it
        is queued and goes out with the next statement of the transaction (read-your-writes:
        `PmsPostgresDatabase.execute_sql` sends the queued writes first, in the same round
        trip) or with the COMMIT; elsewhere it is written before the next statement too. So
        what changes on the row before then (its version, by an event) is written as well,
        and whatever reads the row later in the transaction reads what was saved. Called
        again for the row (this object or another of the same row), the last object is the
        one written."""
        self._queue_update(row, every=True)


    def _queue_update(self, row: TenantModel, *, every: bool) -> None:
        """Queue the row's UPDATE in the batch (its place: the first call's): every column
        (the last object given), or its version alone unless every column is queued already."""
        key = (type(row), row.id)
        queued = self._saving.get(key)
        if queued is None:
            self._batch.append(key)
        if every or queued is None:
            self._saving[key] = (row, every)

    def _row_update(self, key: Any) -> tuple[str, list[Any]] | None:
        """A row's queued UPDATE, compiled now (every column, or its version alone), with the
        last version an event gave the row; a row that cannot be compiled so is saved by
        peewee at once (None)."""
        row, every = self._saving.pop(key)
        version = self._locked.get(key)
        if version is not None and version > row.version:
            row.version = version
        statement = row.update_statement(None if every else ("version",))
        if statement is None:
            row.save()
        return statement

    def emit(self, type_: str, subject: AggregateModel, data: dict[str, Any], *,
             property_id: uuid.UUID | None = None) -> OutboxEvent:
        """Insert the CloudEvent row for a change of `subject` (its version goes up by one; a
        row `born` in this unit of work is already at 1).

        A row whose changes are announced under several aggregates (a rate plan's
        `rate_plan`, `rate_schedule`, `restriction` and `rate_plan_allotment` events; a room
        type's `room_type` and `inventory`: the model says `event_streams = True`) still moves
        its own version (its ETag, the rate caches' key), but each event's `aggregateversion`
        is its stream's, (aggregate, subject) (`event_stream`, migration 057): every stream
        rises by one, and the relay orders and parks by the same stream (pms.relay.claim)."""
        if not isinstance(data, dict):
            raise TypeError("event data must be a dict")
        model = type(subject)
        aggregate = type_.split(":")[2] if type_.count(":") >= 3 else model.__name__
        if (model, subject.id) in self._born:
            # inserted at version 1 in this unit of work (born): its first change needs no bump
            self._born.discard((model, subject.id))
            version = 1
        elif (model, subject.id) in self._locked and is_postgres():
            # locked in this unit of work: the version read is current (or the last one given
            # here, whichever object of the row holds it); written with the COMMIT
            last = self._locked[(model, subject.id)]
            version = max(subject.version, last or 0) + 1
            subject.version = self._locked[(model, subject.id)] = version
            self._queue_update(subject, every=False)
        else:
            # One statement: bump and read back (RETURNING works on PostgreSQL and SQLite).
            bumped = (model.update(version=model.version + 1).where(model.id == subject.id)
                      .returning(model.version).tuples().execute())
            row = next(iter(bumped), None)
            if row is None:
                raise RuntimeError(f"cannot emit for {model.__name__} {subject.id}: row not found")
            version = row[0]
            subject.version = version
        if isinstance(data.get("version"), int) and data["version"] != version:
            # the view was built before the bump: `data` is the aggregate at this version
            # (CONTRACT §4), so its version is the event's
            data = {**data, "version": version}
        if getattr(model, "event_streams", False):
            version = self._bump_stream(aggregate, subject.id)
        if property_id is None:
            property_id = getattr(subject, "property_id", None)
        subject_id = str(subject.id)
        event = OutboxEvent.build(  # (peewee's constructor without a setattr per field)
            type=type_,
            subject=subject_id,
            partition=outbox_partition(subject_id),  # derived, as OutboxEvent.create does
            aggregate_type=aggregate,
            aggregate_version=version,
            property_id=property_id,
            idempotency_key=self._idempotency_key(type_, subject, version),
            data=data,
            traceparent=self.ctx.traceparent,
            request_id=self.ctx.request_id,
            time=self.ctx.now,
        )
        self._write(event)
        self.events.append(event)
        return event

    @staticmethod
    def _bump_stream(aggregate: str, subject_id: Any) -> int:
        """The next version of the (aggregate, subject) stream, made on first use; the upsert
        holds the stream row's lock to the COMMIT, so versions follow the commit order."""
        from pms.db.fields import utcnow
        from pms.models.platform import EventStream

        now = utcnow()
        query = (EventStream.insert(id=uuid.uuid4(), aggregate=aggregate, subject=subject_id,
                                    version=1, created_at=now, updated_at=now)
                 .on_conflict(conflict_target=[EventStream.env_id, EventStream.aggregate,
                                               EventStream.subject],
                              update={EventStream.version: EventStream.version + 1,
                                      EventStream.updated_at: now})
                 .returning(EventStream.version))
        return int(next(iter(query.tuples().execute()))[0])

    def _write(self, row: BaseModel) -> None:
        """Insert a journal or outbox row: on PostgreSQL with the batch sent at the end of the
        unit of work together with its COMMIT (PERF, one round trip for them all;
        nothing in a use case reads them back), elsewhere at once."""
        statement = row.insert_statement() if isinstance(row, TenantModel) else None
        if statement is None:
            row.save(force_insert=True)
        else:
            self._batch.append(statement)

    def add(self, row: BaseModel) -> None:
        """Insert a new row, timed by the unit of work: on PostgreSQL queued with the batch
        (sent with the next statement or the COMMIT, as `save`), elsewhere at once. An
        AggregateModel row at version 1 is born (see `born`)."""
        self._write(row)

    def queue(self, statement: Any, values: dict[str, Any], *,
              refusals: dict[str, Callable[[], Exception]] | None = None) -> None:
        """A compiled write of a PostgreSQL fast path (`pms.db.dialect.fast_path`): the
        `statement` (`pms.db.statements`, the env filled in) with `values`, queued (as
        `save`): it goes with the transaction's next statement or its COMMIT.

        `refusals`: constraint name -> the error the unit of work raises, instead of the
        database's IntegrityError, when the write breaks that constraint where it is sent
        (the whole transaction rolls back, as for any error). For a write whose check the use
        case made under its locks, with the constraint as the backstop: it need not wait for
        the write's answer."""
        from pms.db.scope import require_env
        from pms.db.statements import ENV

        compiled = statement.compiled()
        self.write_sql(compiled.sql, list(compiled.params({**values, ENV: require_env()})))
        if refusals:
            self._refusals.update(refusals)

    def refusal(self, exc: BaseException) -> Exception | None:
        """The error a queued write declared for the constraint `exc` breaks, or None."""
        if not self._refusals or not isinstance(exc, peewee.IntegrityError):
            return None
        make = self._refusals.get(failures.describe(exc).get("constraint", ""))
        return make() if make is not None else None

    def write_sql(self, sql: str, params: list[Any]) -> None:
        """A write as SQL text (PostgreSQL), queued (as `save`)."""
        self._batch.append((sql, list(params)))

    def pending(self) -> bool:
        """Whether writes are queued (PostgreSQL: not yet sent)."""
        return bool(self._batch)

    def take_batch(self) -> list[tuple[str, list[Any]]]:
        batch, self._batch = self._batch, []
        out = []
        for entry in batch:
            if isinstance(entry[0], type):  # a row's (model, id); statements are (str, list)
                statement = self._row_update(entry)
                if statement is not None:
                    out.append(statement)
            else:
                out.append(entry)
        self._saving.clear()
        return out

    def flush(self, *, commit: bool) -> None:
        """Send the batched INSERTs (with the COMMIT when `commit`: the transaction's last
        round trip)."""
        send(self.take_batch(), commit=commit)

    def _idempotency_key(self, type_: str, subject: BaseModel, version: int) -> str:
        # Stable per aggregate change: replays of the same row keep it, and a retried request
        # (Idempotency-Key replay) never writes a second row in the first place.
        return f"{type_}:{subject.id}:{version}"

    def audit(self, action: str, target: BaseModel, *, before: dict[str, Any] | None = None,
              after: dict[str, Any] | None = None, reason: str | None = None) -> AuditEntry:
        """Append the journal row: who (from ctx), what, before/after, request id."""
        for value in (before, after):
            if value is not None and not isinstance(value, dict):
                raise TypeError("audit before/after must be dicts")
        entry = AuditEntry.build(  # (peewee's constructor without a setattr per field)
            action=action,
            target_type=type(target).__name__,
            target_id=str(target.id),
            property_id=getattr(target, "property_id", None),
            actor_sub=self.ctx.sub,
            actor_kind=self.ctx.client_kind,
            request_id=self.ctx.request_id,
            before=mask(before),
            after=mask(after),
            reason=reason,
        )
        self._write(entry)
        self.audits.append(entry)
        return entry

    def record(self, aggregate: str, action: str, row: AggregateModel, data: dict[str, Any], *,
               before: dict[str, Any] | None = None, reason: str | None = None,
               property_id: uuid.UUID | None = None) -> dict[str, Any]:
        """The change's audit row (`{aggregate}.{action}`) and its outbox row
        (`hotel:pms:{aggregate}:{action}`), with `data` as the audit "after" (none for a
        deletion) and as the event data. Returns `data`."""
        self.audit(f"{aggregate}.{action}", row, before=before,
                   after=None if action == "deleted" else data, reason=reason)
        self.emit(f"hotel:pms:{aggregate}:{action}", row, data, property_id=property_id)
        return data

    def after_commit(self, fn: Callable[[], None]) -> None:
        self._after_commit.append(fn)

    def before_commit(self, key: str, fn: Callable[[], None]) -> None:
        """Run `fn` once at the end of the use case, still inside its transaction (before the
        versioned-rows check and the COMMIT); a second registration under `key` is ignored.
        What it raises rolls the unit of work back like the use case's own errors."""
        self._before_commit.setdefault(key, fn)

    def run_before_commit(self) -> None:
        while self._before_commit:
            key = next(iter(self._before_commit))
            self._before_commit.pop(key)()

    def run_after_commit(self) -> None:
        callbacks = list(self._after_commit)
        if self.events:
            events = list(self.events)
            # the after-emit hooks of the process's wiring (pms.wiring: the one registry)
            callbacks.extend(lambda hook=hook: hook(events)
                             for hook in wiring.current().after_emit)
        for fn in callbacks:
            try:
                fn()
            except Exception:  # noqa: BLE001 - post-commit work must never fail the request
                log.warning("post-commit callback failed", exc_info=True)


def send(statements: list[tuple[str, list[Any]]], *, commit: bool) -> None:
    """Run compiled statements as ONE round trip (a multi-statement string), with the
    transaction's COMMIT when `commit` (PostgreSQL; with nothing to send, the commit is left to
    the transaction as usual)."""
    if not statements:
        return
    sql = "; ".join(text for text, _ in statements)
    params = [value for _, values in statements for value in values]
    if commit:
        db.obj.execute_and_commit(sql, params)
    else:
        db.execute_sql(sql, params)


def mask(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """A copy of `data` with secret-looking keys masked (never the caller's dict): one pass
    that builds the copy (PERF, a deepcopy and then a second walk cost 18% of a
    booking's app CPU). Dicts and lists are rebuilt (as plain dicts and lists), immutable
    scalars are shared, anything else is deep-copied unmasked (as before: a tuple's or an
    object's contents were copied, never masked)."""
    if data is None:
        return None
    return _mask(data)


_MASK_CACHE: dict[Any, bool] = {}
_MASK_CACHE_MAX = 4096
# values a copy may share with the caller's data: nothing in them can change
_IMMUTABLE = frozenset({str, int, float, bool, type(None), bytes, Decimal, uuid.UUID,
                        datetime, date, time})


def masked_key(key: Any) -> bool:
    """Whether the value under `key` is masked: its text (lower case) contains one of
    MASKED_KEY_PARTS. Memoised per key (a bounded cache: keys are a small vocabulary of field
    names; only the first _MASK_CACHE_MAX are kept)."""
    if type(key) is not str:  # (only plain text is cached: 1 == True, but not as text)
        return _masked_text(key)
    result = _MASK_CACHE.get(key)
    if result is None:
        result = _masked_text(key)
        if len(_MASK_CACHE) < _MASK_CACHE_MAX:
            _MASK_CACHE[key] = result
    return result


def _masked_text(key: Any) -> bool:
    lowered = str(key).lower()
    return any(part in lowered for part in MASKED_KEY_PARTS)


def _mask(value: Any) -> Any:
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if isinstance(value, dict):
        cache = _MASK_CACHE
        out = {}
        for key, item in value.items():
            hidden = cache.get(key) if type(key) is str else None
            if hidden is None:
                hidden = masked_key(key)
            if hidden:
                out[key] = "***"
            elif type(item) in _IMMUTABLE:
                out[key] = item
            else:
                out[key] = _mask(item)
        return out
    if isinstance(value, list):
        return [v if type(v) in _IMMUTABLE else _mask(v) for v in value]
    return copy.deepcopy(value)


class RequestTransaction:
    """A request's own write transaction, opened before its use case runs (by the
    Idempotency-Key middleware, so the key's record commits WITH the change: one commit, no
    separate claim and store transactions; PERF). A unit of work opened while it is
    active joins it instead of opening its own; its post-commit work runs after `finish`.

    `failed` says a joined unit of work ended by an exception: its writes must not commit, even
    when the service then answered (a fold into an existing reservation)."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.units: list[UnitOfWork] = []
        self.failed = False
        self._stack = ExitStack()
        self._token: Any = None

    def open(self) -> RequestTransaction:
        if db.in_transaction():
            raise RuntimeError("a request transaction must not be nested")
        self._stack.enter_context(tenant_scope(self.ctx.env_id))
        self._stack.enter_context(db.atomic(**write_begin_args()))
        announce_xact()  # a COMMIT lost with its connection can be settled
        self._token = _REQUEST_TXN.set(self)
        return self

    def finish(self, *, commit: bool, last: list[tuple[str, list[Any]]] = ()) -> None:
        """Commit, sending the joined units' batched rows and `last` (compiled statements)
        with the COMMIT in one round trip, then run their post-commit work; or roll back."""
        _REQUEST_TXN.reset(self._token)
        if commit:
            try:
                with _refused_by(*self.units):
                    send([*(s for u in self.units for s in u.take_batch()), *last], commit=True)
            except BaseException as exc:
                self._stack.__exit__(type(exc), exc, exc.__traceback__)
                raise
            self._stack.close()
            for uow in self.units:
                uow.run_after_commit()
        else:
            self._stack.__exit__(_RolledBack, _RolledBack(), None)


class _RolledBack(Exception):
    """Internal: hands a rollback to the transaction's context manager."""


_REQUEST_TXN = REQUEST_TXN  # (pms.db.current: the autoflush reads it)


@contextmanager
def one_transaction(ctx: Ctx) -> Iterator[None]:
    """Several use cases as ONE transaction: each unit of work opened inside joins it (as in a
    request's own transaction) and they commit together, or nothing does. Joins the request's
    transaction when one is open (an Idempotency-Key route), else opens one (a
    configuration bundle applies through the domain's own service functions, all or none)."""
    if _REQUEST_TXN.get() is not None and db.in_transaction():
        yield
        return
    txn = RequestTransaction(ctx).open()
    try:
        yield
    except BaseException:
        txn.finish(commit=False)
        raise
    if txn.failed:  # a unit of work failed and its error was swallowed: commit none of it
        txn.finish(commit=False)
        raise RuntimeError("a unit of work inside one_transaction failed")
    changed = next((uow for uow in txn.units if uow.audits), None)
    if ctx.idempotency_claim is not None and changed is not None:
        mark_claim(changed)  # as a unit of work of its own marks it
    txn.finish(commit=True)


_CURRENT_UOW = CURRENT_UOW  # (pms.db.current: read by pms.db.versioned too)


@contextmanager
def unit_of_work(ctx: Ctx) -> Iterator[UnitOfWork]:
    """Open one write transaction for one use case, in the tenant scope of `ctx` (or join the
    request's own transaction, see RequestTransaction)."""
    joined = _REQUEST_TXN.get()
    if joined is not None and db.in_transaction():
        uow = UnitOfWork(ctx)
        token = _CURRENT_UOW.set(uow)
        with tenant_scope(ctx.env_id):
            try:
                with _refused_by(uow):
                    yield uow
                    uow.run_before_commit()
                    if uow.versioned_writes:
                        versioned.check(uow)
            except BaseException:
                joined.failed = True
                raise
            finally:
                _CURRENT_UOW.reset(token)
        joined.units.append(uow)
        return
    if db.in_transaction():
        raise RuntimeError("unit_of_work() must not be nested")
    uow = UnitOfWork(ctx)
    token = _CURRENT_UOW.set(uow)
    try:
        with _refused_by(uow), tenant_scope(ctx.env_id), db.atomic(**write_begin_args()):
            announce_xact()  # a COMMIT lost with its connection can be settled
            yield uow
            uow.run_before_commit()
            if uow.versioned_writes:
                versioned.check(uow)
            if ctx.idempotency_claim is not None and uow.audits:
                mark_claim(uow)
            uow.flush(commit=True)
    finally:
        _CURRENT_UOW.reset(token)
    uow.run_after_commit()


@contextmanager
def _refused_by(*units: UnitOfWork) -> Iterator[None]:
    """An IntegrityError of a constraint a queued write of `units` declared (`queue`'s
    `refusals`) raised as the error it declared (outside the rolled-back transaction)."""
    try:
        yield
    except peewee.IntegrityError as exc:
        refused = next((r for u in units if (r := u.refusal(exc)) is not None), None)
        if refused is None:
            raise
        raise refused from exc


def mark_claim(uow: UnitOfWork) -> None:
    """Mark the request's Idempotency-Key claim `changed`, with the change's target, in the
    change's own transaction (pms.api.idempotency, Recovery): only a still `running`
    claim, so the first change of the request is the one named. Sent with the COMMIT on
    PostgreSQL."""
    first = uow.audits[0]
    query = IdempotencyRecord.update(
        state="changed",
        response_headers={"target_type": first.target_type, "target_id": first.target_id},
    ).where((IdempotencyRecord.id == uow.ctx.idempotency_claim)
            & (IdempotencyRecord.state == "running"))
    if is_postgres():
        sql, params = query.sql()
        uow.write_sql(sql, list(params))
    else:
        query.execute()


@contextmanager
def read_scope(ctx: Ctx) -> Iterator[None]:
    """Reads in the tenant scope of `ctx`, with the env set in the database for RLS (each
    statement its own scoped implicit transaction on PostgreSQL; a transaction on SQLite)."""
    with tenant_scope(ctx.env_id):
        if db.in_transaction():
            yield
            return
        with read_statements():
            yield


