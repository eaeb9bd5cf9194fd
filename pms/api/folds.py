"""What a create that folds into an existing row may hand back (CONTRACT §2: `write`
does not imply `read`).

A profile create whose email or external reference exists, and a reservation create whose
`confirmation_number` exists, still fold (no second row, inventory taken once), but the
existing row's fields go back only to a caller who may read it: the resource's read scope,
and for a reservation also the `sub` that made it (a channel gets its own booking back, never
another channel's). Anyone else gets 409 (`profile_exists`, `confirmation_number_taken`) with
nothing of the row.
"""

from __future__ import annotations

from typing import Any

from pms.api.spec import full_scope
from pms.errors import AlreadyExists
from pms.services.folds import made_by_caller

PROFILES_READ = full_scope("profiles:read")
RESERVATIONS_READ = full_scope("reservations:read")


def hand_back_profile(ctx: Any) -> None:
    """Raise 409 `profile_exists` unless the caller may read the profile the create found."""
    if PROFILES_READ not in ctx.scopes:
        raise AlreadyExists("a profile with this email or external_ref already exists",
                            code="profile_exists")


def hand_back_reservation(ctx: Any, row: Any) -> None:
    """Raise 409 `confirmation_number_taken` unless the caller may read the reservation the
    create folded into and made it."""
    if RESERVATIONS_READ not in ctx.scopes or not made_by_caller(ctx, row,
                                                                 "reservation.created"):
        raise AlreadyExists("this confirmation number is already taken",
                            code="confirmation_number_taken")
