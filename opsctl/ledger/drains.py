"""Drains in the ledger: when the scheduler took a node out of service for a part, and when it
gave it back — the scheduler's own view of time to restore (opsctl drain, resume, and the
--drain of triage, burn-in and accept; opsctl/slurm/containment.py decides what happens).

A row is one node held for one part: drained_at when opsctl set the hold, resumed_at when it
released it. A hold another tool set is not opsctl's to record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opsctl.ledger.drain_times import DrainEpisode, episodes
from opsctl.ledger.incidents import OPEN_NOW
from opsctl.ledger.recording import RecordingSession
from opsctl.ledger.store import Ledger, Record, new_key
from opsctl.ledger.timestamps import Moment, stored, utc_now

if TYPE_CHECKING:
    from opsctl.inventory import Inventory
    from opsctl.ledger.database import Transaction
    from opsctl.ledger.parts import Parts
    from opsctl.slurm.containment import Containment


def open_incident_of(ledger: Ledger, part_id: str) -> str | None:
    """The key of the part's open incident (its fault not yet repaired), else None."""
    rows = ledger.records("incidents", f"part = :part AND {OPEN_NOW}", {"part": part_id}, order="occurred_at DESC, key")
    return rows[0]["key"] if rows else None


def record_containment(containment: Containment, rack: str, by: str, ledger: Ledger | None = None,
                       at: Moment | None = None, inventory: Inventory | None = None,
                       parts: Parts | None = None) -> list[Record]:
    """Record what a drain or resume changed (a containment.Containment that ran, not a dry
    run); returns the rows written or closed."""
    at = stored(at or utc_now())
    written = []
    with RecordingSession(ledger, inventory, parts) as session, session.ledger.write() as tx:
        session.rack(tx, rack)
        for node in containment.nodes:
            for hold in node.added:
                row = {"key": new_key("drn"), "rack": rack, "node": node.node, "part": hold.part,
                       "action": hold.action, "incident_key": _known_incident(tx, hold.incident),
                       "reason": node.reason_after, "drained_at": at, "drained_by": by, "resumed_at": None,
                       "resumed_by": None, "recorded_at": stored(utc_now())}
                Ledger.insert(tx, "drains", row)
                written.append(row)
            for hold in node.released:
                for drain in Ledger.select(tx, "drains", "node = :node AND part = :part AND resumed_at IS NULL",
                                         {"node": node.node, "part": hold.part}):
                    Ledger.update(tx, "drains", drain["key"], {"resumed_at": at, "resumed_by": by})
                    written.append({**drain, "resumed_at": at, "resumed_by": by})
    return written


def _known_incident(tx: Transaction, key: str | None) -> str | None:
    """The incident key if the ledger holds it (a reason typed elsewhere may name another)."""
    if key and tx.row("SELECT key FROM incidents WHERE key = :key", {"key": key}):
        return key
    return None


def drains_of_incident(ledger: Ledger, incident_key: str | None) -> list[DrainEpisode]:
    """The drains that held nodes for an incident (their rows carry its key), as of now: how long
    the scheduler kept its part out, beside the repair's typed times."""
    if not incident_key:
        return []
    return episodes(ledger.records("drains", "incident_key = :key", {"key": incident_key}), utc_now().timestamp())


def validation_of(ledger: Ledger, repair: Record) -> tuple[Record | None, str]:
    """(the run that validates the repair, or None; why, in words): validation_since its opening."""
    return validation_since(ledger, repair["rack"], repair["part"], repair["opened_at"], "the repair opened")


def validation_since(ledger: Ledger, rack: str, part: str, since: str, what: str) -> tuple[Record | None, str]:
    """(the run that validates `part` since `since` — `what` happened then, in words — or None;
    why, in words). The validation is the latest burn-in or acceptance of the rack that finished
    at or after `since` and judged every tray (pass or fail, not incomplete): it passes for the
    part when it names neither the part nor a part holding it or held by it among its failing parts."""
    runs = ledger.records("runs", "rack = :rack AND finished_at >= :since AND verdict IN ('pass', 'fail')",
                          {"rack": rack, "since": since}, order="finished_at DESC, key")
    if not runs:
        return None, f"no complete burn-in or acceptance of {rack} since {what} ({since})"
    run = runs[0]
    still = [p["part"] for p in run["failing_parts"] if p["part"] == part or p["part"].startswith(part + "/")
             or part.startswith(p["part"] + "/")]
    if still:
        return None, f"the {run['kind']} of {run['finished_at']} still fails {', '.join(still)}"
    return run, f"the {run['kind']} of {run['finished_at']} ({run['verdict']}) names no fault of {part}"


def open_drain_of(ledger: Ledger, node: str, part: str) -> Record | None:
    """The ledger's earliest drain of `node` for `part` not yet resumed, else None."""
    rows = ledger.records("drains", "node = :node AND part = :part AND resumed_at IS NULL",
                          {"node": node, "part": part}, order="drained_at, key")
    return rows[0] if rows else None
