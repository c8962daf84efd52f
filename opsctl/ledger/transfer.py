"""Export the ledger as JSON or CSV, and import a team's history from either.

JSON is one document: {"format": "opsctl-ledger/1", "racks": [...], "runs": [...], "triages":
[...], "incidents": [...], "repairs": [...]}, one record per line. CSV is one file per table,
named after it (racks.csv, repairs.csv, …), with the table's columns as its header; lists are
JSON text (RMA ids may also be written `A1;A2`).

An import is one transaction: every record is checked (times, numbers, part ids against the
rack's topology, repair actions against the repair model) and a bad one stops the import with
the file, line and field named, and nothing imported. Records carry their keys; a record
without one gets a key from its content, so importing the same file twice adds nothing.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from opsctl.errors import InputError
from opsctl.input_checks import check_depth, kind_of, shown
from opsctl.ledger.recording import RUN_KINDS, VERDICTS, RecordingSession, refuse_overlap
from opsctl.ledger.store import JSON_COLUMNS, KEY_COLUMN, TABLES, Ledger, Record, content_key
from opsctl.ledger.timestamps import stored, utc_now
from opsctl.regular_files import read_regular_text
from opsctl.runs.atomic_file import write_bytes_atomic
from opsctl.yaml_input import parse_json, unique_keys

if TYPE_CHECKING:
    from opsctl.ledger.database import Transaction
    from opsctl.ledger.parts import Parts

FilePath = str | os.PathLike[str]
# (table, raw record, where): `where()` names the file and line of the record, for an error
ReadRecord = tuple[str, dict[str, Any], Callable[[], str]]
FORMAT = "opsctl-ledger/1"
KEY_PREFIX = {"runs": "run", "triages": "tri", "incidents": "inc", "repairs": "rep", "drains": "drn"}
TIME_COLUMNS = {"handover_at", "retired_at", "recorded_at", "started_at", "finished_at", "at", "occurred_at", "opened_at",
                "closed_at", "back_in_service_at", "drained_at", "resumed_at"}
INT_COLUMNS = {"gpus", "gpus_idled"}
# Columns an imported record must have; the rest are optional or derived (rack from the part,
# kind from the topology, GPUs idled from the action).
REQUIRED = {
    "racks": ("rack",),
    "runs": ("rack", "kind", "finished_at", "verdict"),
    "triages": ("rack", "at", "healthy"),
    "incidents": ("occurred_at", "part"),
    "repairs": ("part", "action", "opened_by", "opened_at"),
    "drains": ("node", "part", "action", "reason", "drained_at", "drained_by"),
}
# What makes two records one whatever else they say: one repair of a part opened at one moment
# is closed once (the same repair with two close times is a contradiction, not two repairs). A
# record of these tables without a key gets its key from its identity; others, from all they say.
IDENTITY = {
    "repairs": ("part", "opened_at"),
}
# Columns that say where a row came from, not what happened: they never contradict.
PROVENANCE = {"recorded_at", "source"}


# --- export --------------------------------------------------------------------------------
def export_document(ledger: Ledger) -> dict[str, Any]:
    return {"format": FORMAT, "exported_at": stored(utc_now()), "ledger": ledger.url, **ledger.everything()}


def json_text(document: dict[str, Any]) -> str:
    """The export document with one record per line: diffable, and an import error's line is a record."""
    lines = ["{"]
    heads = [k for k in document if k not in TABLES]
    for key in heads:
        lines.append(f"  {json.dumps(key)}: {json.dumps(document[key])},")
    for number, table in enumerate(TABLES):
        records = document.get(table, [])
        body = ",\n".join(f"    {json.dumps(record, sort_keys=False)}" for record in records)
        closing = "," if number < len(TABLES) - 1 else ""
        lines.append(f"  {json.dumps(table)}: [\n{body}\n  ]{closing}" if records else f"  {json.dumps(table)}: []{closing}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_csv(document: dict[str, Any], directory: FilePath) -> list[Path]:
    """One CSV per table under `directory`; returns the files written. Each file is written whole
    (a temporary file renamed into place), so a failed export leaves no half-written table."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write the export to {directory}: {_why(exc)}") from None
    written = []
    for table, columns in TABLES.items():
        buffer = io.StringIO(newline="")
        writer = csv.DictWriter(buffer, fieldnames=columns)
        writer.writeheader()
        for record in document[table]:
            writer.writerow({c: _csv_cell(c, record.get(c)) for c in columns})
        written.append(write_text(directory / f"{table}.csv", buffer.getvalue()))
    return written


def write_text(path: FilePath, text: str) -> Path:
    """Write a file whole (runs/atomic_file: a temporary file beside it, renamed into place); an
    unwritable path is an input error naming it and why."""
    path = Path(path)
    try:
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        write_bytes_atomic(path, text.encode("utf-8"), make_folders=False)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {_why(exc)}") from None
    return path


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _csv_cell(column: str, value: Any) -> Any:
    if value is None:
        return ""
    return json.dumps(value) if column in JSON_COLUMNS else value


# --- reading files -------------------------------------------------------------------------
def _read_text(path: FilePath) -> str:
    return read_regular_text(path)  # a FIFO or /dev/zero: refused in one line, within the cap


def _json_line(text: str, table: str, index: int) -> int | None:
    """The line a record of a JSON document starts on (found only when there is an error)."""
    try:
        for key, value in yaml.compose(text, Loader=yaml.SafeLoader).value:
            if key.value == table:
                return value.value[index].start_mark.line + 1
    except (yaml.YAMLError, AttributeError, IndexError):
        pass
    return None


def _json_records(path: FilePath) -> Iterator[ReadRecord]:
    text = _read_text(path)
    try:
        document = check_depth(json.loads(text, object_pairs_hook=unique_keys), path)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} line {exc.lineno}: not valid JSON: {exc.msg}") from None
    except (RecursionError, ValueError):  # nested 100,000 deep, a 5,000-digit number
        document = parse_json(text, path)  # raises, saying which in one line
    if not isinstance(document, dict):
        raise InputError(f"{path}: expected a JSON object with the tables {', '.join(TABLES)}")
    if document.get("format", FORMAT) != FORMAT:
        raise InputError(f"{path}: format {document.get('format')!r} is not {FORMAT!r}")
    unknown = set(document) - set(TABLES) - {"format", "exported_at", "ledger"}
    if unknown:
        raise InputError(f"{path}: unknown key(s) {', '.join(sorted(unknown))} (tables: {', '.join(TABLES)})")
    if not set(document) & set(TABLES):
        # {} (or only a header) is not an export of an empty ledger: that one lists its tables.
        raise InputError(f"{path}: no tables (expected a ledger export: {{\"format\": \"{FORMAT}\", "
                         f"{', '.join(f'{chr(34)}{t}{chr(34)}: [...]' for t in TABLES)}}})")
    for table in TABLES:
        records = document.get(table, [])
        if not isinstance(records, list):
            raise InputError(f"{path}: {table!r} must be a list of records")
        for index, record in enumerate(records):
            where = lambda t=table, i=index: f"{path} line {_json_line(text, t, i) or '?'} ({t}[{i}])"  # noqa: E731
            if not isinstance(record, dict):
                raise InputError(f"{where()}: a record must be an object")
            yield table, record, where


def _csv_records(path: FilePath, table: str | None) -> Iterator[ReadRecord]:
    table = table or Path(path).stem
    if table not in TABLES:
        raise InputError(f"{path}: which table? name the file after one ({', '.join(f'{t}.csv' for t in TABLES)}) or say --table")
    text = _read_text(path).removeprefix("\ufeff")  # the byte-order mark a spreadsheet saves "CSV UTF-8" with
    # strict: a quote left open is an error on its line, not a field that swallows the file.
    reader = csv.DictReader(text.splitlines(keepends=True), strict=True)
    try:
        header = reader.fieldnames or []
        twice = sorted({c for c in header if header.count(c) > 1})
        if twice:  # DictReader would keep the last of the two cells and say nothing
            raise InputError(f"{path} line 1: column(s) {', '.join(c[:60] for c in twice)} given twice in the header")
        unknown = [c for c in header if c not in TABLES[table]]
        if unknown:
            raise InputError(f"{path} line 1: unknown column(s) {', '.join(c[:60] for c in unknown)} "
                             f"(a {table} file has: {', '.join(TABLES[table])})")
        for row in reader:
            line = reader.line_num
            if None in row:
                raise InputError(f"{path} line {line}: more cells than the header has columns")
            yield table, {c: v for c, v in row.items() if v not in ("", None)}, _known_place(f"{path} line {line}")
    except csv.Error as exc:  # a field over csv.field_size_limit() (131,072 characters), an open quote, a NUL
        line = reader.line_num + 1  # line_num counts the lines of the records read whole: the bad one starts next
        why = "a quote opened on this line is never closed" if "end of data" in str(exc) else str(exc)
        raise InputError(f"{path} line {line}: not valid CSV: {why}") from None


def _known_place(place: str) -> Callable[[], str]:
    """`where` for a record whose place is known as it is read (a CSV line)."""
    return lambda: place


def read_files(paths: Iterable[FilePath], table: str | None = None) -> Iterator[ReadRecord]:
    """(table, raw record, where) for every record of the files, in file order."""
    for path in paths:
        if Path(path).is_dir():
            found = [Path(path) / f"{name}.csv" for name in TABLES if (Path(path) / f"{name}.csv").exists()]
            if not found:
                raise InputError(f"{path}: a folder with no ledger CSVs (expected one or more of "
                                 f"{', '.join(f'{t}.csv' for t in TABLES)}, as ledger export --format csv writes)")
            for csv_path in found:
                yield from _csv_records(csv_path, csv_path.stem)
        elif str(path).lower().endswith(".csv"):
            yield from _csv_records(path, table)
        else:
            yield from _json_records(path)


# --- checking one record -------------------------------------------------------------------
def _field_value(column: str, value: Any) -> Any:
    if value is None:
        return None
    if column in TIME_COLUMNS:
        return stored(value, "")
    if column in INT_COLUMNS:
        # ASCII digits only ('²'.isdigit() is true), and few enough for a count of GPUs
        if isinstance(value, bool) or not re.fullmatch(r"[0-9]{1,9}", str(value).strip()):
            raise InputError(f"not a whole number: {shown(value)} (0 to 999,999,999)")
        return int(value)
    if column == "healthy":
        words = {"true": 1, "1": 1, "yes": 1, "false": 0, "0": 0, "no": 0}
        if str(value).lower() not in words:
            raise InputError(f"not true or false: {value!r}")
        return words[str(value).lower()]
    if column in JSON_COLUMNS:
        if isinstance(value, str):
            if column == "rma_ids" and not value.lstrip().startswith("["):
                return [v.strip() for v in value.split(";") if v.strip()]
            try:
                value = parse_json(value, "")
            except InputError:
                raise InputError(f"not a JSON list: {shown(value)}") from None
        if not isinstance(value, list):
            raise InputError(f"not a list: {shown(value)}")
        return value
    if isinstance(value, (list, dict)):  # a name, an action, a note: text, never a list or a mapping
        raise InputError(f"must be text, got {kind_of(value)} {shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"must be text, got {value!r}")
    text = str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone UTF-16 surrogate ("\udc80" in JSON): no database can store it
        raise InputError(f"not valid text: {ascii(text[exc.start:exc.end])} at character {exc.start + 1} "
                         f"is {exc.reason}") from None
    return text


def _checked(table: str, raw: dict[str, Any], session: RecordingSession, tx: Transaction) -> Record:
    """The record as the ledger stores it, every field checked; InputError names the field."""
    record: Record = {}
    for column in TABLES[table]:
        if column in raw:
            try:
                record[column] = _field_value(column, raw[column])
            except InputError as exc:
                raise InputError(f"field {column}: {str(exc).lstrip(': ')}") from None
    unknown = set(raw) - set(TABLES[table])
    if unknown:
        raise InputError(f"unknown field(s) {', '.join(sorted(unknown))}")
    missing = [c for c in REQUIRED[table] if record.get(c) is None]
    if missing:
        raise InputError(f"field {missing[0]}: missing")
    record.setdefault("recorded_at", stored(utc_now()))
    if table == "racks":
        facts = session.parts.rack_facts(record["rack"], None, record.get("model"))
        if record.get("model") and record["model"] != facts.model:  # the inventory's word, never silently over the file's
            raise InputError(f"field model: {record['model']!r}, but rack {record['rack']} is a {facts.model} "
                             "in the inventory")
        if record.get("gpus") is not None and not 0 < record["gpus"] <= facts.gpus:
            raise InputError(f"field gpus: {record['gpus']:,}, but a {facts.model} rack has {facts.gpus} GPUs")
        record["model"], record["gpus"] = facts.model, record.get("gpus") or facts.gpus
        _in_order(record, ("handover_at", "retired_at"))
        return record
    if "part" in record:
        record.setdefault("rack", record["part"].split("/", 1)[0])
    facts = session.rack(tx, record["rack"])
    for column, allowed in (("kind", RUN_KINDS), ("verdict", VERDICTS)):
        if table == "runs" and record[column] not in allowed:
            raise InputError(f"field {column}: {record[column]!r} is not one of {', '.join(allowed)}")
    if table == "runs":
        failing = []
        for item in record.get("failing_parts") or []:
            part_id = item.get("part") if isinstance(item, dict) else item
            part = session.parts.part(str(part_id), facts)  # (Parts.part reads any value as text)
            entry = {"part": part.id, "kind": part.kind}
            if isinstance(item, dict) and item.get("explained_by"):  # counted as the suspect that explains it
                entry["explained_by"] = session.parts.part(str(item["explained_by"]), facts).id
            failing.append(entry)
        record["failing_parts"] = failing
        _in_order(record, ("started_at", "finished_at"))
    if table == "triages":
        record.setdefault("suspects", [])
        if record.get("chosen_part"):
            session.parts.part(record["chosen_part"], facts)
    if table in ("incidents", "repairs"):
        part = session.parts.part(record["part"], facts)
        if record.get("kind", part.kind) != part.kind:
            raise InputError(f"field kind: {record['kind']!r}, but {part.id} is a {part.kind}")
        record["kind"] = part.kind
    if table == "incidents":
        record.setdefault("origin", "import")
    if table == "drains":
        _in_order(record, ("drained_at", "resumed_at"))
    if table == "repairs":
        action = session.parts.action(record["action"])
        if record.get("gpus_idled") is None:
            record["gpus_idled"] = session.parts.gpus_idled(part, action, facts)
        record.setdefault("rma_ids", [])
        if record["gpus_idled"] > facts.gpus:
            raise InputError(f"field gpus_idled: {record['gpus_idled']:,}, but rack {facts.name} has {facts.gpus} GPUs")
        if record.get("back_in_service_at") and not record.get("closed_at"):
            raise InputError("field back_in_service_at: set, but the repair is not closed (no closed_at)")
        _in_order(record, ("opened_at", "closed_at"), ("opened_at", "back_in_service_at"),
                  ("closed_at", "back_in_service_at"))
        if record.get("incident_key") and not tx.row("SELECT key FROM incidents WHERE key = :key", {"key": record["incident_key"]}):
            raise InputError(f"field incident_key: no incident {record['incident_key']!r} in the ledger or this import")
    if table == "incidents" and record.get("triage_key") and not tx.row(
            "SELECT key FROM triages WHERE key = :key", {"key": record["triage_key"]}):
        raise InputError(f"field triage_key: no triage {record['triage_key']!r} in the ledger or this import")
    if not record.get("key"):
        said = {c: record.get(c) for c in IDENTITY[table]} if table in IDENTITY else \
            {c: v for c, v in record.items() if c != "recorded_at"}
        record["key"] = content_key(KEY_PREFIX[table], table, said)
    return record


def _in_order(record: Record, *pairs: tuple[str, str]) -> None:
    """Refuse a record whose times run backwards (back in service before the repair closed)."""
    for first, then in pairs:
        if record.get(first) and record.get(then) and record[then] < record[first]:
            raise InputError(f"field {then}: {record[then]} is before {first} {record[first]}")


def _same_record(tx: Transaction, table: str, record: Record) -> Record | None:
    """The row already in the ledger (or this import) that is `record`: the same key, or the same identity."""
    rows = Ledger.select(tx, table, f"{KEY_COLUMN[table]} = :key", {"key": record[KEY_COLUMN[table]]})
    if not rows and table in IDENTITY:
        where = " AND ".join(f"{c} = :{c}" for c in IDENTITY[table])
        rows = Ledger.select(tx, table, where, {c: record.get(c) for c in IDENTITY[table]})
    return rows[0] if rows else None


def _merge(table: str, present: Record, record: Record) -> Record:
    """What the import adds to the row already there: the fields the ledger does not have yet (a
    repair closed since it was exported open). A field both give, differently, is a contradiction:
    refused (InputError) naming the row — never dropped as "already there", never a second row."""
    empty: tuple[Any, ...] = (None, "", [])
    fill = {}
    for column in TABLES[table]:
        if column in PROVENANCE or column == KEY_COLUMN[table] or record.get(column) in empty:
            continue
        if present[column] in empty:
            fill[column] = record[column]
        elif present[column] != record[column]:
            key = present[KEY_COLUMN[table]]
            same = "key" if key == record[KEY_COLUMN[table]] else f"{' and '.join(IDENTITY[table])}"
            raise InputError(f"contradicts {table} record {key} already in the ledger or this import, of the same "
                             f"{same}: {column} is {shown(present[column])} there, {shown(record[column])} here; "
                             "nothing imported (correct one of the two)")
    return fill


def import_files(ledger: Ledger, paths: Iterable[FilePath] = (), *, table: str | None = None, parts: Parts | None = None,
                 records: Sequence[ReadRecord] | None = None) -> dict[str, dict[str, int]]:
    """Import every record of the files (or `records`, as read_files gives them) in one
    transaction; returns {table: {"added", "present"}}."""
    counts = {t: {"added": 0, "present": 0} for t in TABLES}
    if records is None:
        records = list(read_files(paths, table))
    with RecordingSession(ledger, parts=parts) as session, ledger.write() as tx:
        # Parents first, whatever order the files came in: racks, runs, triages, incidents, repairs.
        for name in TABLES:
            for record_table, raw, where in records:
                if record_table != name:
                    continue
                try:
                    record = _checked(name, raw, session, tx)
                    present = _same_record(tx, name, record)
                    if present is not None:
                        # Already known: the import may only fill in what is missing; a field it
                        # says otherwise is refused, naming both records.
                        fill = _merge(name, present, record)
                        if fill:
                            merged = {**present, **fill}
                            _checked_again(name, merged)
                            Ledger.update(tx, name, present[KEY_COLUMN[name]], fill)
                        counts[name]["present"] += 1
                        continue
                    _one_open_repair(tx, name, record)
                    if name == "runs":
                        refuse_overlap(tx, record)
                    Ledger.insert(tx, name, record)
                except InputError as exc:
                    raise InputError(f"{where()}: {exc}") from None
                counts[name]["added"] += 1
    return counts


def _checked_again(table: str, merged: Record) -> None:
    """A row filled in from an import still holds together (its times in order)."""
    if table == "repairs":
        _in_order(merged, ("opened_at", "closed_at"), ("closed_at", "back_in_service_at"))
    if table == "racks":
        _in_order(merged, ("handover_at", "retired_at"))
    if table == "drains":
        _in_order(merged, ("drained_at", "resumed_at"))


def _one_open_repair(tx: Transaction, table: str, record: Record) -> None:
    """One open repair per part (the schema's index says so too): a second is refused by name."""
    if table != "repairs" or record.get("closed_at"):
        return
    other = tx.row("SELECT key FROM repairs WHERE part = :part AND closed_at IS NULL", {"part": record["part"]})
    if other:
        raise InputError(f"a second open repair of {record['part']}: repair {other['key']} of it is open in the "
                         "ledger or this import (close one: give it closed_at)")

