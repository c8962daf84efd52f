"""Counters over a window: what changed between two NVML readings of a GPU.

Judging uses deltas, never lifetime totals: healthy links carry counts from the factory and
earlier jobs (DCGM's health watch judges the change over its window too, never lifetime totals).
A counter that went backwards (driver reload, GPU reset) has no delta, not a negative one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probes.nvml_reader import GpuReading, LinkReading

ECC_KEYS = ("corrected_volatile", "uncorrected_volatile", "corrected_aggregate", "uncorrected_aggregate")
# The link-health snapshot's counters (docs/triage.md; docs/probe-output.md) and where each comes from in a link reading.
SNAPSHOT_COUNTERS = {
    "crc_errors": "crc_errors",
    "replay_errors": "replay_errors",
    "recovery_errors": "recovery_errors",
    "symbol_errors": "symbol_errors",
    "link_down_events": "recovery_failed",  # each drop of the link is a failed recovery (NVLink 5)
    # NVLink 5's own counters, under their reading names (rules.yaml judges each).
    "rcv_errors": "rcv_errors",
    "malformed_packet_errors": "malformed_packet_errors",
    "buffer_overrun_errors": "buffer_overrun_errors",
    "local_link_integrity_errors": "local_link_integrity_errors",
    "effective_errors": "effective_errors",
    "recovery_successful": "recovery_successful",
    "rcv_remote_errors": "rcv_remote_errors",
    "rcv_general_errors": "rcv_general_errors",
    "recovery_events": "recovery_events",
}


def delta(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or after < before:
        return None
    return after - before


def counter_deltas(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """{name: delta} for every counter both readings have."""
    found: dict[str, Any] = {}
    for name in after.keys() & before.keys():
        change = delta(before[name], after[name])
        if change is not None:
            found[name] = change
    return dict(sorted(found.items()))


def link_window(before: LinkReading, after: LinkReading, window_s: float) -> dict[str, Any]:
    """One link over the window: state at both ends, counter deltas and rates, BER as the GPU
    reports it at the end of the window (None where the GPU does not report BER); the symbol BER
    also as NVML packs it (`symbol_ber_raw`), which DCGM's floor is judged on."""
    deltas = counter_deltas(before.counters, after.counters)
    state = "down" if "down" in (before.state, after.state) else after.state
    # A counter that went backwards (wrapped, or reset with the GPU) has no delta: not zero errors.
    went_back = sorted(name for name in after.counters.keys() & before.counters.keys()
                       if before.counters[name] is not None and after.counters[name] is not None
                       and after.counters[name] < before.counters[name])
    return {
        "went_back": went_back,
        "port": after.port,
        "side": "gpu",
        "state": state,
        "state_before": before.state,
        "state_after": after.state,
        "deltas": deltas,
        "rates_per_s": {name: round(value / window_s, 6) for name, value in deltas.items()} if window_s > 0 else {},
        "effective_ber": after.effective_ber,
        "symbol_ber": after.symbol_ber,
        "symbol_ber_raw": after.symbol_ber_raw,
    }


def gpu_window(before: GpuReading, after: GpuReading, xids: list[dict[str, Any]],
               window_s: float | None = None) -> dict[str, Any]:
    """The counters section of a GPU in the run document (docs/probe-output.md). The window is
    the time between the readings unless given."""
    if window_s is None:
        window_s = max(after.time - before.time, 0.0)
    before_links = {link.port: link for link in before.links}
    links = [link_window(before_links[link.port], link, window_s) for link in after.links if link.port in before_links]
    energy = delta(before.energy_j, after.energy_j)
    remapped = None
    if after.remapped_rows is not None:
        remapped = dict(after.remapped_rows)
        if before.remapped_rows is not None:
            for key in ("corrected", "uncorrected"):
                remapped[f"new_{key}"] = delta(before.remapped_rows[key], after.remapped_rows[key])
    return {
        "window_s": round(window_s, 3),
        "ecc": counter_deltas({k: before.ecc.get(k) for k in ECC_KEYS if k in before.ecc},
                              {k: after.ecc.get(k) for k in ECC_KEYS if k in after.ecc}),
        "remapped_rows": remapped,
        "retired_pages": after.retired_pages,
        "energy_j": energy,
        "power_w_mean": round(energy / window_s, 1) if energy is not None and window_s > 0 else None,
        "violation_s": counter_deltas(before.violation_s, after.violation_s),
        "links": links,
        "nvlink_gpu": counter_deltas(before.nvlink_gpu, after.nvlink_gpu),
        "xids": xids,
        "fabric": after.fabric,
        "recovery_action": after.recovery_action,
    }


def snapshot_link(gpu_index: int, link: dict[str, Any]) -> dict[str, Any]:
    """A `link_window` as a row of the snapshot document (counters that NVML gave, only; the
    effective BER and the raw symbol BER where the GPU reports them)."""
    row = {"gpu": gpu_index, "port": link["port"], "side": "gpu", "state": link["state"]}
    for name, source in SNAPSHOT_COUNTERS.items():
        if source in link["deltas"]:
            row[name] = link["deltas"][source]
    for name in ("effective_ber", "symbol_ber_raw"):
        if link.get(name) is not None:
            row[name] = link[name]
    return row
