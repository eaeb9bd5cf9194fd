"""A hotel's month, simulated through the HTTP API with its invariants checked after every step.

`machine.HotelMonth` is a Hypothesis rule-based state machine (seeded, reproducible, shrinking):
every rule is something a front desk, a channel, a guest, a kiosk, a group coordinator, a
revenue manager or the night auditor does, sent over HTTP to the web process started from the
Procfile's `web` line (with the `worker` and `relay` lines on PostgreSQL). After every step,
`invariants.check_all` recounts the stored rows and asks the API, and fails the run on the first
broken rule. `stack` starts the processes; `python -m tests.simulation` (`make simulate`) runs it
at length.
"""
