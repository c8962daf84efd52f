"""The fleet reliability ledger: every burn-in, acceptance, triage and repair, in SQLite (the
default, a file in the user's state dir) or a shared PostgreSQL, and what they measure — MTBI,
time to restore, blast radius, burn-in failure rate, infant mortality — for the TCO.

What other commands call:
    record_burnin(summary)    after `opsctl burnin` / `opsctl accept` (their --json document)
    record_triage(result)     after `opsctl triage` / `opsctl localize`
    reliability_inputs(...)   for `opsctl tco run --from-ledger`
"""

from opsctl.ledger.database import DB_ENV, default_db_path, ledger_url
from opsctl.ledger.fleet_stats import ReliabilityInputs, fleet_statistics, reliability_inputs
from opsctl.ledger.recording import record_burnin, record_incident, record_triage, set_rack
from opsctl.ledger.repairs import close_repair, open_repair
from opsctl.ledger.store import Ledger, open_ledger

__all__ = [
    "DB_ENV", "Ledger", "ReliabilityInputs", "close_repair", "default_db_path", "fleet_statistics", "ledger_url",
    "open_ledger", "open_repair", "record_burnin", "record_incident", "record_triage", "reliability_inputs", "set_rack",
]
