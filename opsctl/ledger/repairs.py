"""Repairs: opened on a part with an action of the repair model, closed when the part is
replaced (or reseated) and the rack is back in service.

A repair belongs to the incident it fixes. Unless told which (`incident`), opening a repair
takes the rack's latest incident that no repair has claimed yet, preferring one on the same
part or a part inside it (triage may suspect a connector where the tray is replaced); a
repair with no incident to claim is itself the record of a failure, so it opens one.
"""

from opsctl.errors import InputError
from opsctl.ledger.recording import RecordingSession
from opsctl.ledger.parts import rack_of
from opsctl.ledger.store import Ledger, new_key
from opsctl.ledger.timestamps import hours_between, stored, utc_now

NEW_INCIDENT = "new"


def _related(a, b):
    return a == b or a.startswith(f"{b}/") or b.startswith(f"{a}/")


def _claim_incident(tx, rack, part_id, opened_at, wanted):
    if wanted and wanted != NEW_INCIDENT:
        row = tx.row("SELECT key, rack FROM incidents WHERE key = ?", (wanted,))
        if row is None or row["rack"] != rack:
            raise InputError(f"--incident {wanted}: no such incident on rack {rack}")
        return wanted
    if wanted == NEW_INCIDENT:
        return None
    unclaimed = tx.rows(
        "SELECT key, part, occurred_at FROM incidents WHERE rack = ? AND occurred_at <= ? "
        "AND NOT EXISTS (SELECT 1 FROM repairs WHERE repairs.incident_key = incidents.key) "
        "ORDER BY occurred_at DESC, key", (rack, opened_at))
    for row in unclaimed:
        if _related(row["part"], part_id):
            return row["key"]
    return unclaimed[0]["key"] if unclaimed else None


def open_repair(part_id, ledger=None, *, action=None, by, at=None, details=None, incident=None,
                inventory=None, parts=None):
    """Open a repair of `part_id`; returns the repair record (with its incident key)."""
    rack = rack_of(part_id)
    opened_at = stored(at or utc_now(), "--at")
    with RecordingSession(ledger, inventory, parts) as session, session.ledger.write() as tx:
        facts = session.rack(tx, rack)
        part = session.parts.part(part_id, facts)
        repair_action = session.parts.action(action) if action else session.parts.default_action(part, facts)
        if tx.row("SELECT key FROM repairs WHERE part = ? AND closed_at IS NULL", (part.id,)):
            raise InputError(f"{part.id} already has an open repair; close it first (opsctl repair close {part.id})")
        incident_key = _claim_incident(tx, rack, part.id, opened_at, incident)
        if incident_key is None:
            incident_key = new_key("inc")
            Ledger.insert(tx, "incidents", {
                "key": incident_key, "rack": rack, "occurred_at": opened_at, "part": part.id, "kind": part.kind,
                "origin": "repair", "triage_key": None, "note": details, "recorded_at": stored(utc_now())})
        record = {"key": new_key("rep"), "incident_key": incident_key, "rack": rack, "part": part.id,
                  "kind": part.kind, "action": repair_action.name, "details": details,
                  "gpus_idled": session.parts.gpus_idled(part, repair_action, facts),
                  "opened_by": by, "opened_at": opened_at, "rma_ids": [], "recorded_at": stored(utc_now())}
        Ledger.insert(tx, "repairs", record)
        return Ledger.select(tx, "repairs", "key = ?", (record["key"],))[0]


def close_repair(part_id, ledger=None, *, by, at=None, back_in_service=None, replaced=None, rma_ids=(),
                 details=None):
    """Close the open repair of `part_id`: what went in, RMA ids, when the rack was back in service."""
    closed_at = stored(at or utc_now(), "--at")
    in_service = stored(back_in_service, "--back-in-service") if back_in_service else closed_at
    with RecordingSession(ledger) as session, session.ledger.write() as tx:
        rows = Ledger.select(tx, "repairs", "part = ? AND closed_at IS NULL", (part_id,))
        if not rows:
            raise InputError(f"no open repair of {part_id} (opsctl repair list --open)")
        repair = rows[0]
        for name, moment in (("--at", closed_at), ("--back-in-service", in_service)):
            if moment < repair["opened_at"]:
                raise InputError(f"{name} {moment} is before the repair was opened ({repair['opened_at']})")
        changes = {"closed_by": by, "closed_at": closed_at, "back_in_service_at": in_service,
                   "replaced": replaced, "rma_ids": list(rma_ids)}
        if details:
            changes["details"] = f"{repair['details']}; {details}" if repair["details"] else details
        Ledger.update(tx, "repairs", repair["key"], changes)
        return Ledger.select(tx, "repairs", "key = ?", (repair["key"],))[0]


def restore_hours(repair, incidents_by_key):
    """Time to restore service: from the failure (its incident) to back in service, in hours."""
    incident = incidents_by_key.get(repair["incident_key"])
    start = incident["occurred_at"] if incident else repair["opened_at"]
    end = repair["back_in_service_at"] or repair["closed_at"]
    return hours_between(start, end) if end else None
