"""The ledger's schema, as numbered migrations recorded in the database itself.

Each migration runs once, in its own write transaction, and adds its number to
`schema_migrations`; a ledger written by a newer opsctl is refused rather than misread. SQL
here is portable between SQLite and PostgreSQL: TEXT keys, ISO-8601 UTC times as TEXT (they
sort as time), JSON lists as TEXT, booleans as 0/1.

Rows are keyed by text keys rather than serial numbers, so a ledger exported from one
database imports into another without renumbering, and importing twice adds nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opsctl.errors import InputError

if TYPE_CHECKING:
    from opsctl.ledger.database import PostgresDatabase, SqliteDatabase

MIGRATIONS = [
    (1, "racks, burn-in runs, triages, incidents and repairs", [
        """CREATE TABLE racks (
            rack TEXT PRIMARY KEY,
            model TEXT NOT NULL,
            gpus INTEGER NOT NULL,
            handover_at TEXT,          -- into service: the acceptance that passed, or said outright
            retired_at TEXT,
            recorded_at TEXT NOT NULL)""",
        """CREATE TABLE runs (
            key TEXT PRIMARY KEY,
            rack TEXT NOT NULL REFERENCES racks (rack),
            kind TEXT NOT NULL,        -- burnin | accept
            finished_at TEXT NOT NULL,
            verdict TEXT NOT NULL,     -- pass | fail | incomplete
            failing_parts TEXT NOT NULL,  -- JSON list of {"part", "kind"}
            source TEXT,
            recorded_at TEXT NOT NULL)""",
        """CREATE TABLE triages (
            key TEXT PRIMARY KEY,
            rack TEXT NOT NULL REFERENCES racks (rack),
            at TEXT NOT NULL,
            healthy INTEGER NOT NULL,
            suspects TEXT NOT NULL,    -- JSON list, as localize printed it
            chosen_part TEXT,
            chosen_action TEXT,
            source TEXT,
            recorded_at TEXT NOT NULL)""",
        """CREATE TABLE incidents (
            key TEXT PRIMARY KEY,
            rack TEXT NOT NULL REFERENCES racks (rack),
            occurred_at TEXT NOT NULL,
            part TEXT NOT NULL,
            kind TEXT NOT NULL,
            origin TEXT NOT NULL,      -- triage | repair | manual | import
            triage_key TEXT REFERENCES triages (key),
            note TEXT,
            recorded_at TEXT NOT NULL)""",
        """CREATE TABLE repairs (
            key TEXT PRIMARY KEY,
            incident_key TEXT REFERENCES incidents (key),
            rack TEXT NOT NULL REFERENCES racks (rack),
            part TEXT NOT NULL,
            kind TEXT NOT NULL,
            action TEXT NOT NULL,      -- an action of opsctl/data/mttr.yaml
            details TEXT,
            gpus_idled INTEGER NOT NULL,
            opened_by TEXT NOT NULL,
            opened_at TEXT NOT NULL,
            closed_by TEXT,
            closed_at TEXT,
            back_in_service_at TEXT,
            replaced TEXT,             -- what went in: serial numbers, free text
            rma_ids TEXT NOT NULL,     -- JSON list
            recorded_at TEXT NOT NULL)""",
        # One open repair per part: a second `repair open` of the same part is a mistake.
        "CREATE UNIQUE INDEX repairs_one_open_per_part ON repairs (part) WHERE closed_at IS NULL",
        "CREATE INDEX incidents_by_rack ON incidents (rack, occurred_at)",
        "CREATE INDEX runs_by_rack ON runs (rack, finished_at)",
    ]),
    (2, "drains: when the scheduler took a node out for a part, and when it gave it back", [
        """CREATE TABLE drains (
            key TEXT PRIMARY KEY,
            rack TEXT NOT NULL REFERENCES racks (rack),
            node TEXT NOT NULL,        -- the Slurm node (inventory opsctl_slurm_node)
            part TEXT NOT NULL,        -- the part (or the rack) the drain holds it for
            action TEXT NOT NULL,      -- the repair action named in the reason
            incident_key TEXT REFERENCES incidents (key),
            reason TEXT NOT NULL,      -- the reason slurmctld holds, as set
            drained_at TEXT NOT NULL,
            drained_by TEXT NOT NULL,
            resumed_at TEXT,           -- NULL while the node is held for this part
            resumed_by TEXT,
            recorded_at TEXT NOT NULL)""",
        "CREATE INDEX drains_by_node ON drains (node, drained_at)",
    ]),
    (3, "runs: when each run started, so that two runs of one rack that overlap in time are refused", [
        "ALTER TABLE runs ADD COLUMN started_at TEXT",  # NULL: recorded without its start, the run is its finish
    ]),
    (4, "racks: the cohort each rack came in (vendor or ODM, delivery batch, firmware at handover)", [
        # From the inventory's opsctl_vendor, opsctl_batch and opsctl_firmware when the ledger first
        # hears of the rack (recording.py), or `opsctl ledger rack RACK --batch …`; NULL: not said.
        "ALTER TABLE racks ADD COLUMN vendor TEXT",
        "ALTER TABLE racks ADD COLUMN batch TEXT",
        "ALTER TABLE racks ADD COLUMN firmware TEXT",
    ]),
]

LATEST = MIGRATIONS[-1][0]


def migrate(database: SqliteDatabase | PostgresDatabase, now: str) -> list[int]:
    """Bring the database's schema up to LATEST; returns the versions applied."""
    with database.transaction(write=True) as tx:
        tx.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)""")
        applied = {row["version"] for row in tx.rows("SELECT version FROM schema_migrations")}
    newer = [v for v in applied if v > LATEST]
    if newer:
        raise InputError(
            f"the ledger {database.where} has schema version {max(newer)}, newer than this opsctl knows "
            f"({LATEST}); upgrade opsctl")
    done = []
    for version, name, statements in MIGRATIONS:
        if version in applied:
            continue
        with database.transaction(write=True) as tx:
            # Another process may have migrated while we waited for the lock.
            if tx.row("SELECT version FROM schema_migrations WHERE version = :version", {"version": version}):
                continue
            for statement in statements:
                tx.execute(statement)
            tx.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (:version, :name, :now)",
                       {"version": version, "name": name, "now": now})
        done.append(version)
    return done
