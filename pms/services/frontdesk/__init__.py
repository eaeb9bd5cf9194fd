"""The front desk: check-in, walk-in, check-out, stay feedback."""
