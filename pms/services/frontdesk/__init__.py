"""The front desk: check-in, walk-in, check-out, stay feedback."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "checkin", "checkout", "feedback",
)

# the store: the modules that hold this capability's SQL, each reference beside its fast path
# (the room pick, occupation and vacating (SPEC rule 5) and the stay reads; tests/unit/test_services_plain.py keeps SQL out of the other modules)
STORE_MODULES = ("desk_writes", "stay_reads")
