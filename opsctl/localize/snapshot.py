"""The link-health snapshot (docs/triage.md; docs/probe-output.md): reading and checking one, and building one from the
trays' `python -m probes snapshot` documents.

    {"rack": "rack07", "model": "gb200-nvl72", "window_seconds": 600,
     "links": [{"gpu": "rack07/ct03/gpu2", "port": 5, "state": "up", "crc_errors": 0, ...}, ...],
     "gpus": [{"id": "rack07/ct03/gpu2", "reachable": true, "xids": [149]}, ...]}

Counters are deltas over the window and each is optional; a link that is absent was not
observed. Beyond the format's required fields opsctl reads, when present:
- `side: "switch"` on a link read at its switch end (docs/probe-output.md, "Switch trays"); it
  names the link by `link` (its id), else by `switch` (chip id) and `switch_port`, else by
  `peer_gpu` and `peer_port`;
- `effective_ber` on a link, and `symbol_ber_raw`, its symbol BER as NVML packs it (mantissa in
  bits 11:8, exponent in bits 7:0), judged against DCGM's floor;
- XIDs as `{"xid": 149, "time": 1767225602.31}` (unix seconds or ISO 8601): when each came;
- `failed_checks` on a GPU: `[{"check": "memory.remapped_rows", "value": …, "reason": …}]`, the
  rulebook's checks the GPU failed on its own account (the tray judged them): evidence against
  that GPU, and what decides its repair (opsctl/localize/gpu_faults.py);
- `failed_checks` on a link (either end's entry) or a tray: what it failed on its own
  measurement beside the counters — a link's traffic, the NVLink domain bisection's slow tray
  (opsctl/localize/measured.py);
- `trays: [{"tray": "ct05", "status": "unread", "error": "…"}]`: which trays answered. A
  GPU that did not answer while its tray did is a lost GPU; the GPUs and links of a tray that
  did not answer are missing, neither healthy nor faulty.

The format is one schema (opsctl/localize/snapshot_schema.py, docs/schemas/snapshot.schema.json)
and one reader: `read_snapshot_file` decodes a file straight into it where that provably reads as
the strict parse would (opsctl/unique_json.py) and otherwise parses it strictly, and
`checked_snapshot` converts a parsed document to it; `parse_snapshot` resolves its ids against the
rack model's PartIndex — what the schema cannot say (an id of this rack's model, a link listed
twice). Anything malformed is an InputError naming the file, the entry and the field.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from itertools import compress, repeat
from operator import attrgetter, eq, itemgetter, methodcaller, not_
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from opsctl.errors import InputError
from opsctl.input_checks import MAX_COUNTER, MAX_DEPTH, check_depth, nested_within, shown
from opsctl.localize.evidence import COUNTERS, recorded_gpu_xids
from opsctl.rack_models import MODELS, RackModel
from opsctl.regular_files import read_regular_bytes, utf8_text
from opsctl.unique_json import decode_unique
from opsctl.yaml_input import MAX_WRITTEN_BYTES, parse_json, parse_yaml, unique_keys

if TYPE_CHECKING:  # the schema imports msgspec: only when a snapshot is read
    from opsctl.localize.parts import PartIndex
    from opsctl.localize.snapshot_schema import Gpu, Link, Snapshot, Tray

SNAPSHOT_FORMAT = "opsctl-snapshot/1"
SIDES = ("gpu", "switch")
TRAY_ANSWERED = ("complete", "incomplete", "failed")  # the tray ran its probe and answered
TRAY_UNREAD = "unread"  # unreachable, or its probe crashed or timed out: the error says which


@dataclass
class SideReadings:
    """The readings of all links at one end (GPU or switch), as arrays over link indices."""

    counts: np.ndarray  # links × COUNTERS, NaN where not read
    state: np.ndarray  # int8: 1 down, 0 up, −1 not read
    ber: np.ndarray  # NaN where not read
    observed: np.ndarray  # bool
    symbol_ber_raw: np.ndarray  # the symbol BER as NVML packs it (mantissa, exponent); NaN where not read

    @classmethod
    def empty(cls, links: int) -> SideReadings:
        return cls(np.full((links, len(COUNTERS)), np.nan), np.full(links, -1, dtype=np.int8),
                   np.full(links, np.nan), np.zeros(links, dtype=bool), np.full(links, np.nan))


@dataclass
class RackObservation:
    """What one snapshot saw of one rack."""

    rack: str
    model: RackModel
    window_s: float
    source: str
    sides: dict[str, SideReadings]  # "gpu" / "switch"
    gpu_reachable: np.ndarray  # int8 per GPU index: 1 answered, 0 did not, −1 not listed
    snapshot: Snapshot
    gpu_xids: dict[int, list[tuple[int, float | None]]] = field(default_factory=dict)  # GPU index -> [(xid, time or None)]
    gpu_checks: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # GPU index -> its own failed checks
    trays: dict[str, dict[str, Any]] = field(default_factory=dict)  # tray name -> {"status", "error"}


def read_snapshot_file(path: str | Path) -> list[tuple[str, Snapshot]]:
    """The checked snapshots in a file — one, or a list of them (a fleet) — each with the name
    its errors and results go by: the path, or path[i] for each of a list of two or more."""
    data = read_regular_bytes(path)  # a FIFO or /dev/zero: refused in one line, within the cap
    snapshots = _decode_checked(data)  # the common case, fast; None: the strict parse below decides
    if snapshots is not None:
        return _named(path, snapshots)
    loaded = _load(utf8_text(data, path), path)
    documents = loaded if isinstance(loaded, list) else [loaded]
    if not documents:
        raise InputError(f"{path}: holds no snapshot")
    for i, document in enumerate(documents):
        if not isinstance(document, dict):
            where = f"{path}[{i}]" if isinstance(loaded, list) else str(path)
            raise InputError(f"{where}: expected a snapshot (a mapping with rack, model, links, gpus), found {type(document).__name__}")
    return [(source, checked_snapshot(document, source)) for source, document in _named(path, documents)]


def _named(path: str | Path, found: list[Any]) -> list[tuple[str, Any]]:
    sources = [str(path)] if len(found) == 1 else [f"{path}[{i}]" for i in range(len(found))]
    return list(zip(sources, found))


# The schema fixes how deep every part of a snapshot nests but a failed check's value (any JSON),
# which sits below the document, its list, the entry, the entry's failed_checks and the check.
_LEVELS_ABOVE_A_VALUE = 5


def _decode_checked(data: bytes) -> list[Snapshot] | None:
    """The snapshots, decoded and checked against the schema in one pass where that provably
    gives what the strict parse and the schema's check give (opsctl/unique_json.py), else None."""
    from opsctl.localize.snapshot_schema import SnapshotFile

    decoded = decode_unique(data, SnapshotFile)
    if not decoded:  # the strict parse decides, or says the list holds no snapshot
        return None
    snapshots = decoded if isinstance(decoded, list) else [decoded]
    limit = MAX_DEPTH - _LEVELS_ABOVE_A_VALUE - isinstance(decoded, list)
    for snapshot in snapshots:
        for entries in (snapshot.links, snapshot.gpus or [], snapshot.trays or []):
            for i in with_failed_checks(entries):
                if not all(nested_within(check.value, limit) for check in entries[i].failed_checks):
                    return None  # refused by the strict parse, in its words
    return snapshots


