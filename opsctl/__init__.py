"""opsctl: the operator's side of burn-in, acceptance, triage, alerting and TCO for GPU racks."""

__version__ = "0.1.0"
