"""The link-health snapshot (README, Triage and fault localization; docs/probe-output.md): reading and checking one, and building one from the
trays' `python -m probes snapshot` documents.

    {"rack": "rack07", "model": "gb200-nvl72", "window_seconds": 600,
     "links": [{"gpu": "rack07/ct03/gpu2", "port": 5, "state": "up", "crc_errors": 0, ...}, ...],
     "gpus": [{"id": "rack07/ct03/gpu2", "reachable": true, "xids": [149]}, ...]}

Counters are deltas over the window and each is optional; a link that is absent was not
observed. Beyond CONTRACT's fields opsctl reads, when present:
- `side: "switch"` on a link read at its switch end (docs/probe-output.md, "Switch trays"); it
  names the link by `link` (its id), else by `switch` (chip id) and `switch_port`, else by
  `peer_gpu` and `peer_port`;
- `effective_ber` on a link;
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

Anything malformed is an InputError naming the file, the entry and the field.
"""

import json
from dataclasses import dataclass, field
from datetime import datetime
from itertools import chain
from operator import itemgetter

import numpy as np

from opsctl.errors import InputError
from opsctl.localize.evidence import COUNTERS
from opsctl.rack_models import MODELS, NAME_PATTERN
from opsctl.input_checks import MAX_SECONDS, check_depth, counter, number
from opsctl.yaml_input import MAX_WRITTEN_BYTES, parse_json, parse_yaml

SNAPSHOT_FORMAT = "opsctl-snapshot/1"
SIDES = ("gpu", "switch")
TRAY_ANSWERED = ("complete", "incomplete", "failed")  # the tray ran its probe and answered
TRAY_UNREAD = "unread"  # unreachable, or its probe crashed or timed out: the error says which
MAX_XID = 2**32 - 1  # far above any code NVIDIA's XID catalog lists; bounds what a file can ask
MAX_UNIX_TIME = 253402300799  # 9999-12-31T23:59:59Z, the last moment an ISO 8601 time can say


@dataclass
class SideReadings:
    """The readings of all links at one end (GPU or switch), as arrays over link indices."""

    counts: np.ndarray  # links × COUNTERS, NaN where not read
    state: np.ndarray  # int8: 1 down, 0 up, −1 not read
    ber: np.ndarray  # NaN where not read
    observed: np.ndarray  # bool

    @classmethod
    def empty(cls, links):
        return cls(np.full((links, len(COUNTERS)), np.nan), np.full(links, -1, dtype=np.int8),
                   np.full(links, np.nan), np.zeros(links, dtype=bool))


@dataclass
class RackObservation:
    """What one snapshot saw of one rack."""

    rack: str
    model: object  # RackModel
    window_s: float
    source: str
    sides: dict  # "gpu" / "switch" -> SideReadings
    gpu_reachable: np.ndarray  # int8 per GPU index: 1 answered, 0 did not, −1 not listed
    gpu_xids: dict = field(default_factory=dict)  # GPU index -> [(xid, time or None)]
    gpu_checks: dict = field(default_factory=dict)  # GPU index -> its own failed checks [{check, value, reason}]
    trays: dict = field(default_factory=dict)  # tray name -> {"status", "error"}
    document: dict = field(default_factory=dict)


def read_snapshot_file(path):
    """The snapshot documents in a file: one document, or a list of them (a fleet)."""
    data = _load(path)
    documents = data if isinstance(data, list) else [data]
    if not documents:
        raise InputError(f"{path}: holds no snapshot")
    for i, document in enumerate(documents):
        if not isinstance(document, dict):
            where = f"{path}[{i}]" if isinstance(data, list) else str(path)
            raise InputError(f"{where}: expected a snapshot (a mapping with rack, model, links, gpus), found {type(document).__name__}")
    return documents


def _load(path):
    # JSON is the format; a large fleet file parses an order of magnitude faster with json.
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    try:
        return check_depth(json.loads(text, parse_constant=_not_a_number), path)
    except json.JSONDecodeError:
        if len(text) > MAX_WRITTEN_BYTES:  # too large for PyYAML to read in time: JSON's error says where
            return parse_json(text, path)
        return parse_yaml(text, path)  # YAML is accepted too; its errors name the line
    except (RecursionError, ValueError):  # nested 100,000 deep, a 5,000-digit number, NaN
        return parse_json(text, path)  # says which, in one line


