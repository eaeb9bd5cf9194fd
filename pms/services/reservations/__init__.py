"""Reservations: booking, edit, cancel, stays and room holds, booking limits, notes."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "reservation_notes", "reservations", "room_holds", "stays",
)

# the store: the modules that hold this capability's SQL, each reference beside its fast path
# (the booking's one-statement read, the room pick's reference, the holds; tests/unit/test_services_plain.py keeps SQL out of the other modules)
STORE_MODULES = ("booking_refs", "stays", "room_holds")
