"""A guest's data rights (GDPR): consents as records (consents.py). See
docs/guides/guest-data-rights.md."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "access", "consents", "erasure", "export", "export_jobs", "retention", "schemas",
)
