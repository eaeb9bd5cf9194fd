"""The night audit (end of day) and the reports it feeds."""
