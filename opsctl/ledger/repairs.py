"""Repairs: opened on a part with an action of the repair model, closed when the part is
replaced (or reseated) and the rack is back in service.

A repair belongs to the incident it fixes. Unless told which (`incident`), opening a repair
takes an open incident (incidents.py: no repair of it closed yet) of the same part, or of a
part it holds or that holds it (parts.py, by the topology: triage may suspect a connector
where the tray is replaced) — its own part's first, then one no other repair works on, then
the latest. Another part's incident is never taken, so it is never counted as this part's
kind. With none to claim, the repair is itself the record of a failure: it opens an incident
of its own part.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from opsctl.errors import InputError
from opsctl.ledger.incidents import OPEN_NOW
from opsctl.ledger.recording import RecordingSession
from opsctl.ledger.parts import rack_of
from opsctl.ledger.store import Ledger, Record, new_key
from opsctl.ledger.timestamps import Moment, hours_between, stored, utc_now

if TYPE_CHECKING:
    from opsctl.inventory import Inventory
    from opsctl.ledger.database import Transaction
    from opsctl.ledger.parts import Parts, RackFacts

NEW_INCIDENT = "new"


def _claim_incident(tx: Transaction, parts: Parts, facts: RackFacts, part_id: str, opened_at: str,
                    wanted: str | None) -> Record | None:
    """The incident the repair of `part_id` fixes, as a row; None when it must open its own."""
    if wanted == NEW_INCIDENT:
        return None
    if wanted:
        rows = Ledger.select(tx, "incidents", "key = :key", {"key": wanted})
        if not rows or rows[0]["rack"] != facts.name:
            raise InputError(f"--incident {wanted}: no such incident on rack {facts.name}")
        if not parts.related(rows[0]["part"], part_id, facts):
            raise InputError(f"--incident {wanted} is a fault of {rows[0]['part']}, which neither holds {part_id} "
                             f"nor is held by it; repair that part, or say --incident {NEW_INCIDENT}")
        return rows[0]
    still_open = Ledger.select(tx, "incidents", f"rack = :rack AND occurred_at <= :opened_at AND {OPEN_NOW}",
                               {"rack": facts.name, "opened_at": opened_at}, order="occurred_at DESC, key")
    related = [row for row in still_open if parts.related(row["part"], part_id, facts)]

    def preference(row: Record) -> tuple[bool, bool]:  # its own part's first, then one no repair works on yet; the latest of those
        claimed = tx.row("SELECT key FROM repairs WHERE incident_key = :key", {"key": row["key"]}) is not None
        return row["part"] != part_id, claimed
    return min(related, key=preference) if related else None  # min keeps the latest first among equals


def open_repair(part_id: str, ledger: Ledger | None = None, *, action: str | None = None, by: str,
                at: Moment | None = None, details: str | None = None, incident: str | None = None,
                inventory: Inventory | None = None, parts: Parts | None = None) -> Record:
    """Open a repair of `part_id`; returns the repair record (with its incident key)."""
    rack = rack_of(part_id)
    opened_at = stored(at or utc_now(), "--at")
    with RecordingSession(ledger, inventory, parts) as session, session.ledger.write() as tx:
        facts = session.rack(tx, rack)
        part = session.parts.part(part_id, facts)
        repair_action = session.parts.action(action) if action else session.parts.default_action(part, facts)
        if tx.row("SELECT key FROM repairs WHERE part = :part AND closed_at IS NULL", {"part": part.id}):
            raise InputError(f"{part.id} already has an open repair; close it first (opsctl repair close {part.id})")
        claimed = _claim_incident(tx, session.parts, facts, part.id, opened_at, incident)
        opened = claimed is None
        if claimed is None:
            claimed = {"key": new_key("inc"), "rack": rack, "occurred_at": opened_at, "part": part.id,
                       "kind": part.kind, "origin": "repair", "triage_key": None, "note": details,
                       "recorded_at": stored(utc_now())}
            Ledger.insert(tx, "incidents", claimed)
        record = {"key": new_key("rep"), "incident_key": claimed["key"], "rack": rack, "part": part.id,
                  "kind": part.kind, "action": repair_action.name, "details": details,
                  "gpus_idled": session.parts.gpus_idled(part, repair_action, facts),
                  "opened_by": by, "opened_at": opened_at, "rma_ids": [], "recorded_at": stored(utc_now())}
        Ledger.insert(tx, "repairs", record)
        repair = Ledger.select(tx, "repairs", "key = :key", {"key": record["key"]})[0]
    # What it repairs, for the command to say: an open incident it took, or the one it opened.
    repaired = {c: claimed[c] for c in ("key", "part", "kind", "occurred_at", "origin")}
    return {**repair, "incident": repaired, "incident_opened": opened}


def close_repair(part_id: str, ledger: Ledger | None = None, *, by: str, at: Moment | None = None,
                 back_in_service: Moment | None = None, replaced: str | None = None, rma_ids: Iterable[str] = (),
                 details: str | None = None) -> Record:
    """Close the open repair of `part_id`: what went in, RMA ids, when the rack was back in service."""
    closed_at = stored(at or utc_now(), "--at")
    in_service = stored(back_in_service, "--back-in-service") if back_in_service else closed_at
    with RecordingSession(ledger) as session, session.ledger.write() as tx:
        rows = Ledger.select(tx, "repairs", "part = :part AND closed_at IS NULL", {"part": part_id})
        if not rows:
            raise InputError(f"no open repair of {part_id} (opsctl repair list --open)")
        repair = rows[0]
        for name, moment in (("--at", closed_at), ("--back-in-service", in_service)):
            if moment < repair["opened_at"]:
                raise InputError(f"{name} {moment} is before the repair was opened ({repair['opened_at']})")
        if in_service < closed_at:  # back in service before the repair ended: times out of order
            raise InputError(f"--back-in-service {in_service} is before the repair was closed ({closed_at})")
        changes = {"closed_by": by, "closed_at": closed_at, "back_in_service_at": in_service,
                   "replaced": replaced, "rma_ids": list(rma_ids)}
        if details:
            changes["details"] = f"{repair['details']}; {details}" if repair["details"] else details
        Ledger.update(tx, "repairs", repair["key"], changes)
        return Ledger.select(tx, "repairs", "key = :key", {"key": repair["key"]})[0]


def restore_hours(repair: Record, incidents_by_key: Mapping[str, Record]) -> float | None:
    """Time to restore service: from the failure (its incident) to back in service, in hours."""
    incident = incidents_by_key.get(repair["incident_key"])
    start = incident["occurred_at"] if incident else repair["opened_at"]
    end = repair["back_in_service_at"] or repair["closed_at"]
    return hours_between(start, end) if end else None
