"""The self-service kiosk: its configuration, lookup and sessions."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "kiosk", "kiosk_addons", "kiosk_folio", "kiosk_lookup", "kiosk_sessions", "kiosk_walk_in",
)