def _not_a_number(constant):
    raise ValueError(f"{constant} is not a number JSON allows")


def snapshot_header(document, source):
    """(rack, RackModel) of a snapshot document, checked."""
    rack = document.get("rack")
    if not isinstance(rack, str) or not NAME_PATTERN.fullmatch(rack):
        raise InputError(f"{source}: rack must be a rack name ([A-Za-z0-9_.-]+), got {rack!r}")
    model = document.get("model")
    if not isinstance(model, str) or model not in MODELS:
        raise InputError(f"{source}: unknown model {model!r} for rack {rack} (known: {', '.join(sorted(MODELS))})")
    return rack, MODELS[model]


def parse_snapshot(document, source, index):
    """Check a snapshot document against its model's PartIndex; a RackObservation."""
    rack, model = snapshot_header(document, source)
    # As long as `opsctl snapshot --window` may ask: rates over a longer window are no evidence.
    window = number(document.get("window_seconds"), f"{source}: window_seconds", 0, MAX_SECONDS, min_open=True)
    links = document.get("links")
    gpus = document.get("gpus")
    if not isinstance(links, list):
        raise InputError(f"{source}: links must be a list, got {type(links).__name__}")
    if gpus is not None and not isinstance(gpus, list):
        raise InputError(f"{source}: gpus must be a list, got {type(gpus).__name__}")
    prefix = rack + "/"
    try:
        sides = _read_links_fast(links, prefix, index)
    except (TypeError, OverflowError):  # a list where a name belongs, an integer like 10**400
        sides = None
    if sides is None:  # something is off: the entry-by-entry reader finds it and says what
        sides = {side: SideReadings.empty(index.links) for side in SIDES}
        for i, entry in enumerate(links):
            _read_link(entry, f"{source}: links[{i}]", prefix, index, sides)
    observation = RackObservation(rack, model, float(window), str(source), sides,
                                  np.full(len(index.gpu_ids), -1, dtype=np.int8), document=document)
    for i, entry in enumerate(gpus or []):
        _read_gpu(entry, f"{source}: gpus[{i}]", prefix, index, observation)
    observation.trays = _read_trays(document.get("trays"), f"{source}: trays", model)
    return observation


def _relative(value, prefix, what, where):
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}: {what} must be a component id, got {value!r}")
    return value[len(prefix):] if value.startswith(prefix) else value


def _unknown(where, prefix, name, what, known, index):
    """The error for an id that is not one of the rack's: one of another rack says so."""
    other_rack, _, rest = name.partition("/")
    if rest in known:
        return InputError(f"{where}: {name} is a {what} of rack {other_rack}, but this snapshot is of rack {prefix.rstrip('/')}")
    return InputError(f"{where}: {prefix}{name} is not a {what} of {index.model.name}")


def _link_index(entry, where, prefix, index, side):
    if side == "switch" and "link" in entry:
        link_id = _relative(entry.get("link"), prefix, "link", where)
        if link_id not in index.link_index:
            raise _unknown(where, prefix, link_id, "link", index.link_index, index)
        return index.link_index[link_id]
    if side == "switch" and "switch" in entry:
        end = _relative(entry.get("switch"), prefix, "switch", where)
        port_key, table = "switch_port", index.link_by_switch_port
    else:
        gpu_key, port_key = ("peer_gpu", "peer_port") if side == "switch" and "peer_gpu" in entry else ("gpu", "port")
        end = _relative(entry.get(gpu_key), prefix, gpu_key, where)
        table = index.link_by_gpu_port
        if end not in index.gpu_index:
            raise _unknown(where, prefix, end, "GPU", index.gpu_index, index)
    port = entry.get(port_key)
    if isinstance(port, bool) or not isinstance(port, int):
        raise InputError(f"{where}: {port_key} must be a whole number, got {port!r}")
    link = table.get((end, port))
    if link is None:
        raise InputError(f"{where}: {prefix}{end} has no NVLink {port_key} {port} in {index.model.name}")
    return link


