"""Acceptance before rack handover: burn-in judged by a versioned criteria file."""
