"""The ledger as pandas DataFrames, for an analyst: one frame per table, typed, each event beside
its rack's cohort and its age since handover.

    from opsctl.ledger.frames import read_frames
    frames = read_frames("sqlite:///…/ledger.sqlite")      # or postgresql://…, or None: as --db
    frames.incidents.groupby("batch").size()
    frames.to_parquet("ledger-parquet/")                   # one file per table (pyarrow)

What each frame holds (docs/ledger.md, The ledger as tables):
- racks: the ledger's racks (rack, model, gpus, handover_at, retired_at, vendor, batch, firmware,
  recorded_at) and, asked by name, any inventory variable (`variables=("datacenter",)`);
- runs, triages, incidents, repairs, drains: their ledger columns, then the rack's cohort
  columns, and `age_days` — the event's age since its rack's handover (negative before it, NaN
  for a rack not handed over): finished_at for runs, at for triages, occurred_at for incidents,
  opened_at for repairs, drained_at for drains. repairs add `restore_hours` (from the failure to
  back in service, as ledger stats measures it) and drains `drained_hours`.
Times are pandas timestamps in UTC; JSON lists (failing_parts, suspects, rma_ids) are Python
lists in the frames and JSON text in the CSV and Parquet files.

pandas is imported by this module alone, and only the commands that build frames import it
(`opsctl ledger table`, `opsctl ledger export --format parquet`).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from opsctl.errors import InputError
from opsctl.ledger.repairs import restore_hours
from opsctl.ledger.store import COHORT_COLUMNS, JSON_COLUMNS, TABLES, open_ledger
from opsctl.ledger.transfer import TIME_COLUMNS
from opsctl.runs.atomic_file import write_bytes_atomic

if TYPE_CHECKING:
    from opsctl.inventory import Inventory
    from opsctl.ledger.cohorts import Snapshot
    from opsctl.ledger.store import Ledger, Record

PARQUET_HINT = "Parquet export needs pyarrow: pip install 'opsctl[parquet]' (or pip install pyarrow)"
# The moment of each table that its age since handover is taken at.
AGE_AT = {"runs": "finished_at", "triages": "at", "incidents": "occurred_at", "repairs": "opened_at", "drains": "drained_at"}


@dataclass(frozen=True)
class LedgerFrames:
    """One DataFrame per ledger table."""

    racks: pd.DataFrame
    runs: pd.DataFrame
    triages: pd.DataFrame
    incidents: pd.DataFrame
    repairs: pd.DataFrame
    drains: pd.DataFrame

    def tables(self) -> dict[str, pd.DataFrame]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __getitem__(self, table: str) -> pd.DataFrame:
        if table not in TABLES:
            raise KeyError(table)
        frame: pd.DataFrame = getattr(self, table)
        return frame

    def to_csv(self, folder: str | Path) -> list[Path]:
        """One CSV per table under `folder` (created), each written whole; returns the files."""
        return [write_frame(frame, Path(folder) / f"{name}.csv") for name, frame in _in_folder(folder, self.tables())]

    def to_parquet(self, folder: str | Path) -> list[Path]:
        """One Parquet file per table under `folder` (created); needs pyarrow (the `parquet` extra)."""
        require_pyarrow()
        return [write_frame(frame, Path(folder) / f"{name}.parquet") for name, frame in _in_folder(folder, self.tables())]


def require_pyarrow() -> None:
    """Parquet is written by pyarrow, an optional extra: without it, one line saying what to install (exit 2)."""
    if importlib.util.find_spec("pyarrow") is None:
        raise InputError(PARQUET_HINT)


def _in_folder(folder: str | Path, tables: dict[str, pd.DataFrame]) -> Iterator[tuple[str, pd.DataFrame]]:
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write the tables to {folder}: {exc.strerror or exc}") from None
    yield from tables.items()


def _as_file(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as a file holds it: lists as JSON text (a column of lists of mappings has no one Parquet type)."""
    out = frame.copy()
    for column in out.columns:
        if column in JSON_COLUMNS:
            out[column] = [None if value is None else json.dumps(value) for value in out[column]]
    return out