def _read_links_fast(links, prefix, index):
    """The links of a well-formed snapshot, read column by column with C-level loops (a fleet
    has hundreds of thousands); None at the first thing out of the ordinary."""
    if not links:
        return {side: SideReadings.empty(index.links) for side in SIDES}
    if set(map(type, links)) != {dict}:
        return None
    sides = [entry.get("side", "gpu") for entry in links]
    if not set(sides) <= set(SIDES):
        return None
    cut = len(prefix)
    readings = {}
    for side in SIDES:
        entries = links if sides[0] == side and sides.count(side) == len(sides) else \
            [entry for entry, which in zip(links, sides) if which == side]
        try:
            keys = list(map(_SIDE_KEYS[side], entries))
        except KeyError:
            return None
        if side == "gpu":
            table = index.link_by_gpu_port
            positions = [table.get((gpu[cut:] if type(gpu) is str and gpu.startswith(prefix) else gpu, port))
                         for gpu, port in keys]
            if not set(map(type, (port for _, port in keys))) <= {int}:
                return None
        else:
            table = index.link_index
            positions = [table.get(name[cut:] if type(name) is str and name.startswith(prefix) else name) for name in keys]
        if None in positions:
            return None
        readings[side] = _columns(entries, np.array(positions, dtype=np.int64), index)
        if readings[side] is None:
            return None
    return readings


_NAN = float("nan")
_SIDE_KEYS = {"gpu": itemgetter("gpu", "port"), "switch": itemgetter("link")}
_COUNTERS_OF = itemgetter(*COUNTERS)
_STATE_OF = itemgetter("state")


def _columns(entries, positions, index):
    readings = SideReadings.empty(index.links)
    if len(positions) and np.bincount(positions, minlength=index.links).max() > 1:
        return None
    readings.observed[positions] = True
    if not entries:
        return readings
    try:
        rows = list(map(_COUNTERS_OF, entries))
    except KeyError:  # some counter not given (NVML did not say): absent, not zero
        rows = [tuple(entry.get(name, _NAN) for name in COUNTERS) for entry in entries]
    if not set(map(type, chain.from_iterable(rows))) <= {int, float}:  # anything else: the entry reader says what
        return None
    counts = np.array(rows, dtype=float)
    if np.any(counts < 0) or np.any(counts >= 2.0**64) or np.any(np.isinf(counts)):
        return None
    readings.counts[positions] = counts
    if any("effective_ber" in entry for entry in entries):
        bers = [entry.get("effective_ber", _NAN) for entry in entries]
        if not set(map(type, bers)) <= {int, float}:
            return None
        ber = np.array(bers, dtype=float)
        if np.any(ber < 0) or np.any(ber > 1):
            return None
        readings.ber[positions] = ber
    try:
        states = list(map(_STATE_OF, entries))
    except KeyError:
        states = [entry.get("state") for entry in entries]
    if not set(states) <= {"up", "down", None}:
        return None
    readings.state[positions] = [-1 if state is None else (1 if state == "down" else 0) for state in states]
    return readings


def _read_link(entry, where, prefix, index, sides):
    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected a mapping, got {type(entry).__name__}")
    side = entry.get("side", "gpu")
    if side not in SIDES:
        raise InputError(f"{where}: side must be gpu or switch, got {side!r}")
    link = _link_index(entry, where, prefix, index, side)
    readings = sides[side]
    if readings.observed[link]:
        raise InputError(f"{where}: {prefix}{index.link_ids[link]} ({side} side) is listed twice")
    readings.observed[link] = True
    for column, name in enumerate(COUNTERS):
        value = entry.get(name)
        if value is None:
            continue
        readings.counts[link, column] = counter(value, f"{where}: {name}")
    state = entry.get("state")
    if state is not None:
        if state not in ("up", "down"):
            raise InputError(f"{where}: state must be up or down, got {state!r}")
        readings.state[link] = 1 if state == "down" else 0
    ber = entry.get("effective_ber")
    if ber is not None:
        if isinstance(ber, bool) or not isinstance(ber, (int, float)) or not 0 <= ber <= 1:
            raise InputError(f"{where}: effective_ber must be a number in [0, 1], got {ber!r}")
        readings.ber[link] = ber


