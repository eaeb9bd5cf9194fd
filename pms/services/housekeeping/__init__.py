"""Housekeeping: room status, tasks, out-of-order and out-of-service periods."""
