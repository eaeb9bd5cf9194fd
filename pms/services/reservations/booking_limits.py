"""What one booking may ask of a property: how far ahead any arrival may be, and how
many future reservations one guest session may hold.

- `booking_horizon_days` (property, default 550): an arrival later than the business date plus
  the horizon is 422 `beyond_booking_horizon`, for every caller (create and edit).
- `max_guest_bookings` (property, default 5): a holder session (a token with `holder_id`) may
  hold at most that many CONFIRMED reservations arriving on or after the business date at the
  property; one more is 409 `guest_booking_limit`. Staff and channel bookings are not counted
  against anyone and never limited.

The count runs in the booking's own transaction under the holder's profile row lock (FOR UPDATE
on PostgreSQL; SQLite's writers are serialised by BEGIN IMMEDIATE), so two bookings of one
holder in parallel count one after the other and cannot both pass the last free place. Only
holder bookings pay for the lock and the count: a staff booking adds one date comparison.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from pms import wiring
from pms.context import Ctx
from pms.db.locking import for_update
from pms.domain.states import ReservationStatus
from pms.errors import Conflict, ValidationFailed
from pms.models import Profile, Reservation


def check_horizon(prop: Any, arrival: date, today: date) -> None:
    """422 `beyond_booking_horizon` for an arrival after the property's horizon."""
    last = today + timedelta(days=prop.booking_horizon_days)
    if arrival > last:
        message = (f"arrival_date {arrival} is beyond the property's booking horizon "
                   f"({prop.booking_horizon_days} days: {last} at the latest)")
        raise ValidationFailed(message, code="beyond_booking_horizon",
                               errors=[{"field": "arrival_date", "message": message}])


def check_guest_limit(ctx: Ctx, prop: Any, today: date) -> None:
    """409 `guest_booking_limit` when the holder already holds the property's maximum of
    future reservations (call inside the booking's unit of work, before it writes)."""
    holder = ctx.holder_id
    if holder is None:
        return
    # the holder's bookings queue here: the count below sees every one committed before
    for_update(Profile.select(Profile.id).where(Profile.id == holder)).first()
    held = (Reservation.select(Reservation.id)
            .where((Reservation.property == prop.id) & (Reservation.guest_profile == holder)
                   & (Reservation.status == ReservationStatus.CONFIRMED.value)
                   & (Reservation.arrival_date >= today))
            .count())
    pause = wiring.current().pause_after_guest_count
    if pause is not None:  # TEST-ONLY (pms.wiring): widen the window a second booking needs
        pause()
    if held >= prop.max_guest_bookings:
        raise Conflict(f"a guest may hold at most {prop.max_guest_bookings} future "
                       "reservations at this property", code="guest_booking_limit",
                       limit=prop.max_guest_bookings)
