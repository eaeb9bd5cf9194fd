"""The read side: loaders, recounts and the GETs; never a use case."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "allotments", "availability", "catalog", "inventory", "inventory_counts", "lookups",
    "reservations", "stay_through",
)
