"""A guest's data rights (GDPR): consents as records (consents.py). See
docs/guides/guest-data-rights.md."""