def with_failed_checks(entries: Sequence[Link | Gpu | Tray]) -> list[int]:
    """The places of the entries that carry failed checks (a rack's few among thousands of links),
    picked in C: itertools.compress over their failed_checks."""
    return list(compress(range(len(entries)), map(_FAILED_CHECKS, entries)))


def _load(text: str, path: str | Path) -> Any:
    # JSON is the format; a large fleet file parses an order of magnitude faster with json.
    try:
        return check_depth(json.loads(text, parse_constant=_not_a_number, object_pairs_hook=unique_keys), path)
    except json.JSONDecodeError:
        if len(text) > MAX_WRITTEN_BYTES:  # too large for PyYAML to read in time: JSON's error says where
            return parse_json(text, path)
        return parse_yaml(text, path)  # YAML is accepted too; its errors name the line
    except (RecursionError, ValueError):  # nested 100,000 deep, a 5,000-digit number, NaN
        return parse_json(text, path)  # says which, in one line


def _not_a_number(constant: str) -> Any:
    raise ValueError(f"{constant} is not a number JSON allows")


def checked_snapshot(document: object, source: object) -> Snapshot:
    """`document` (parsed JSON or YAML) checked against the snapshot schema; one InputError if not."""
    from opsctl.localize.snapshot_schema import read_snapshot

    return read_snapshot(document, source)


