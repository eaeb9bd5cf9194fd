"""Every error the API may show, with its HTTP status and stable snake_case code.

Services raise these; `pms.api.problems` renders them as problem+json in one place. Services never
raise falcon errors and never build response bodies.
"""

from __future__ import annotations

from typing import Any


class PmsError(Exception):
    """Base for every error the API may show. Subclasses set status, code and title."""

    status: int = 500
    code: str = "internal_error"
    title: str = "Internal error"

    def __init__(self, detail: str, *, code: str | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.extra = extra


class BadRequest(PmsError):
    """Raised when a request is malformed (bad JSON, bad header)."""

    status, code, title = 400, "bad_request", "Bad request"


class Unauthorized(PmsError):
    """Raised when the bearer token is missing or invalid."""

    status, code, title = 401, "unauthorized", "Unauthorized"


class Forbidden(PmsError):
    """Raised when the caller lacks the scope or acts outside its tenant."""

    status, code, title = 403, "forbidden", "Forbidden"


class NotFound(PmsError):
    """Raised when a row does not exist, or belongs to another env or holder."""

    status, code, title = 404, "not_found", "Not found"


class Conflict(PmsError):
    """Raised when the current state forbids the change."""

    status, code, title = 409, "conflict", "Conflict"


class PayloadTooLarge(PmsError):
    """Raised when the request body is over the limit."""

    status, code, title = 413, "payload_too_large", "Payload too large"


class UriTooLong(PmsError):
    """Raised when the request target (path and query) is over the documented limit."""

    status, code, title = 414, "uri_too_long", "URI too long"


class HeaderTooLarge(PmsError):
    """Raised when a request header (or all of them) is over the documented limit."""

    status, code, title = 431, "header_too_large", "Request header fields too large"


class UnsupportedMediaType(PmsError):
    """Raised when a body is not JSON."""

    status, code, title = 415, "unsupported_media_type", "Unsupported media type"


class ValidationFailed(PmsError):
    """Raised when a request is well-formed but its values are not acceptable."""

    status, code, title = 422, "validation_failed", "Invalid request"


class Busy(PmsError):
    """Raised when a lock could not be had in time; sent with Retry-After."""

    status, code, title = 503, "busy", "Try again"


class Draining(PmsError):
    """Raised for new requests while the instance shuts down."""

    status, code, title = 503, "draining", "Shutting down"


class DependencyUnavailable(PmsError):
    """Raised when a platform service (payments, ledger, email) cannot be reached."""

    status, code, title = 503, "dependency_unavailable", "Dependency unavailable"


# -- conflicts with a promised code -------------------------------------------------------------

class ReservationNotEditable(Conflict):
    """Raised when editing a CANCELLED, CHECKED_OUT or NO_SHOW reservation."""

    code = "reservation_not_editable"


class KeyRequiresCheckedIn(Conflict):
    """Raised when issuing a key for a reservation that is not CHECKED_IN."""

    code = "key_requires_checked_in"


class FolioNotClosable(Conflict):
    """Raised when a folio with an open balance would be closed (check-out): go to the desk."""

    code = "folio_not_closable"


class FolioClosed(Conflict):
    """Raised when posting to a CLOSED folio."""

    code = "folio_closed"


class RoomTypeUnavailable(Conflict):
    """Raised when the room type has no sellable room for a night of the stay."""

    code = "room_type_unavailable"


class AllotmentExhausted(Conflict):
    """Raised when a booking would sell more rooms on a rate plan than its allotment allows on
    some night (`nights` in the problem body lists them)."""

    code = "allotment_exhausted"


class RoomUnavailable(Conflict):
    """Raised when a room cannot be given (occupied, out of order, wrong type)."""

    code = "room_unavailable"


class InvalidTransition(Conflict):
    """Raised when a state change is not in the transition table."""

    code = "invalid_transition"


class StillReferenced(Conflict):
    """Raised when deleting a row other rows still point to."""

    code = "still_referenced"


class AlreadyExists(Conflict):
    """Raised when a unique business identity (property code, room number) is taken."""

    code = "already_exists"


class IdempotencyKeyInUse(Conflict):
    """Raised when the same Idempotency-Key is still being processed."""

    code = "idempotency_key_in_use"


class IdempotencyResponseLost(Conflict):
    """Raised when an Idempotency-Key's request changed something but its response was never
    stored (the process died in between): the change stands, the response cannot be replayed."""

    code = "idempotency_response_lost"


class IdempotencyKeyMismatch(ValidationFailed):
    """Raised when an Idempotency-Key is reused for a different request."""

    code = "idempotency_key_mismatch"


class CardDataRefused(ValidationFailed):
    """Raised when a body carries something that looks like a card number."""

    code = "card_data_refused"


class PaymentDeclined(PmsError):
    """Raised when the payments service declines."""

    status, code, title = 402, "payment_declined", "Payment declined"


class MaintenanceConflict(Conflict):
    """Raised when taking a room out of order/service would take away a sold or held room-night."""

    code = "maintenance_conflict"


# -- settings and images ---------------------------------------------------------------

class PreconditionFailed(PmsError):
    """Raised when If-Match names a version that is no longer current."""

    status, code, title = 412, "precondition_failed", "Precondition failed"


class PreconditionRequired(PmsError):
    """Raised when a change that needs If-Match (module settings) comes without it."""

    status, code, title = 428, "precondition_required", "Precondition required"


# -- digital keys, kiosk config, feedback ----------------------------------------------

class KeyLimitReached(Conflict):
    """Raised when a stay already holds max_keys_per_stay live keys (staff may override)."""

    code = "key_limit_reached"


class KeyNotActive(Conflict):
    """Raised when activating or deactivating a REVOKED or EXPIRED key."""

    code = "key_not_active"


class FeedbackNotAllowed(Conflict):
    """Raised when rating a stay that has not started (or never will): not in house or out."""

    code = "feedback_not_allowed"

# -- a commit whose outcome the database could not tell ------------------

class CommitOutcomeUnknown(PmsError):
    """Raised when the connection was lost while the transaction's COMMIT was on its way and the
    database could not say afterwards whether it committed (pms.db.commit_outcome). A 500, which
    the load balancer never retries: the change may have been made."""

    status, code, title = 500, "commit_outcome_unknown", "Commit outcome unknown"
# -- corporate accounts ---------------------------------------------------------------

class CompanyRoleForbidden(Forbidden):
    """Raised when a company user's role does not allow the operation (the role table of pms.domain.companies)."""

    code = "company_role_forbidden"


class LastCompanyAdmin(Conflict):
    """Raised when removing the last ADMIN of a company that has no identity provider."""

    code = "last_company_admin"


class CompanyAdminExists(Conflict):
    """Raised when provisioning an admin for a company that already has another ADMIN bound."""

    code = "company_admin_exists"


class ReceivableAccountRequired(Conflict):
    """Raised when approving BILL_TO_COMPANY for a company without a receivable account."""

    code = "receivable_account_required"


class ReceivableAccountInUse(Conflict):
    """Raised when a receivable account's currency would change while anything is open on it
    (a balance or credit, stays routed to the company, ACTIVE credit overrides)."""

    code = "receivable_account_in_use"


class PaymentMethodInUse(Conflict):
    """Raised when deleting a company payment method that open stays are routed through."""

    code = "payment_method_in_use"


class CreditLimitExceeded(Conflict):
    """Raised when billing to a company would take its exposure over its credit limit."""

    code = "credit_limit_exceeded"


class SecondStaffRequired(Forbidden):
    """Raised when the staff user who requested a credit override tries to approve it."""

    code = "second_staff_required"


# -- banquet events on function spaces ------------------------------------------------

class SpaceTaken(Conflict):
    """Raised when an event in a deducting state would overlap another on an element space
    (setup and tear-down included); `conflicting_event_id` names the event in the way."""

    code = "space_taken"


class SpaceOutOfOrder(Conflict):
    """Raised when an event would use a function space during one of its out-of-order periods."""

    code = "space_out_of_order"


class StockExhausted(Conflict):
    """Raised when overlapping bookings of an event resource item would exceed its stock."""

    code = "stock_exhausted"


# -- the kiosk --------------------------------------------------------------------------

class KioskLocked(Conflict):
    """Raised for every kiosk action (lookup, check-in, key, check-out, walk-in) while the
    property's kiosk config is in lockdown."""

    code = "kiosk_locked"


class KioskModeDisabled(Conflict):
    """Raised when the kiosk action's mode is not in the property's enabled_modes."""

    code = "kiosk_mode_disabled"


class TooManyLookups(PmsError):
    """Raised when a terminal spent its failed-lookup budget; sent with Retry-After."""

    status, code, title = 429, "too_many_lookups", "Too many failed lookups"


class KioskSessionInvalid(Forbidden):
    """Raised when a kiosk token's X-Kiosk-Session is missing, unknown, another terminal's,
    ended or idle past its timeout: the terminal starts over with a lookup."""

    code = "kiosk_session_invalid"
