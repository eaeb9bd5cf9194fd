"""Reservations: booking, edit, cancel, stays and room holds, booking limits, notes."""
