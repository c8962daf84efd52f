"""The ledger as a repository: its tables, and reading and writing their rows as dicts.

What a row means (a burn-in, a triage, a repair) is decided in recording.py and repairs.py;
this module only knows the tables, so that export, import and statistics read them one way.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.ledger.database import Params, connect, redacted
from opsctl.ledger.migrations import migrate
from opsctl.ledger.timestamps import stored, utc_now

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from opsctl.ledger.database import PostgresDatabase, SqliteDatabase, Transaction

Record = dict[str, Any]  # a row as a dict, column -> value (JSON columns as lists)

# Every table and its columns, in the order they are exported; parents before children,
# which is also the order an import inserts them (the foreign keys need it).
TABLES = {
    "racks": ("rack", "model", "gpus", "handover_at", "retired_at", "vendor", "batch", "firmware", "recorded_at"),
    "runs": ("key", "rack", "kind", "started_at", "finished_at", "verdict", "failing_parts", "source", "recorded_at"),
    "triages": ("key", "rack", "at", "healthy", "suspects", "chosen_part", "chosen_action", "source", "recorded_at"),
    "incidents": ("key", "rack", "occurred_at", "part", "kind", "origin", "triage_key", "note", "recorded_at"),
    "repairs": ("key", "incident_key", "rack", "part", "kind", "action", "details", "gpus_idled", "opened_by",
                "opened_at", "closed_by", "closed_at", "back_in_service_at", "replaced", "rma_ids", "recorded_at"),
    "drains": ("key", "rack", "node", "part", "action", "incident_key", "reason", "drained_at", "drained_by",
               "resumed_at", "resumed_by", "recorded_at"),
}
KEY_COLUMN = {table: ("rack" if table == "racks" else "key") for table in TABLES}
ORDER = {"racks": "rack", "runs": "finished_at, key", "triages": "at, key", "incidents": "occurred_at, key",
         "repairs": "opened_at, key", "drains": "drained_at, key"}
JSON_COLUMNS = {"failing_parts", "suspects", "rma_ids"}  # lists kept as JSON text
# A rack's cohort: what it came with (migration 4), from the inventory variable opsctl_<field>.
COHORT_COLUMNS = ("vendor", "batch", "firmware")


def new_key(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def content_key(prefix: str, *content: Any) -> str:
    """A key that is the same for the same content: recording a document twice adds nothing."""
    digest = hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()
    return f"{prefix}-{digest[:16]}"


def to_row(table: str, record: Record) -> Record:
    """A record (lists as lists) as stored (lists as JSON text)."""
    return {c: json.dumps(record[c]) if c in JSON_COLUMNS and record.get(c) is not None else record.get(c)
            for c in TABLES[table]}


def from_row(row: Record) -> Record:
    return {c: json.loads(v) if c in JSON_COLUMNS and isinstance(v, str) else v for c, v in row.items()}


class Ledger:
    """One ledger database, migrated to the latest schema when opened."""

    def __init__(self, database: SqliteDatabase | PostgresDatabase, *, read_only: bool = False) -> None:
        self.database = database
        try:
            if read_only and not database.has_ledger():
                raise InputError(f"no ledger at {database.where} (it holds no opsctl ledger); "
                                 "record something first or check --db")
            migrate(database, stored(utc_now()))
        except BaseException:
            database.close()
            raise

    @property
    def url(self) -> str:
        return redacted(self.database.url)

    def write(self) -> AbstractContextManager[Transaction]:
        """A write transaction: all of it lands, or none of it."""
        return self.database.transaction(write=True)

    def read(self) -> AbstractContextManager[Transaction]:
        return self.database.transaction(write=False)

    def close(self) -> None:
        self.database.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- rows --------------------------------------------------------------------------------
    @staticmethod
    def insert(tx: Transaction, table: str, record: Record) -> bool:
        """Insert one record; False when a row with its key is already there (nothing changes)."""
        row = to_row(table, record)
        columns = ", ".join(row)
        marks = ", ".join(f":{column}" for column in row)
        tx.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks}) ON CONFLICT ({KEY_COLUMN[table]}) DO NOTHING", row)
        return tx.rowcount == 1

    @staticmethod
    def update(tx: Transaction, table: str, key: str, changes: Record) -> None:
        row = {c: json.dumps(v) if c in JSON_COLUMNS else v for c, v in changes.items()}
        assignments = ", ".join(f"{column} = :new_{column}" for column in row)
        tx.execute(f"UPDATE {table} SET {assignments} WHERE {KEY_COLUMN[table]} = :key_of_row",
                   {**{f"new_{column}": value for column, value in row.items()}, "key_of_row": key})

    @staticmethod
    def select(tx: Transaction, table: str, where: str = "", params: Params | None = None,
               order: str | None = None) -> list[Record]:
        """Rows of a table as records (JSON columns as lists). `where` names its parameters (`rack = :rack`)."""
        sql = f"SELECT {', '.join(TABLES[table])} FROM {table}"
        if where:
            sql += f" WHERE {where}"
        sql += f" ORDER BY {order or ORDER[table]}"
        return [from_row(row) for row in tx.rows(sql, params)]

    def records(self, table: str, where: str = "", params: Params | None = None, order: str | None = None) -> list[Record]:
        with self.read() as tx:
            return self.select(tx, table, where, params, order)

    def everything(self) -> dict[str, list[Record]]:
        """Every table's records, read in one transaction (a consistent picture)."""
        with self.read() as tx:
            return {table: self.select(tx, table) for table in TABLES}


def open_ledger(url: str | None = None, *, read_only: bool = False) -> Ledger:
    """The ledger at `url` (--db), else $OPSCTL_DB, else the SQLite file in the state dir.

    read_only=True for whatever only reads (stats, export, tco --from-ledger, repair list): a
    ledger that is not there is an input error ("no ledger at …"), never created empty. (An
    existing ledger of an older schema is still migrated: that is the same ledger, upgraded.)"""
    return Ledger(connect(url, read_only=read_only), read_only=read_only)
