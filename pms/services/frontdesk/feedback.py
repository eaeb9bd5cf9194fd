"""Stay feedback: one row per reservation (unique in the database); a repeat
updates the rating and comment (SPEC Errors: not an error), also when two arrive at once.

Which stays may be rated: CHECKED_IN and CHECKED_OUT (the guest has stayed or is staying);
CONFIRMED, CANCELLED and NO_SHOW answer 409 feedback_not_allowed. Guests rate only their own
stays (another holder's reservation answers 404).

Concurrency: the row is inserted with ON CONFLICT DO NOTHING (a concurrent first submission
waits on the unique index and then finds the winner's row), then locked and updated, so two
submissions at once leave one row and both answer.
"""

from __future__ import annotations

import uuid

from pms import wiring
from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import ReservationStatus
from pms.errors import FeedbackNotAllowed
from pms.models import Feedback, Reservation
from pms.queries.lookups import load_reservation
from pms.schemas import feedback as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property
from pms.services.references import body_reference

RATEABLE = frozenset({ReservationStatus.CHECKED_IN.value, ReservationStatus.CHECKED_OUT.value})


def feedback_out(row: Feedback) -> s.FeedbackOut:
    return s.FeedbackOut(id=row.id, property_id=row.property_id,
                         reservation_id=row.reservation_id, rating=row.rating,
                         comment=row.comment, created_at=row.created_at,
                         updated_at=row.updated_at)


def submit(ctx: Ctx, property_id: uuid.UUID, body: s.FeedbackIn) -> tuple[Feedback, bool]:
    """Rate a stay; returns (row, created).

    Raises:
        NotFound: no such reservation (a guest session: of its own).
        FeedbackNotAllowed (409): the stay is not CHECKED_IN or CHECKED_OUT.
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        load_property(property_id)  # an unknown property in the path is 404 before the body's id
        with body_reference("reservation_id", "no such reservation", ctx):
            stay = load_reservation(ctx, property_id, body.reservation_id)
        if stay.status not in RATEABLE:
            raise FeedbackNotAllowed(f"a {stay.status} stay cannot be rated (only CHECKED_IN "
                                     "and CHECKED_OUT stays)", status_now=stay.status)
        Feedback.insert(
            property=property_id, reservation=stay.id, rating=body.rating,
            comment=body.comment, submitted_by=ctx.sub).on_conflict_ignore().execute()
        row = for_update(Feedback.select().where(Feedback.reservation == stay.id)).get()
        created = row.version == 0  # (a committed row has had its event: version >= 1)
        pause = wiring.current().pause_after_feedback_read
        if pause is not None:  # TEST-ONLY (pms.wiring): widen the window a second rating needs
            pause()
        before = None if created else to_data(feedback_out(row))
        row.rating, row.comment, row.submitted_by = body.rating, body.comment, ctx.sub
        row.updated_at = ctx.now
        row.save()
        uow.record("feedback", "submitted" if created else "updated", row,
                   to_data(feedback_out(row)), before=before, property_id=property_id)
    return row, created


def list_feedback(ctx: Ctx, property_id: uuid.UUID, query: s.FeedbackQuery) -> Page[Feedback]:
    """The property's feedback, or one stay's (`reservation_id`); a guest session sees only
    that of its own stays."""
    with read_scope(ctx):
        load_property(property_id)
        select = Feedback.select().where(Feedback.property == property_id)
        if query.reservation_id is not None:
            stay = load_reservation(ctx, property_id, query.reservation_id)
            select = select.where(Feedback.reservation == stay.id)
        if ctx.holder_id is not None:
            select = select.where(Feedback.reservation.in_(
                Reservation.select(Reservation.id).where(
                    (Reservation.guest_profile == ctx.holder_id)
                    & (Reservation.property == property_id))))
        return paginate(select, Feedback, limit=query.limit, cursor=query.cursor)