def _read_gpu(entry, where, prefix, index, observation):
    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected a mapping, got {type(entry).__name__}")
    gpu_id = _relative(entry.get("id"), prefix, "id", where)
    gpu = index.gpu_index.get(gpu_id)
    if gpu is None:
        raise _unknown(where, prefix, gpu_id, "GPU", index.gpu_index, index)
    if observation.gpu_reachable[gpu] != -1:
        raise InputError(f"{where}: {prefix}{gpu_id} is listed twice")
    reachable = entry.get("reachable", True)
    if not isinstance(reachable, bool):
        raise InputError(f"{where}: reachable must be true or false, got {reachable!r}")
    observation.gpu_reachable[gpu] = 1 if reachable else 0
    xids = entry.get("xids") or []
    if not isinstance(xids, list):
        raise InputError(f"{where}: xids must be a list, got {type(xids).__name__}")
    events = []
    for j, xid in enumerate(xids):
        at = None
        if isinstance(xid, dict):
            at = _time(xid.get("time"), f"{where}: xids[{j}].time")
            xid = xid.get("xid")
        if isinstance(xid, bool) or not isinstance(xid, int) or not 0 <= xid <= MAX_XID:
            raise InputError(f"{where}: xids[{j}] must be an XID number or {{xid, time}}, got {xid!r}")
        events.append((xid, at))
    if events:
        observation.gpu_xids[gpu] = events
    failed = entry.get("failed_checks") or []
    if not isinstance(failed, list) or not all(isinstance(c, dict) and isinstance(c.get("check"), str) for c in failed):
        raise InputError(f"{where}: failed_checks must be a list of mappings, each with a check name")
    if failed:
        observation.gpu_checks[gpu] = [{"check": c["check"], "value": c.get("value"), "reason": c.get("reason")} for c in failed]


def _time(value, where):
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) <= MAX_UNIX_TIME:
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    raise InputError(f"{where} must be unix seconds or an ISO 8601 time, got {value!r}")


def _read_trays(trays, where, model):
    if trays is None:
        return {}
    if not isinstance(trays, list):
        raise InputError(f"{where} must be a list, got {type(trays).__name__}")
    known = set(model.tray_names())
    found = {}
    for i, entry in enumerate(trays):
        if not isinstance(entry, dict) or not isinstance(entry.get("tray"), str) or not isinstance(entry.get("status"), str):
            raise InputError(f"{where}[{i}]: expected {{tray, status}}, got {entry!r}")
        if entry["tray"] not in known:
            raise InputError(f"{where}[{i}]: {entry['tray']!r} is not a tray of {model.name}")
        found[entry["tray"]] = {"status": entry["status"], "error": entry.get("error")}
    return found


def lost_gpus(observation, index):
    """GPU indices that did not answer while their tray did: lost GPUs, not missing readings."""
    answered = {}
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


def unread_trays(observation, index):
    """Compute trays none of whose links were read at either end, and trays marked unreachable."""
    any_side = np.zeros(index.links, dtype=bool)
    for readings in observation.sides.values():
        any_side |= readings.observed
    read = {index.gpu_tray[gpu] for gpu in np.unique(index.link_gpu[any_side])}
    trays = {t for t in index.model.compute_tray_names() if t not in read}
    trays |= {t for t, info in observation.trays.items() if info["status"] not in TRAY_ANSWERED}
    return sorted(trays)


# --- building a snapshot from the trays' probe documents -------------------------------------
def assemble_snapshot(rack, model, window_s, tray_documents, tray_failures, taken=None):
    """CONTRACT's rack snapshot from `python -m probes snapshot` documents.

    tray_documents: {tray: document}; tray_failures: {tray: reason} for trays that gave none.
    A tray's links name the GPU by its local index; here they get the rack's ids."""
    links, gpus, trays = [], [], []
    for tray in model.tray_names():
        if tray in tray_failures:
            trays.append({"tray": tray, "status": TRAY_UNREAD, "error": tray_failures[tray]})
            continue
        document = tray_documents.get(tray)
        if document is None:
            continue
        trays.append({"tray": tray, "status": document.get("status", "complete"), "error": None})
        tray_id = model.tray_id(rack, tray)
        for link in document.get("links", []):
            links.append(_rack_link(link, rack, tray_id))
        for gpu in document.get("gpus", []):
            local = gpu.get("gpu")
            entry = {"id": f"{tray_id}/gpu{local}" if isinstance(local, int) else gpu.get("id"), "reachable": gpu.get("reachable", True),
                     "xids": gpu.get("xids", [])}
            if gpu.get("failed_checks"):
                entry["failed_checks"] = gpu["failed_checks"]
            gpus.append(entry)
    document = {"format": SNAPSHOT_FORMAT, "rack": rack, "model": model.name, "window_seconds": window_s,
                "links": links, "gpus": gpus, "trays": trays}
    if taken:
        document["taken"] = taken
    return document


def _rack_link(row, rack, tray_id):
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