def snapshot_model(snapshot: Snapshot) -> RackModel:
    return MODELS[snapshot.model]


def parse_snapshot(snapshot: Snapshot, source: str, index: PartIndex) -> RackObservation:
    """A checked snapshot's readings as arrays over the model's PartIndex: a RackObservation."""
    prefix = snapshot.rack + "/"
    at_switch = list(map(eq, map(_SIDE, snapshot.links), repeat("switch")))  # a side not given is the GPU's
    places = range(len(snapshot.links))
    numbers = {"gpu": list(compress(places, map(not_, at_switch))), "switch": list(compress(places, at_switch))}
    sides = {side: _read_side(snapshot.links, numbers[side], side, source, prefix, index) for side in SIDES}
    observation = RackObservation(snapshot.rack, snapshot_model(snapshot), float(snapshot.window_seconds), str(source), sides,
                                  np.full(len(index.gpu_ids), -1, dtype=np.int8), snapshot)
    for i, entry in enumerate(snapshot.gpus or []):
        _read_gpu(entry, f"{source}: gpus[{i}]", prefix, index, observation)
    observation.trays = _read_trays(snapshot.trays or [], f"{source}: trays", observation.model)
    return observation


def _relative(value: str, prefix: str) -> str:
    return value[len(prefix):] if value.startswith(prefix) else value


def _unknown(where: str, prefix: str, name: str, what: str, known: dict[str, int], index: PartIndex) -> InputError:
    """The error for an id that is not one of the rack's: one of another rack says so."""
    other_rack, _, rest = name.partition("/")
    if rest in known:
        return InputError(f"{where}: {name} is a {what} of rack {other_rack}, but this snapshot is of rack {prefix.rstrip('/')}")
    return InputError(f"{where}: {prefix}{name} is not a {what} of {index.model.name}")


def link_index(entry: Link, where: str, prefix: str, index: PartIndex) -> int:
    """The link index an entry names (the schema's docstring of Link says how), or InputError."""
    if entry.side == "switch" and entry.link is not None:
        link_id = _relative(entry.link, prefix)
        if link_id not in index.link_index:
            raise _unknown(where, prefix, link_id, "link", index.link_index, index)
        return int(index.link_index[link_id])
    if entry.side == "switch" and entry.switch is not None:
        end, port_key, port = _relative(entry.switch, prefix), "switch_port", entry.switch_port
        table = index.link_by_switch_port
    else:
        peer = entry.side == "switch" and entry.peer_gpu is not None
        gpu_key, port_key = ("peer_gpu", "peer_port") if peer else ("gpu", "port")
        gpu, port = (entry.peer_gpu, entry.peer_port) if peer else (entry.gpu, entry.port)
        if gpu is None:
            raise InputError(f"{where}: {gpu_key} missing: a link entry names its GPU and port (or, at the switch end, its link)")
        end, table = _relative(gpu, prefix), index.link_by_gpu_port
        if end not in index.gpu_index:
            raise _unknown(where, prefix, end, "GPU", index.gpu_index, index)
    if port is None:
        raise InputError(f"{where}: {port_key} missing")
    link = table.get((end, port))
    if link is None:
        raise InputError(f"{where}: {prefix}{end} has no NVLink {port_key} {port} in {index.model.name}")
    return int(link)


