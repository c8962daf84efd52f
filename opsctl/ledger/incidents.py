"""An incident is one fault episode of one part: from when the fault was first seen until a
repair that claims it is closed (the part back in service).

Everything that names a faulty part — a triage, the same triage recorded again, a second triage
while the fault is still there, a failure said by hand — goes through `open_or_join`: it joins
the part's episode that is still open at that moment, and opens a new one only when there is
none. So each fault counts once in MTBI, however often it was looked at.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opsctl.ledger.store import Ledger, Record

if TYPE_CHECKING:
    from opsctl.ledger.database import Transaction

# An incident still open now, as SQL on the incidents table: no repair claims it, or one that
# does is not closed yet (the fault is being repaired).
_CLAIMED = "SELECT 1 FROM repairs WHERE repairs.incident_key = incidents.key AND repairs.closed_at IS"
OPEN_NOW = f"(NOT EXISTS ({_CLAIMED} NOT NULL) OR EXISTS ({_CLAIMED} NULL))"


def episode_end(tx: Transaction, incident_key: str) -> str | None:
    """When the episode ended: the latest back-in-service of the closed repairs that claim it;
    None while it is open (no repair claims it yet, or one is still open)."""
    repairs = tx.rows("SELECT closed_at, back_in_service_at FROM repairs WHERE incident_key = :key", {"key": incident_key})
    if not repairs or any(r["closed_at"] is None for r in repairs):
        return None
    return max(r["back_in_service_at"] or r["closed_at"] for r in repairs)


def open_episode(tx: Transaction, part_id: str, at: str) -> Record | None:
    """The part's incident whose episode is open at `at` (not ended by then), else None. Of
    several (a triage older than an episode since closed), the one that ended first after `at`."""
    open_at = []
    for incident in Ledger.select(tx, "incidents", "part = :part", {"part": part_id}):
        end = episode_end(tx, incident["key"])
        if end is None or end > at:
            open_at.append((end is None, end or "", incident["occurred_at"], incident))
    return min(open_at, key=lambda entry: entry[:3])[3] if open_at else None


def open_or_join(tx: Transaction, record: Record) -> tuple[Record, bool]:
    """Record the incident `record` describes (key, rack, occurred_at, part, kind, origin, …),
    unless the part's fault is still open then: returns (the incident, True if new)."""
    present = open_episode(tx, record["part"], record["occurred_at"])
    if present is None:
        if Ledger.insert(tx, "incidents", record):
            return record, True
        return Ledger.select(tx, "incidents", "key = :key", {"key": record["key"]})[0], False  # this very record, again
    if record["occurred_at"] < present["occurred_at"]:
        # Seen earlier than recorded so far (an older triage recorded later): the episode began then.
        Ledger.update(tx, "incidents", present["key"], {"occurred_at": record["occurred_at"]})
        present = {**present, "occurred_at": record["occurred_at"]}
    return present, False
