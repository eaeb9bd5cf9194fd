"""Declarations next to each responder: its scope, request schemas and documented responses.

`@endpoint("reservations:write", body=CreateReservation, response=ReservationOut, status=201)`
checks the scope (403), decodes and validates the body (422; unknown fields refused, so no body
can carry env_id, id or status) and the query string, and records what the OpenAPI document needs.
The route table refuses to build an app where any responder lacks a declaration.

`guest=` classifies what a holder session (a token with `holder_id`: guest or traveler) may do
there (CONTRACT §2): "deny" (the default: staff-only, 403 `guest_not_allowed` whatever scopes the
token holds), "open" (no holder-owned rows: catalog reads, searches) or "own" (the service
filters by the holder, so another holder's rows answer 404). A new route is therefore closed to
guests until someone decides otherwise, and tests/api/test_holder_scoping.py checks each class.

Two kiosk classes: "session" (check-in, key issue, check-out: the kiosk scope
stands in for the route's own, and the request must carry the `X-Kiosk-Session` of a lookup,
else 403 `kiosk_session_invalid`; the service checks it is this terminal's live session for
this reservation) and "stand_in" (the walk-in: the kiosk scope stands in, no session; the
service checks the kiosk mode).

`kiosk=` and `anonymous=` classify what a lobby terminal's token (`client_kind` `kiosk`) and an
anonymous token (`client_kind` `anonymous`) may do there, whatever scopes they carry and whether
or not they carry a `holder_id`: "deny" (the default: 403 `kiosk_not_allowed` /
`anonymous_not_allowed`) or "open". A route a terminal must never reach (the kiosk config's
write, which would let a terminal lift its own lockdown) simply keeps the default; nothing but
an explicit `kiosk="open"` lets a kiosk token in. tests/api/test_client_kinds.py derives every
route's classes from the route table.

The checks (`gate`) run in `pms.api.gate.GateMiddleware` before any other work on the route
(the Idempotency-Key lookup included); the responder runs them itself only when that
middleware did not (an app built without it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import falcon
import msgspec

from pms.api.jsonmedia import not_utf8
from pms.api.multipart import MULTIPART, form_fields, is_multipart
from pms.errors import BadRequest, Forbidden, UnsupportedMediaType, ValidationFailed
from pms.schemas.date_bounds import LAST_DATE, check_dates
from pms.schemas.money import check_money_form

SCOPE_PREFIX = "hotel:pms:"
SPEC_ATTR = "__pms_endpoint__"
GUEST_DENY, GUEST_OPEN, GUEST_OWN = "deny", "open", "own"
GUEST_ACCESS = (GUEST_DENY, GUEST_OPEN, GUEST_OWN)
# what kiosk and anonymous tokens may do on a route: nothing unless declared open
KIND_DENY, KIND_OPEN = "deny", "open"
KIND_ACCESS = (KIND_DENY, KIND_OPEN)
# kiosk tokens only: the kiosk scope stands in for the route's own scope, with a
# lookup-bound session (X-Kiosk-Session: check-in, key issue, check-out) or without one (the
# walk-in); the service then admits the terminal (pms.services.kiosk.kiosk_sessions)
KIND_SESSION, KIND_STAND_IN = "session", "stand_in"
KIOSK_ACCESS = (*KIND_ACCESS, KIND_SESSION, KIND_STAND_IN)
KIOSK_WRITE_SCOPE = "hotel:pms:kiosk:write"
SESSION_HEADER = "X-Kiosk-Session"


@dataclass(frozen=True)
class EndpointSpec:
    scope: str
    body: type | None = None
    query: type | None = None
    response: Any = None
    status: int = 200
    summary: str = ""
    description: str = ""
    tags: tuple[str, ...] = ()
    errors: tuple[int, ...] = ()
    extra_scopes: tuple[str, ...] = field(default_factory=tuple)
    mutates: bool = True
    guest: str = GUEST_DENY
    also_status: tuple[int, ...] = ()
    also_media: tuple[str, ...] = ()
    responses: tuple[tuple[int, Any], ...] = ()
    # the body's media type (JSON, a +json type such as merge-patch, or multipart
    # form data), this route's own body limit (None: the service's), request headers it reads
    body_media: str = "application/json"
    max_body: int | None = None
    headers: tuple[tuple[str, bool, str], ...] = ()
    kiosk: str = KIND_DENY
    anonymous: str = KIND_DENY

    def needed_scopes(self) -> tuple[str, ...]:
        return (self.scope, *self.extra_scopes)


def gate(spec: EndpointSpec, ctx: Any) -> None:
    """Who may reach the operation: the declared scopes (403 `missing_scope`), the token's kind
    (kiosk and anonymous tokens only where the route is open to them) and the holder class (a
    holder session only where `guest` is not "deny"). Runs before anything else on the route."""
    scopes = ctx.scopes
    kind = ctx.client_kind
    stand_in = kind == "kiosk" and spec.kiosk in (KIND_SESSION, KIND_STAND_IN)
    # a kiosk token on a kiosk action: its kiosk scope stands in for the route's
    for needed in (KIOSK_WRITE_SCOPE,) if stand_in else spec.needed_scopes():
        if needed not in scopes:
            raise Forbidden(f"this operation needs the scope {needed}", code="missing_scope")
    if kind == "kiosk" and spec.kiosk not in (KIND_OPEN, KIND_SESSION, KIND_STAND_IN):
        raise Forbidden("kiosk tokens may not use this operation", code="kiosk_not_allowed")
    if kind == "kiosk" and spec.kiosk == KIND_SESSION and not getattr(ctx, "kiosk_session", None):
        raise Forbidden(f"a kiosk token needs the {SESSION_HEADER} of a lookup here",
                        code="kiosk_session_invalid")
    if kind == "anonymous" and spec.anonymous != KIND_OPEN:
        raise Forbidden("anonymous tokens may not use this operation",
                        code="anonymous_not_allowed")
    if spec.guest == GUEST_DENY and ctx.holder_id is not None:
        raise Forbidden("guest sessions may not use this operation", code="guest_not_allowed")


def full_scope(scope: str) -> str:
    return scope if scope.startswith(("hotel:", "platform:")) else SCOPE_PREFIX + scope


def endpoint(scope: str, *, body: type | None = None, query: type | None = None,
             response: Any = None, status: int = 200, summary: str = "", description: str = "",
             errors: tuple[int, ...] = (), also: tuple[str, ...] = (),
             mutates: bool | None = None, guest: str = GUEST_DENY,
             also_status: tuple[int, ...] = (),
             also_media: tuple[str, ...] = (),
             responses: dict[int, Any] | None = None,
             body_media: str = "application/json", max_body: int | None = None,
             headers: tuple[tuple[str, bool, str], ...] = (), kiosk: str = KIND_DENY,
             anonymous: str = KIND_DENY) -> Callable[..., Any]:
    """Declare a responder's scope and schemas (see module docstring).

    `mutates=False` marks a POST that changes nothing (a search, a price check): it writes no
    outbox or audit row. Other POST/PUT/PATCH/DELETE responders write exactly one of each.
    `guest` is the holder-session class (module docstring). `also_status` lists other success
    statuses the responder answers with the same response body (e.g. 200 when a create folds
    into an existing row), so the OpenAPI document names them; `also_media` the other media
    types a success may have (an invoice as application/pdf); `responses` other success
    statuses with a body of their own type (`{200: NightAuditRunOut}` beside a 202 job).
    `body_media` is the body's media type (a `+json` type is decoded as JSON;
    `multipart/form-data` is parsed into `body`'s fields, file parts as bytes); `max_body` this
    operation's own body limit (the body middleware applies it by method and path); `headers`
    the request headers it reads, as (name, required, description), for the OpenAPI document;
    `kiosk` and `anonymous` the classes of those token kinds (module docstring).
    """
    if guest not in GUEST_ACCESS:
        raise ValueError(f"guest must be one of {GUEST_ACCESS}, not {guest!r}")
    if kiosk not in KIOSK_ACCESS:
        raise ValueError(f"kiosk must be one of {KIOSK_ACCESS}, not {kiosk!r}")
    if anonymous not in KIND_ACCESS:
        raise ValueError(f"anonymous must be one of {KIND_ACCESS}, not {anonymous!r}")
    if kiosk == KIND_SESSION:  # the header, documented on every session route
        headers = (*headers, (SESSION_HEADER, False,
                              "Kiosk tokens only: the kiosk_session of a lookup (POST "
                              ".../kiosk/lookup) for this reservation, bound to the terminal; "
                              "it idles out after 70 s without use"))
    spec = EndpointSpec(scope=full_scope(scope), body=body, query=query, response=response,
                        status=status, summary=summary, description=description, errors=errors,
                        extra_scopes=tuple(full_scope(s) for s in also),
                        mutates=mutates if mutates is not None else not scope.endswith(":read"),
                        guest=guest, also_status=also_status, also_media=also_media,
                        responses=tuple(sorted((responses or {}).items())),
                        body_media=body_media, max_body=max_body, headers=headers,
                        kiosk=kiosk, anonymous=anonymous)
    body_decoder: Any = None
    if body is not None:
        body_decoder = (_FormDecoder(body) if body_media == MULTIPART
                        else msgspec.json.Decoder(body))

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def responder(self: Any, req: falcon.Request, resp: falcon.Response, **params: Any) -> Any:
            context = req.context
            if getattr(context, "gated", None) is not spec:  # GateMiddleware did not run
                gate(spec, context.ctx)
            if body_decoder is not None:
                params["body"] = decode_body(req, body_decoder)
            if query is not None:
                params["query"] = decode_query(req, query)
            routed = getattr(context, "read_replica", None)  # a GET on a standby
            if routed is None:
                return fn(self, req, resp, **params)
            try:
                return fn(self, req, resp, **params)
            except Exception as exc:
                if not routed.fall_back(exc):  # the standby failed: once more on the primary
                    raise
            return fn(self, req, resp, **params)

        setattr(responder, SPEC_ATTR, spec)
        return responder

    return decorate


def spec_of(responder: Any) -> EndpointSpec | None:
    return getattr(responder, SPEC_ATTR, None)


def _field_errors(exc: msgspec.ValidationError) -> list[dict[str, str]]:
    message = str(exc)
    path = ""
    if " - at `" in message:
        message, _, rest = message.partition(" - at `")
        path = rest.rstrip("`")
        path = path.removeprefix("$.").removeprefix("$")
    elif message.startswith("Object contains unknown field"):
        path = message.split("`")[1] if "`" in message else ""
    return [{"field": path or "body", "message": message}]


# the year every date after LAST_DATE is in, when it is the year before the calendar's last
# (b"" otherwise, found in every body: every body is walked)
_MAY_BE_BEYOND = (b"9999" if (LAST_DATE.year, LAST_DATE.month, LAST_DATE.day) == (9998, 12, 31)
                  else b"")


def decode_body(req: falcon.Request, decoder: Any) -> Any:
    if isinstance(decoder, _FormDecoder):
        return decoder.decode(req)
    raw: bytes = getattr(req.context, "raw_body", b"") or b""
    if not raw.strip():
        raise ValidationFailed("a JSON request body is required",
                               errors=[{"field": "body", "message": "required"}])
    content_type = (req.content_type or "").split(";")[0].strip().lower()
    if content_type and not (content_type == "application/json" or content_type.endswith("+json")):
        raise UnsupportedMediaType("request bodies must be application/json")
    try:
        value = decoder.decode(raw)
    except msgspec.ValidationError as exc:
        errors = _field_errors(exc)
        raise ValidationFailed(f"the request body is not valid: {errors[0]['message']}",
                               errors=errors) from exc
    except msgspec.DecodeError as exc:
        raise BadRequest(f"the request body is not valid JSON: {exc}", code="malformed_json") from exc
    except UnicodeDecodeError as exc:  # (msgspec raises it for bad bytes inside a string)
        raise not_utf8(exc) from exc
    # Money fields as the client wrote them (a decimal string; msgspec accepts any Decimal).
    check_money_form(decoder.type, getattr(req.context, "json_body", None))
    # one bound for every date (pms.schemas.date_bounds). PERF: the walk of the decoded body
    # only when its bytes may name a date after LAST_DATE (9998-12-31): such a date is in
    # year 9999, written as such or with escaped digits (a strict decoder reads dates from
    # strings only)
    if _MAY_BE_BEYOND in raw or b"\\u" in raw:
        check_dates(value)
    return value


class _FormDecoder:
    """A `multipart/form-data` body into its schema: file parts as bytes, text parts
    converted as query strings are (`"true"` is a boolean)."""

    def __init__(self, schema: type) -> None:
        self.schema = schema
        self.binary = {f.name for f in msgspec.structs.fields(schema) if f.type is bytes
                       or getattr(f.type, "__origin__", None) is bytes}

    def decode(self, req: falcon.Request) -> Any:
        raw: bytes = getattr(req.context, "raw_body", b"") or b""
        if not is_multipart(req.content_type):
            raise UnsupportedMediaType("this request body must be multipart/form-data")
        fields = form_fields(raw, req.content_type or "")
        for name in self.binary & fields.keys():
            if isinstance(fields[name], str):  # a text part where a file was expected
                fields[name] = fields[name].encode()
        try:
            return msgspec.convert(fields, self.schema, strict=False)
        except msgspec.ValidationError as exc:
            errors = _field_errors(exc)
            raise ValidationFailed(f"the form is not valid: {errors[0]['message']}",
                                   errors=errors) from exc


def decode_query(req: falcon.Request, schema: type) -> Any:
    params = {k: v for k, v in req.params.items() if not isinstance(v, list)}
    for key, value in req.params.items():
        if isinstance(value, list):
            params[key] = value[-1]
    try:
        value = msgspec.convert(params, schema, strict=False)
    except msgspec.ValidationError as exc:
        errors = _field_errors(exc)
        raise ValidationFailed(f"the query string is not valid: {errors[0]['message']}",
                               errors=errors) from exc
    check_dates(value)
    return value