_COUNTERS_OF = attrgetter(*COUNTERS)
# Each field read from every entry of a side in map's C loop, not a Python one: a fleet has hundreds of thousands.
_SIDE, _GPU, _PORT, _LINK, _STATE = attrgetter("side"), attrgetter("gpu"), attrgetter("port"), attrgetter("link"), attrgetter("state")
_EFFECTIVE_BER, _SYMBOL_BER_RAW, _FAILED_CHECKS = attrgetter("effective_ber"), attrgetter("symbol_ber_raw"), attrgetter("failed_checks")
_STATE_CODE = {None: -1, "up": 0, "down": 1}
_TOO_LARGE = 2.0**64  # as a float, 2^64 − 1 rounds to it: the integers at or above it are checked exactly


def _read_side(links: list[Link], numbers: list[int], side: str, source: str, prefix: str, index: PartIndex) -> SideReadings:
    """The readings of the links read at one end (`numbers`: their entries' places in `links`),
    column by column (a fleet has hundreds of thousands of links): the common entries — a GPU-side
    one by its GPU and port, a switch-side one by its link id — are looked up in one pass, any
    other entry by link_index, which also says what is wrong with one that names no link of the rack."""
    readings = SideReadings.empty(index.links)
    if not numbers:
        return readings
    entries = [links[i] for i in numbers]
    cut = len(prefix)
    if side == "gpu":  # a rack's 72 GPU ids, each made relative once: the lookups run in map's C loop
        gpus = list(map(_GPU, entries))
        relative = {gpu: gpu[cut:] if gpu.startswith(prefix) else gpu for gpu in set(gpus) if gpu is not None}
        found = list(map(index.link_by_gpu_port.get, zip(map(relative.get, gpus), map(_PORT, entries))))
    else:
        by_id, ids = index.link_index, list(map(_LINK, entries))
        if None not in ids and all(map(methodcaller("startswith", prefix), ids)):  # as opsctl writes them
            found = list(map(by_id.get, map(itemgetter(slice(cut, None)), ids)))
        else:
            found = [by_id.get(link[cut:] if link.startswith(prefix) else link) if link is not None else None for link in ids]
    if None in found:
        found = [link if link is not None else link_index(entry, f"{source}: links[{i}]", prefix, index)
                 for link, entry, i in zip(found, entries, numbers)]
    positions = np.array(found, dtype=np.int64)
    if np.bincount(positions, minlength=index.links).max() > 1:
        _listed_twice(numbers, positions, side, source, prefix, index)
    readings.observed[positions] = True
    readings.counts[positions] = _counter_rows(list(map(_COUNTERS_OF, entries)), links, numbers, source)
    readings.ber[positions] = np.array(list(map(_EFFECTIVE_BER, entries)), dtype=float)  # None: NaN
    readings.symbol_ber_raw[positions] = np.array(list(map(_SYMBOL_BER_RAW, entries)), dtype=float)
    readings.state[positions] = list(map(_STATE_CODE.__getitem__, map(_STATE, entries)))
    return readings