def write_frame(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write one frame as CSV or Parquet (by the file's suffix), whole or not at all."""
    import io

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise InputError(f"{path}: write a .csv or a .parquet file")
    if suffix == ".parquet":
        require_pyarrow()
        buffer = io.BytesIO()
        _as_file(frame).to_parquet(buffer, index=False, engine="pyarrow")
        data = buffer.getvalue()
    else:
        data = _as_file(frame).to_csv(index=False, date_format="%Y-%m-%dT%H:%M:%SZ").encode("utf-8")
    try:
        if path.is_dir():
            raise IsADirectoryError(21, "Is a directory")
        write_bytes_atomic(path, data, make_folders=False)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def _typed(table: str, records: list[Record], extra: Iterable[str] = ()) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(records, columns=[*TABLES[table], *extra])
    for column in frame.columns:
        if column in TIME_COLUMNS:
            frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    if table == "triages":
        frame["healthy"] = frame["healthy"].astype("boolean")
    if table == "racks":
        frame["gpus"] = frame["gpus"].astype("Int64")
    return frame


def frames_of(data: dict[str, list[Record]], *, variables: Iterable[str] = (), inventory: Inventory | None = None) -> LedgerFrames:
    """The frames of the ledger's tables as read (Ledger.everything())."""
    variables = [v for v in dict.fromkeys(variables) if v not in TABLES["racks"]]
    racks = _typed("racks", data["racks"])
    if variables:
        if inventory is None:
            from opsctl.inventory import load_inventory

            inventory = load_inventory()
        for variable in variables:
            values = []
            for rack in racks["rack"]:
                found = inventory.racks.get(rack)
                value = found.vars.get(variable) if found is not None else None
                values.append(None if value is None else str(value) if not isinstance(value, (int, float, bool)) else value)
            racks[variable] = values
    cohort = racks.set_index("rack")[[*COHORT_COLUMNS, *variables]] if len(racks) else None
    handover = racks.set_index("rack")["handover_at"] if len(racks) else None
    incidents = {i["key"]: i for i in data["incidents"]}
    tables: dict[str, pd.DataFrame] = {"racks": racks}
    for table in ("runs", "triages", "incidents", "repairs", "drains"):
        frame = _typed(table, data[table])
        if cohort is not None and len(frame):
            frame = frame.join(cohort, on="rack")
            frame["age_days"] = (frame[AGE_AT[table]] - frame["rack"].map(handover)).dt.total_seconds() / 86400.0
        else:
            for column in [*COHORT_COLUMNS, *variables]:
                frame[column] = pd.Series(dtype="object")
            frame["age_days"] = pd.Series(dtype="float64")
        if table == "repairs":
            frame["restore_hours"] = pd.Series([restore_hours(r, incidents) for r in data["repairs"]], dtype="float64")
        if table == "drains":
            frame["drained_hours"] = (frame["resumed_at"] - frame["drained_at"]).dt.total_seconds() / 3600.0
        tables[table] = frame
    return LedgerFrames(**tables)


def ledger_frames(ledger: Ledger | Snapshot, *, variables: Iterable[str] = (), inventory: Inventory | None = None) -> LedgerFrames:
    """The frames of an open ledger (SQLite or PostgreSQL), read in one transaction."""
    return frames_of(ledger.everything(), variables=variables, inventory=inventory)


def read_frames(url: str | None = None, *, variables: Iterable[str] = (), inventory: Inventory | None = None) -> LedgerFrames:
    """The frames of the ledger at `url` (as --db: sqlite:///FILE, a path, postgresql://…; None:
    $OPSCTL_DB, else the default file). Reads only: a ledger that is not there is an error."""
    with open_ledger(url, read_only=True) as ledger:
        return ledger_frames(ledger, variables=variables, inventory=inventory)


def frame_text(frame: pd.DataFrame, columns: Any = None, rows: int | None = None) -> str:
    """A frame as text for a terminal (every row unless `rows`)."""
    shown = frame if columns is None else frame[list(columns)]
    with pd.option_context("display.width", 200, "display.max_columns", None, "display.max_colwidth", 60):
        return str(shown.to_string(index=False, max_rows=rows))
