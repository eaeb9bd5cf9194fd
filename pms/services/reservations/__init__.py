"""Reservations: booking, edit, cancel, stays and room holds, booking limits, notes."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "reservation_notes", "reservations", "room_holds", "stays",
)