def _counter_rows(rows: list[tuple[Any, ...]], links: list[Link], numbers: list[int], source: str) -> np.ndarray:
    """The counter rows as floats, a counter not read (None) NaN: absent, not zero. Most links of a
    rack read alike (every counter 0, the same ones not read), so the rows equal to the first are
    found in map's C loop and each other distinct row is converted once: a third of the time of
    converting them all."""
    alike = np.fromiter(map(rows[0].__eq__, rows), dtype=bool, count=len(rows))
    distinct = {rows[0]: 0}
    codes = np.zeros(len(rows), dtype=np.int64)
    others = np.flatnonzero(~alike).tolist()
    codes[others] = [distinct.setdefault(rows[i], len(distinct)) for i in others]
    try:
        table = np.array(list(distinct), dtype=float)
    except OverflowError:  # an integer beyond any float
        table = np.full((len(distinct), len(COUNTERS)), _TOO_LARGE)
    if np.any(table >= _TOO_LARGE):
        _counters_fit(links, numbers, source)
    return table[codes]


def _listed_twice(numbers: list[int], positions: np.ndarray, side: str, source: str, prefix: str, index: PartIndex) -> None:
    seen: set[int] = set()
    for link, i in zip(positions.tolist(), numbers):
        if link in seen:
            raise InputError(f"{source}: links[{i}]: {prefix}{index.link_ids[link]} ({side} side) is listed twice")
        seen.add(link)


def _counters_fit(links: list[Link], numbers: list[int], source: str) -> None:
    """Refuse the first counter above 2^64 − 1: NVML's counters are 64-bit."""
    for i in numbers:
        for name, value in zip(COUNTERS, _COUNTERS_OF(links[i])):
            if value is not None and value > MAX_COUNTER:
                raise InputError(f"{source}: links[{i}].{name}: expected a count ≥ 0 and at most 2^64 − 1 "
                                 f"(NVML's counters are 64-bit), got {shown(value)}")


def _read_gpu(entry: Gpu, where: str, prefix: str, index: PartIndex, observation: RackObservation) -> None:
    gpu_id = _relative(entry.id, prefix)
    gpu = index.gpu_index.get(gpu_id)
    if gpu is None:
        raise _unknown(where, prefix, gpu_id, "GPU", index.gpu_index, index)
    if observation.gpu_reachable[gpu] != -1:
        raise InputError(f"{where}: {prefix}{gpu_id} is listed twice")
    observation.gpu_reachable[gpu] = 0 if entry.reachable is False else 1  # not said: it answered
    events = [(xid, None) if isinstance(xid, int) else (xid.xid, _time(xid.time, f"{where}.xids[{j}].time"))
              for j, xid in enumerate(entry.xids or [])]
    if events:
        observation.gpu_xids[gpu] = events
    if entry.failed_checks:
        observation.gpu_checks[gpu] = [{"check": c.check, "value": c.value, "reason": c.reason} for c in entry.failed_checks]


def _time(value: float | str | None, where: str) -> float | None:
    if value is None or not isinstance(value, str):
        return None if value is None else float(value)
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"{where}: expected unix seconds or an ISO 8601 time, got {shown(value)}") from None


def _read_trays(trays: Sequence[Tray], where: str, model: RackModel) -> dict[str, dict[str, Any]]:
    known = set(model.tray_names())
    found = {}
    for i, entry in enumerate(trays):
        if entry.tray not in known:
            raise InputError(f"{where}[{i}]: {entry.tray!r} is not a tray of {model.name}")
        found[entry.tray] = {"status": entry.status, "error": entry.error if isinstance(entry.error, str) else None}
    return found


def lost_gpus(observation: RackObservation, index: PartIndex) -> list[int]:
    """GPU indices that did not answer while their tray did: lost GPUs, not missing readings."""
    answered: dict[str, bool] = {}
    for gpu, state in enumerate(observation.gpu_reachable):
        if state == 1:
            answered[index.gpu_tray[gpu]] = True
    lost = []
    for gpu, state in enumerate(observation.gpu_reachable):
        if state != 0:
            continue
        tray = index.gpu_tray[gpu]
        status = observation.trays.get(tray, {}).get("status")
        if status in TRAY_ANSWERED or (status is None and answered.get(tray)):
            lost.append(gpu)
    return lost


