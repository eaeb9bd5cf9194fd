"""The night audit (end of day) and the reports it feeds."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "end_of_day", "lateness", "reports",
)
