"""Which requests read from a hot standby, and the routing around them.

Routing goes by the operation's intent, not its method. A read (a GET, or an operation declared
`mutates=False`: a search or a price check whose criteria are a body, `POST .../availability`)
on a route of `replica_read` goes to a standby that has replayed past its caller's last write
(pms.db.replicas), else to the primary, and leaves no mark; every other request stays on the
primary, and a write leaves its caller's mark after its commits. Writes a worker made for the
caller count as the caller's: an answer that reports a finished job (`adopt_writes`, read on
the primary after the job's commits) leaves the caller's mark as its own write would, so the
coordinator's reads after a finished rooming list see its reservations. The routes that stay on
the primary even for GET are named in PRIMARY_READS: money and the
front-desk flows that go on to lock (folios, invoices, credit, payment methods, keys, the
end-of-day, kiosk configuration), job status written by workers (not by the caller), and the
platform's own documents. Everything else a GET serves (lists, reports, search, the catalog)
is a read with no write intent.

A replica that fails in the middle of a request (connection lost, query cancelled by replay,
a statement a standby refuses) costs the request nothing: the responder runs again on the
primary (`Routed.fall_back`, called by the `@endpoint` wrapper; a GET writes nothing, so
running it twice changes nothing) and the replica is skipped for a while.
"""

from __future__ import annotations

import logging
from typing import Any

import falcon
import peewee

from pms.db.database import primary_database, read_route, route_reads
from pms.db.failures import driver_error
from pms.db.replicas import Replica, ReplicaSet, caller_mark, remember_write

log = logging.getLogger("pms.api.readroute")

# path fragments of GET routes that read from the primary whatever the caller did
PRIMARY_READS = (
    "/folio",            # folios, a reservation's folio(s), invoices
    "/credit-overrides", "/receivable-account", "/payment-methods", "/admin-provisioning",
    "/gift-vouchers",    # stored value
    "/digital-keys", "/boarding-pass", "/kiosk-config",
    "/end-of-day",       # the business date every posting checks
    "/v1/jobs",          # written by workers, not by the caller: its mark cannot cover them
    "/personal-data",    # an export of a person's data journals who read it
    "/profiles/{id",     # a profile's read is counted in its access journal ({id:uuid})
    "/fiscal-documents", "/fiscal-journal",  # documents an auditor reads as committed
    "/v1/health", "/v1/openapi.json",
)
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def read_intent(method: str, spec: Any = None) -> bool:
    """Whether the operation only reads: a GET, or one declared `mutates=False` (its
    EndpointSpec, as the gate put it on the request)."""
    return method == "GET" or (spec is not None and not spec.mutates)


def replica_read(method: str, template: str, spec: Any = None) -> bool:
    """Whether the operation (METHOD, route template, its EndpointSpec) may read from a hot
    standby."""
    return read_intent(method, spec) and not any(part in template for part in PRIMARY_READS)


def adopt_writes(req: falcon.Request) -> None:
    """The answer reports writes made for the caller by someone else (a finished job's, made
    by a worker): leave the caller's mark as after a write of its own."""
    req.context.adopts_writes = True


class Routed:
    """One GET routed to a replica: its connection scope, and the way back to the primary."""

    __slots__ = ("replica", "replicas", "scope")

    def __init__(self, replicas: ReplicaSet, replica: Replica, scope: Any) -> None:
        self.replicas = replicas
        self.replica = replica
        self.scope = scope

    def leave(self) -> None:
        """Back to the primary for the rest of the request; the replica's scope ends."""
        route_reads(None)
        scope, self.scope = self.scope, None
        if scope is not None:
            try:
                scope.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - a dead connection: nothing to give back
                log.debug("leaving a replica's scope", exc_info=True)

    def fall_back(self, exc: BaseException) -> bool:
        """`exc` ended the responder while it read from the replica: True (and the route is
        the primary's) when the read may run again there, else False (a bug: raise it)."""
        if read_route() is not self.replica.database or not _replica_failure(exc):
            return False
        self.replicas.mark_down(self.replica, exc)
        self.leave()
        try:
            self.replica.database.close()
        except Exception:  # noqa: BLE001 - already gone
            pass
        self.replicas.stats.count("fell_back")
        return True


def _replica_failure(exc: BaseException) -> bool:
    """A failure of the standby rather than of the request: the connection (lost, refused),
    the server going away, a query cancelled by replay (40001), a write refused (25006)."""
    if not isinstance(exc, peewee.PeeweeException):
        return False
    driver = driver_error(exc)
    code = getattr(driver, "pgcode", None)
    if code is None:
        return isinstance(exc, peewee.OperationalError | peewee.InterfaceError)
    if code == "25006":
        log.error("a GET tried to write on a standby; served by the primary")
        return True
    return code.startswith(("08", "57P", "40001"))


class ReadRouteMiddleware:
    """Routes a replica-eligible GET (after the gate, so the caller is known and allowed) and
    leaves the write mark of a write request (after the Idempotency-Key record: it must come
    after this in the middleware list, so its process_response runs first)."""

    def __init__(self, replicas: ReplicaSet | None) -> None:
        self.replicas = replicas

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        route_reads(None)  # safety net: a request starts on the primary, whatever came before

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         params: dict[str, Any]) -> None:
        replicas = self.replicas
        if replicas is None or resource is None or not replica_read(
                req.method, req.uri_template or "", getattr(req.context, "gated", None)):
            return
        ctx = getattr(req.context, "ctx", None)
        if ctx is None:
            return
        primary = primary_database()
        primary_lsn, mark = caller_mark(primary, ctx.env_id, ctx.sub)
        for replica in replicas.candidates():
            scope = replica.database.connection_scope(keep_idle=True)
            scope.__enter__()
            try:
                ok = replicas.usable(replica, mark, primary_lsn)
            except peewee.PeeweeException as exc:
                _quiet_exit(scope, replica)
                replicas.mark_down(replica, exc)
                continue
            if not ok:
                scope.__exit__(None, None, None)
                continue
            route_reads(replica.database)
            req.context.read_replica = Routed(replicas, replica, scope)
            replicas.stats.count("replica")
            return
        replicas.stats.count("primary")

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        routed = getattr(req.context, "read_replica", None)
        if routed is not None:
            req.context.read_replica = None
            routed.leave()
            return
        if self.replicas is None:
            return
        if not getattr(req.context, "adopts_writes", False) and (
                req.method not in WRITE_METHODS
                or read_intent(req.method, getattr(req.context, "gated", None))):
            return
        ctx = getattr(req.context, "ctx", None)
        primary = primary_database()
        if ctx is None or primary is None or primary._connection_in_transaction():
            return  # no caller, or a transaction left open (rolled back: nothing written)
        remember_write(primary, ctx.env_id, ctx.sub)


def _quiet_exit(scope: Any, replica: Replica) -> None:
    try:
        scope.__exit__(None, None, None)
    except Exception:  # noqa: BLE001 - the connection is gone
        pass
    try:
        replica.database.close()
    except Exception:  # noqa: BLE001
        pass
