"""Fault scenario files: YAML that says what is broken in a simulated rack, and when.

    scenario: rack07-seeded
    seed: 7
    noise: {crc_per_s: 0.002, ber: 1.0e-15}   # every healthy link
    faults:
      - kind: link_errors
        link: ct05/gpu1/nvl07          # ids may leave out the rack: rack07/ct05/… works too
        crc_per_s: 180
        replay_per_s: 2

Every fault kind, its keys and their meaning are in FAULT_KINDS below and in the README
("Fault scenarios"). Times are seconds since the simulator starts. Anything unknown or out of
range is an InputError naming the file, the fault and the key.
"""

import math
from dataclasses import dataclass, field

from opsctl.errors import InputError
from opsctl.input_checks import shown
from opsctl.yaml_input import MAX_WRITTEN_BYTES, load_yaml_file, parse_yaml, require_mapping

_NUMBER = "number"
_COUNT = "count"
_FRACTION = "fraction"  # 0 < x ≤ 1
_PROBABILITY = "probability"  # 0 ≤ x ≤ 1
_BOOL = "bool"
_TEXT_LIST = "text list"
_TEXT = "text"

_RECOVERY_ACTION = "recovery action"
RECOVERY_ACTIONS = ("none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset")  # NVML's nvmlDeviceGpuRecoveryAction_t
# Link error rates: the data-link counters (NVLink 4 and older; CRC also on NVLink 5) and the
# NVLink 5 NVML_FI_DEV_NVLINK_COUNT_* counters, each the rate its counter counts at.
NVLINK5_RATES = ("rcv_errors_per_s", "malformed_packet_errors_per_s", "buffer_overrun_errors_per_s",
                 "local_link_integrity_errors_per_s", "effective_errors_per_s", "recovery_failed_per_s",
                 "recovery_successful_per_s")
_RATES = {"crc_per_s": _NUMBER, "replay_per_s": _NUMBER, "recovery_per_s": _NUMBER, "symbol_per_s": _NUMBER,
          **{key: _NUMBER for key in NVLINK5_RATES}, "ber": _PROBABILITY}
_WINDOW = {"start_s": _NUMBER, "end_s": _NUMBER}