def unread_trays(observation: RackObservation, index: PartIndex) -> list[str]:
    """Compute trays none of whose links were read at either end, and trays marked unreachable."""
    any_side = np.zeros(index.links, dtype=bool)
    for readings in observation.sides.values():
        any_side |= readings.observed
    read = {index.gpu_tray[gpu] for gpu in set(index.link_gpu[any_side].tolist())}
    trays = {t for t in index.model.compute_tray_names() if t not in read}
    trays |= {t for t, info in observation.trays.items() if info["status"] not in TRAY_ANSWERED}
    return sorted(trays)


# --- building a snapshot from the trays' probe documents -------------------------------------
def assemble_snapshot(rack: str, model: RackModel, window_s: float, tray_documents: dict[str, dict[str, Any]],
                      tray_failures: dict[str, str], taken: str | None = None) -> dict[str, Any]:
    """The rack snapshot (docs/probe-output.md) from `python -m probes snapshot` documents.

    tray_documents: {tray: document}; tray_failures: {tray: reason} for trays that gave none.
    A tray's links name the GPU by its local index; here they get the rack's ids."""
    links: list[dict[str, Any]] = []
    gpus: list[dict[str, Any]] = []
    trays: list[dict[str, Any]] = []
    for tray in model.tray_names():
        if tray in tray_failures:
            trays.append({"tray": tray, "status": TRAY_UNREAD, "error": tray_failures[tray]})
            continue
        document = tray_documents.get(tray)
        if document is None:
            continue
        trays.append({"tray": tray, "status": document.get("status", "complete"), "error": None,
                      # what the tray failed on its own (an HGX host's fatal NVSwitch SXids)
                      **({"failed_checks": document["failed_checks"]} if document.get("failed_checks") else {})})
        tray_id = model.tray_id(rack, tray)
        for link in document.get("links", []):
            links.append(_rack_link(link, rack, tray_id))
        for gpu in document.get("gpus", []):
            local = gpu.get("gpu")
            entry = {"id": f"{tray_id}/gpu{local}" if isinstance(local, int) else gpu.get("id"), "reachable": gpu.get("reachable", True),
                     # the window's XIDs, then (with no time: before it) those logged since the driver loaded
                     "xids": gpu.get("xids", []) + recorded_gpu_xids(gpu.get("recorded_xids", []))}
            if gpu.get("failed_checks"):
                entry["failed_checks"] = gpu["failed_checks"]
            gpus.append(entry)
    # The trays measure their windows (a loaded tray's runs a little past the one asked for); the
    # rack's is their median, so the rates judged are the counts over the time they were counted in.
    measured = [float(document["window_seconds"]) for document in tray_documents.values()
                if isinstance(document.get("window_seconds"), (int, float)) and document["window_seconds"] > 0]
    if measured:
        window_s = statistics.median(measured)
    snapshot: dict[str, Any] = {"format": SNAPSHOT_FORMAT, "rack": rack, "model": model.name, "window_seconds": window_s,
                                "links": links, "gpus": gpus, "trays": trays}
    if taken:
        snapshot["taken"] = taken
    return snapshot


def _rack_link(row: dict[str, Any], rack: str, tray_id: str) -> dict[str, Any]:
    """A tray's link row with the rack's ids: a GPU-side row names its GPU by local index; a
    switch-side row its chip by name and its link and peer GPU relative to the rack."""
    entry = {k: v for k, v in row.items() if k not in ("gpu", "chip", "link", "peer_gpu")}
    if isinstance(row.get("gpu"), int):
        entry["gpu"] = f"{tray_id}/gpu{row['gpu']}"
    if isinstance(row.get("chip"), str):
        entry["switch"] = f"{tray_id}/{row['chip']}"
    for key in ("link", "peer_gpu"):
        if isinstance(row.get(key), str):
            entry[key] = row[key] if row[key].startswith(rack + "/") else f"{rack}/{row[key]}"
    return entry

