"""Fault scenario files: YAML that says what is broken in a simulated rack, and when.

    scenario: rack07-seeded
    seed: 7
    noise: {ber: 1.0e-15}   # every healthy link (default)
    faults:
      - kind: link_errors
        link: ct05/gpu1/nvl07          # ids may leave out the rack: rack07/ct05/… works too
        crc_per_s: 180
        replay_per_s: 2

Every fault kind is in FAULT_KINDS below; its keys, their bounds and meaning are its Struct in
scenario_schema.py (docs/schemas/scenario.schema.json, for an editor) and in the README ("Fault
scenarios"). Times are seconds since the simulator starts. Anything unknown or out of range is an
InputError naming the file, the fault and the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opsctl.errors import InputError
from opsctl.yaml_input import MAX_WRITTEN_BYTES, load_yaml_file, parse_yaml

# Link error rates of the NVLink 5 NVML_FI_DEV_NVLINK_COUNT_* counters and of the NVLink data ECC
# errors a GPU totals over its links (the compiler's defaults for bad pins test for them).
NVLINK5_RATES = ("rcv_errors_per_s", "malformed_packet_errors_per_s", "buffer_overrun_errors_per_s",
                 "local_link_integrity_errors_per_s", "effective_errors_per_s", "recovery_failed_per_s",
                 "recovery_successful_per_s", "rcv_remote_errors_per_s", "rcv_general_errors_per_s",
                 "ecc_data_errors_per_s")
# The keys of the data-link (DL) counters: rates (link_errors, bad_pins, noise) and counts held
# since the driver loaded (link_totals). NVML removed those counters on Blackwell (NVML API
# Reference, Change Log, "Changes between v560 and v565"), so a rack of Blackwell GPUs refuses
# them (compiler.py): there they would count where nothing reads them.
DL_RATES = ("crc_per_s", "replay_per_s", "recovery_per_s")
DL_TOTALS = ("crc", "replay", "recovery")

# kind: what it targets (link: link, or gpu and port; part, gpu, tray: that key; None: the rack's
# job). Each kind's keys, their types and bounds are its Struct in scenario_schema.py, its
# effect a handler in compiler.py FAULT_HANDLERS; tests check the three name the same kinds.
FAULT_KINDS: dict[str, str | None] = {
    "link_errors": "link",
    "link_down": "link",
    "link_flap": "link",
    "link_degraded": "link",
    "bad_pins": "part",
    "switch_chip_failed": "part",
    "switch_tray_failed": "part",
    "slow_gpu": "gpu",
    "thermal_throttle": "gpu",
    "power_brake": "gpu",
    "ecc": "gpu",
    "row_remap": "gpu",
    "xid": "gpu",
    "sdc": "gpu",
    "gpu_lost": "gpu",
    "gpu_hang": "gpu",
    "not_supported": "gpu",
    "fabric_degraded": "gpu",
    "tray_unreachable": "tray",
    # The NVLink domain as one job.
    "imex_missing": "tray",
    "fabric_clique": "gpu",
    "nccl_fallback": None,
    "switch_chip_degraded": "part",
    "sxid": "part",
    "driver_reload": "tray",
    "gpu_reset": "gpu",
    # Tray depth.
    "hbm_bad_cells": "gpu",
    "firmware_mismatch": "tray",
    "ecc_disabled": "gpu",
    "pcie_degraded": "gpu",
    "deterministic_sdc": "gpu",
    "c2c_link_down": "gpu",
    # What a GPU arrives with (running totals and states DCGM reads as they are).
    "link_totals": "link",
    "volatile_dbe": "gpu",
    "memory_unrepairable": "gpu",
    "inforom_invalid": "gpu",
    "power_unreadable": "gpu",
}
# In-spec noise by the rulebook: an effective BER far below 1e-12, and no counted error. No CRC:
# DCGM 4.6 warns on any CRC error in its window on NVLink 4 (MonitorNVLink4Fields) and fails any
# CRC total there (MonitorNVLinkErrorFields), so a healthy link counts none. No replay: DCGM fails a
# link on any replay. A scenario of an NVLink 4 rack may still add crc_per_s or replay_per_s to its
# noise, and then expects what the rules say of it; on NVLink 5 every counted error fails
# (MonitorNVLink5Fields), so its only in-spec noise is the BER.
DEFAULT_NOISE = {"ber": 1e-15}


@dataclass(frozen=True)
class Fault:
    index: int
    kind: str
    target: str  # component id as written (link/gpu/part/tray), or "all"
    port: int | None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"faults[{self.index}] ({self.kind})"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    seed: int
    rack: str | None
    noise: dict[str, float]
    faults: tuple[Fault, ...]
    source: str


def _given(struct: Any) -> dict[str, Any]:
    """The keys a file gave (a key left out is UNSET in the schema's Struct)."""
    import msgspec

    return {key: value for key, value in msgspec.structs.asdict(struct).items() if value is not msgspec.UNSET}


def _fault(index: int, spec: Any, source: object) -> Fault:
    """One fault as the compiler reads it, and the rules between its keys a schema cannot say."""
    from opsctl.simulation.scenario_schema import PEOPLE_FIELDS, TARGET_FIELDS

    kind = str(spec.__struct_config__.tag)
    given = _given(spec)
    where = f"{source}: faults[{index}] ({kind})"
    params = {key: value for key, value in given.items() if key not in (*PEOPLE_FIELDS, *TARGET_FIELDS)}
    if "end_s" in params and params["end_s"] <= params.get("start_s", 0):
        raise InputError(f"{where}: end_s must be after start_s")
    if kind == "link_flap" and params.get("down_s", 5.0) >= params.get("period_s", 60.0):
        raise InputError(f"{where}: down_s must be shorter than period_s")
    if kind == "bad_pins" and "links" in params and "fraction" in params:
        raise InputError(f"{where}: give links or fraction, not both")
    target = FAULT_KINDS[kind]
    if target is None:  # a fault of the rack's job as a whole
        return Fault(index=index, kind=kind, target="rack", port=None, params=params)
    if target == "link" and "link" not in given:
        if "gpu" not in given or "port" not in given:
            raise InputError(f"{where}: give link (an id) or gpu and port")
        return Fault(index=index, kind=kind, target=given["gpu"], port=given["port"], params=params)
    return Fault(index=index, kind=kind, target=given[target], port=None, params=params)


def parse_scenario(data: object, source: object) -> Scenario:
    from opsctl.input_schema import convert
    from opsctl.simulation.scenario_schema import ScenarioFile

    document = convert(data, ScenarioFile, source)
    noise = dict(DEFAULT_NOISE)
    if document.noise is not None:
        noise.update(_given(document.noise))
    return Scenario(
        name=document.scenario or str(source),
        description=document.description or "",
        seed=document.seed,
        rack=document.rack,
        noise=noise,
        faults=tuple(_fault(index, spec, source) for index, spec in enumerate(document.faults or ())),
        source=str(source),
    )


def load_scenario(path: str | Path) -> Scenario:
    return parse_scenario(load_yaml_file(path, MAX_WRITTEN_BYTES), path)


def healthy_scenario(name: str = "healthy", seed: int = 0) -> Scenario:
    """What a sim rack with no scenario file runs: in-spec noise only."""
    return parse_scenario({"scenario": name, "seed": seed}, f"<{name}>")


def scenario_from_text(text: str, source: object = "<text>") -> Scenario:
    return parse_scenario(parse_yaml(text, source), source)