# kind: (what it targets, {key: type}, required keys)
FAULT_KINDS = {
    "link_errors": ("link", {**_RATES, **_WINDOW, "ramp_s": _NUMBER}, ()),
    "link_down": ("link", dict(_WINDOW), ()),
    "link_flap": ("link", {**_WINDOW, "period_s": _NUMBER, "down_s": _NUMBER}, ()),
    "link_degraded": ("link", {**_WINDOW, "factor": _FRACTION}, ("factor",)),
    "bad_pins": ("part", {**_RATES, **_WINDOW, "ramp_s": _NUMBER, "links": _COUNT, "fraction": _FRACTION, "down": _BOOL}, ()),
    "switch_chip_failed": ("part", dict(_WINDOW), ()),
    "switch_tray_failed": ("part", dict(_WINDOW), ()),
    "slow_gpu": ("gpu", {**_WINDOW, "factor": _FRACTION}, ("factor",)),
    "thermal_throttle": ("gpu", {**_WINDOW, "clock_factor": _FRACTION, "temperature_c": _NUMBER, "after_busy_s": _NUMBER}, ()),
    "power_brake": ("gpu", {**_WINDOW, "clock_factor": _FRACTION, "after_busy_s": _NUMBER}, ()),
    "ecc": ("gpu", {**_WINDOW, "corrected_per_s": _NUMBER, "uncorrected": _COUNT}, ()),
    "row_remap": ("gpu", {"start_s": _NUMBER, "corrected_rows": _COUNT, "uncorrected_rows": _COUNT, "pending": _BOOL, "failure": _BOOL}, ()),
    # intr_info and error_status: the registers of the kernel log line (XIDs 144-150), 0x… in YAML.
    "xid": ("gpu", {"xid": _COUNT, "at_s": _NUMBER, "repeat_s": _NUMBER, "count": _COUNT,
                    "recovery_action": _RECOVERY_ACTION, "intr_info": _COUNT, "error_status": _COUNT}, ("xid",)),
    "sdc": ("gpu", {**_WINDOW, "probability": _PROBABILITY}, ("probability",)),
    "gpu_lost": ("gpu", {"start_s": _NUMBER}, ()),
    "gpu_hang": ("gpu", {**_WINDOW, "nvml": _BOOL}, ()),
    "not_supported": ("gpu", {"calls": _TEXT_LIST, "fields": _TEXT_LIST}, ()),
    "fabric_degraded": ("gpu", {**_WINDOW, "route_unhealthy": _BOOL}, ()),
    "tray_unreachable": ("tray", {}, ()),
    # The NVLink domain as one job: IMEX not running on a tray, a GPU registered in another
    # clique, NCCL taking the network instead of NVLink (no target: the rack's job), a switch
    # chip whose every link carries only `factor` of its bandwidth.
    "imex_missing": ("tray", {}, ()),
    "fabric_clique": ("gpu", {"clique_id": _COUNT}, ("clique_id",)),
    "nccl_fallback": (None, {}, ()),
    "switch_chip_degraded": ("part", {**_WINDOW, "factor": _FRACTION}, ("factor",)),
    # Tray depth: a weak HBM range, a tray flashed with another VBIOS, ECC off, a PCIe link
    # trained below its best (HGX), a GPU that computes the same wrong result every time.
    "hbm_bad_cells": ("gpu", {"offset_gib": _NUMBER, "size_mib": _NUMBER}, ("offset_gib", "size_mib")),
    "firmware_mismatch": ("tray", {"vbios": _TEXT}, ("vbios",)),
    "ecc_disabled": ("gpu", {}, ()),
    "pcie_degraded": ("gpu", {"width": _COUNT, "gen": _COUNT}, ()),
    "deterministic_sdc": ("gpu", {}, ()),
    "c2c_link_down": ("gpu", {}, ()),  # GB200: the GPU's NVLink-C2C link to its Grace CPU inactive
}
TARGET_KEYS = {"link": ("link", "gpu", "port"), "part": ("part",), "gpu": ("gpu",), "tray": ("tray",), None: ()}
NOISE_KEYS = {"crc_per_s": _NUMBER, "replay_per_s": _NUMBER, "symbol_per_s": _NUMBER, "ber": _PROBABILITY}
# In-spec noise by the rulebook: CRC far below DCGM's 100/s, an effective BER far below 1e-12.
# No replay: DCGM fails a link on any replay in its window, so a replay is a fault, not noise
# (a scenario may still add replay_per_s to its noise, and then expects those links to fail).
DEFAULT_NOISE = {"crc_per_s": 0.002, "ber": 1e-15}
TOP_KEYS = {"scenario", "description", "seed", "rack", "noise", "faults"}
# What one scenario may ask of the simulator, so that no file makes a probe or an exporter grow
# without bound: a 1 µs flap or XID repeat is a million events a second on every GPU it names.
MAX_FAULTS = 5_000
MIN_REPEAT_S = 1.0  # an XID repeats, a link flaps, at most once a second
MAX_XID_COUNT = 10_000  # repeats of one xid fault
MAX_WHOLE = 2**32 - 1  # counts, XID codes and the kernel log's 32-bit registers


@dataclass(frozen=True)
class Fault:
    index: int
    kind: str
    target: str  # component id as written (link/gpu/part/tray), or "all"
    port: int | None
    params: dict = field(default_factory=dict)

    @property
    def label(self):
        return f"faults[{self.index}] ({self.kind})"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    seed: int
    rack: str | None
    noise: dict
    faults: tuple
    source: str


def _value(value, kind, where):
    if kind == _BOOL:
        if not isinstance(value, bool):
            raise InputError(f"{where} must be true or false, got {value!r}")
        return value
    if kind == _RECOVERY_ACTION:
        if value not in RECOVERY_ACTIONS:
            raise InputError(f"{where} must be one of {', '.join(RECOVERY_ACTIONS)}, got {value!r}")
        return value
    if kind == _TEXT:
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{where} must be text, got {value!r}")
        return value
    if kind == _TEXT_LIST:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise InputError(f"{where} must be a list of names, got {value!r}")
        return list(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where} must be a number, got {value!r}")
    if (isinstance(value, float) and not math.isfinite(value)) or value < 0:  # isfinite(10**400) overflows
        raise InputError(f"{where} must be a finite number ≥ 0, got {shown(value)}")
    if kind == _COUNT and (not isinstance(value, int)):
        raise InputError(f"{where} must be a whole number, got {value!r}")
    if kind == _COUNT and value > MAX_WHOLE:
        raise InputError(f"{where} must be at most {MAX_WHOLE}, got {shown(value)}")
    if kind == _FRACTION and not 0 < value <= 1:
        raise InputError(f"{where} must be in (0, 1], got {value!r}")
    if kind == _PROBABILITY and value > 1:
        raise InputError(f"{where} must be in [0, 1], got {value!r}")
    return value


