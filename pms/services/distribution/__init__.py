"""Distribution: availability, rates and inventory (ARI) events, their digest and re-push to channels."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "ari_events", "ari_push", "hold_releases",
)
