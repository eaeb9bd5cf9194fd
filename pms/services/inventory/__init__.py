"""Inventory: rooms sold and held per type and night under night locks (every write of an
inventory night is here), the calendar, recounts, availability searches."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "allotments", "availability", "block_undercut", "holds", "inventory", "inventory_calendar",
    "night_locks",
)

# the store: the modules that hold this capability's SQL, each reference beside its fast path
# (the nights sold under their locks (SPEC rule 6) and the calendar; tests/unit/test_services_plain.py keeps SQL out of the other modules)
STORE_MODULES = ("inventory", "inventory_calendar")