def _parse_fault(index, raw, source):
    where = f"{source}: faults[{index}]"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected a mapping with a 'kind', got {type(raw).__name__}")
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind not in FAULT_KINDS:  # a list is no kind (and cannot be looked up)
        raise InputError(f"{where}: unknown kind {kind!r} (known: {', '.join(sorted(FAULT_KINDS))})")
    where = f"{source}: faults[{index}] ({kind})"
    target_kind, keys, required = FAULT_KINDS[kind]
    allowed = {"kind", "id", "note", *TARGET_KEYS[target_kind], *keys}
    unknown = sorted(map(str, set(raw) - allowed))
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")
    for key in required:
        if key not in raw:
            raise InputError(f"{where}: missing {key}")
    params = {key: _value(raw[key], keys[key], f"{where}: {key}") for key in keys if key in raw}
    if "end_s" in params and params["end_s"] <= params.get("start_s", 0):
        raise InputError(f"{where}: end_s must be after start_s")
    if kind == "link_flap" and params.get("down_s", 5.0) >= params.get("period_s", 60.0):
        raise InputError(f"{where}: down_s must be shorter than period_s")
    for key in ("repeat_s", "period_s"):
        if key in params and params[key] < MIN_REPEAT_S:
            raise InputError(f"{where}: {key} must be at least {MIN_REPEAT_S:g} s (a faster {kind} floods the simulator), "
                             f"got {params[key]!r}")
    if params.get("count", 0) > MAX_XID_COUNT:
        raise InputError(f"{where}: count must be at most {MAX_XID_COUNT:,}, got {shown(params['count'])}")
    if kind == "bad_pins" and "links" in params and "fraction" in params:
        raise InputError(f"{where}: give links or fraction, not both")
    if kind == "bad_pins" and params.get("links") == 0:
        raise InputError(f"{where}: links must be at least 1")

    port = None
    if target_kind is None:  # a fault of the rack's job as a whole
        return Fault(index=index, kind=kind, target="rack", port=None, params=params)
    if target_kind == "link" and "link" not in raw:
        if "gpu" not in raw or "port" not in raw:
            raise InputError(f"{where}: give link (an id) or gpu and port")
        port = raw["port"]
        if isinstance(port, bool) or not isinstance(port, int) or port < 0:
            raise InputError(f"{where}: port must be a whole number ≥ 0, got {port!r}")
        target = raw["gpu"]
    else:
        key = TARGET_KEYS[target_kind][0]
        if key not in raw:
            raise InputError(f"{where}: missing {key}")
        target = raw[key]
    if not isinstance(target, str) or not target:
        raise InputError(f"{where}: the {target_kind} must be a component id, got {target!r}")
    return Fault(index=index, kind=kind, target=target, port=port, params=params)


def parse_scenario(data, source):
    data = require_mapping(data, source)
    unknown = sorted(map(str, set(data) - TOP_KEYS))
    if unknown:
        raise InputError(f"{source}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(TOP_KEYS))})")
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"{source}: seed must be a whole number, got {seed!r}")
    noise_raw = data.get("noise") or {}
    if not isinstance(noise_raw, dict):
        raise InputError(f"{source}: noise must be a mapping of rates")
    unknown = sorted(map(str, set(noise_raw) - set(NOISE_KEYS)))
    if unknown:
        raise InputError(f"{source}: noise: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(NOISE_KEYS)})")
    noise = {**DEFAULT_NOISE, **{k: _value(v, NOISE_KEYS[k], f"{source}: noise: {k}") for k, v in noise_raw.items()}}
    faults_raw = data.get("faults") or []
    if not isinstance(faults_raw, list):
        raise InputError(f"{source}: faults must be a list")
    if len(faults_raw) > MAX_FAULTS:
        raise InputError(f"{source}: {len(faults_raw):,} faults; a scenario holds at most {MAX_FAULTS:,}")
    for key in ("scenario", "description", "rack"):
        if key in data and data[key] is not None and not isinstance(data[key], str):
            raise InputError(f"{source}: {key} must be text")
    return Scenario(
        name=data.get("scenario") or str(source),
        description=data.get("description") or "",
        seed=seed,
        rack=data.get("rack"),
        noise=noise,
        faults=tuple(_parse_fault(i, raw, source) for i, raw in enumerate(faults_raw)),
        source=str(source),
    )


def load_scenario(path):
    return parse_scenario(load_yaml_file(path, MAX_WRITTEN_BYTES), path)


def healthy_scenario(name="healthy", seed=0):
    """What a sim rack with no scenario file runs: in-spec noise only."""
    return parse_scenario({"scenario": name, "seed": seed}, f"<{name}>")


def scenario_from_text(text, source="<text>"):
    return parse_scenario(parse_yaml(text, source), source)
