"""The self-service kiosk: its configuration, lookup and sessions."""
