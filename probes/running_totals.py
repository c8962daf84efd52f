"""The state a GPU arrives in: the running totals and states DCGM 4.6's health watch judges as they
stand (MonitorNVLinkErrorFields, MonitorMemVolatileDbes, MonitorMemRowRemapUncorrectable,
MonitorMemUnrepairableFlag, MonitorInforom, MonitorPower), read at the run's first reading,
before any load. The window's own rules (probes/counter_checks.py) judge what changes during the run; these
judge what the GPU already holds, so a GPU that comes with a failed link recovery or a double-bit
ECC error does not pass because nothing new happened while it was watched.

Also here: DCGM's warn tier for NVLink 4 CRC errors over the window (MonitorNVLink4Fields: any
CRC error below the 100/s that fails), and NVIDIA's expected NVLink speed per SKU (Health
Validation nvlink_bandwidth_count_speed). Thresholds and sources: probes/references/rules.yaml
(running_totals, nvlink_crc_warn, nvlink_speed).
"""

from __future__ import annotations

from typing import Any

from probes.check_record import Check, GpuContext, check, compare
from probes.sku_references import References


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """The checks of one GPU entry of the run document: its arrival reading (`before`), the
    window's link counters (`counters`) and the NVLink speed its configuration read."""
    component = context.component
    found: list[Check] = []
    before = gpu.get("before") or {}
    if before and not (before.get("lost") or before.get("hung")):
        found += arrival_checks(component, before, refs)
    if gpu.get("counters") and not (gpu.get("lost") or gpu.get("hung")):
        found += crc_warn_checks(component, gpu["counters"], refs)
    speed = (gpu.get("configuration") or {}).get("nvlink_speed_mbps")
    if speed is not None:
        found += speed_checks(component, speed, refs)
    return found


def nvlink_generation(reading: dict[str, Any], refs: References) -> int:
    """The GPU's NVLink generation: its reference file's, else 5 where its links report the
    NVLink 5 recovery counters (as DCGM asks the architecture), else 4."""
    known = (refs.sku or {}).get("nvlink_generation")
    if known:
        return int(known)
    links = reading.get("links") or []
    return 5 if any("recovery_failed" in (link.get("counters") or {}) for link in links) else 4


def arrival_checks(component: str, reading: dict[str, Any], refs: References) -> list[Check]:
    """The running-total rules over one GPU reading (a GpuReading as a dict), as DCGM judges them
    when it looks: what the counters hold, not how they moved."""
    rules = refs.rules["running_totals"]
    found = _nvlink_totals(component, reading, rules["nvlink"], nvlink_generation(reading, refs))
    found += _memory_totals(component, reading, rules)
    found += _inforom_and_power(component, reading, rules)
    return found


def _nvlink_totals(component: str, reading: dict[str, Any], by_generation: dict[Any, Any],
                   generation: int) -> list[Check]:
    rules = by_generation.get(generation) or by_generation.get(str(generation)) or []
    links = reading.get("links") or []
    found: list[Check] = []
    for rule in rules:
        counter = rule["counter"]
        read = [(link["port"], link["counters"][counter]) for link in links
                if (link.get("counters") or {}).get(counter) is not None]
        if not read:  # not reported: the window's nvlink.counters_read says which evidence is missing
            continue
        words = counter.replace("_", " ")
        name = f"nvlink.total.{counter}"
        bad = [(port, value) for port, value in read if value > 0]
        for port, value in bad:
            found.append(check(name, f"{component}/nvl{port:02d}", rule["verdict"], value, 0, "since the driver loaded",
                               ">", rule["source"], f"port {port} arrived with {value:g} {words} counted since the "
                               f"driver loaded or the GPU was last reset (read before the load)"))
        if not bad:
            found.append(check(name, component, "pass", 0, 0, "since the driver loaded", ">", rule["source"],
                               f"no {words} on any of {len(read)} links since the driver loaded"))
    return found


def _memory_totals(component: str, reading: dict[str, Any], rules: dict[str, Any]) -> list[Check]:
    found: list[Check] = []
    dbe = (reading.get("ecc") or {}).get("uncorrected_volatile")
    if dbe is not None:
        rule = rules["volatile_dbe"]
        found.append(compare("ecc.volatile_dbe_total", component, dbe, rule["op"], rule["threshold"],
                             "since the driver loaded", rule["source"],
                             f"{dbe:g} volatile double-bit ECC errors counted since the driver loaded or the GPU was last "
                             f"reset (read before the load)", bad=rule["verdict"]))
    rows = reading.get("remapped_rows")
    if rows is not None and rows.get("uncorrected") is not None:
        rule = rules["row_remap_uncorrectable"]
        found.append(compare("memory.row_remap_uncorrectable", component, rows["uncorrected"], rule["op"],
                             rule["threshold"], "rows", rule["source"],
                             f"{rows['uncorrected']} rows remapped for uncorrectable errors (warns at {rule['threshold']})",
                             bad=rule["verdict"]))
    flag = reading.get("memory_unrepairable")
    if flag is not None:
        rule = rules["memory_unrepairable"]
        found.append(check("memory.unrepairable", component, rule["verdict"] if flag else "pass", bool(flag), False,
                           "flag", "==", rule["source"],
                           "the GPU flags its memory unrepairable: it holds errors row remapping cannot repair" if flag
                           else "memory not flagged unrepairable"))
    return found


def _inforom_and_power(component: str, reading: dict[str, Any], rules: dict[str, Any]) -> list[Check]:
    found: list[Check] = []
    valid = reading.get("inforom_valid")
    if valid is not None:
        rule = rules["inforom"]
        found.append(check("inforom.valid", component, "pass" if valid else rule["verdict"], valid, True, "valid", "!=",
                           rule["source"], "InfoROM valid" if valid else
                           "the InfoROM does not validate (NVML_ERROR_CORRUPTED_INFOROM): its stored ECC, power and "
                           "configuration records cannot be trusted"))
    errors = reading.get("errors") or {}
    rule = rules["power_unreadable"]
    if reading.get("power_w") is not None:
        found.append(check("power.readable", component, "pass", reading["power_w"], None, "W", "unread", rule["source"],
                           f"power read: {reading['power_w']:.0f} W"))
    elif "nvmlDeviceGetPowerUsage" in errors:  # NOT_SUPPORTED is no warning (DCGM skips it too)
        found.append(check("power.readable", component, rule["verdict"], None, None, "W", "unread", rule["source"],
                           f"the GPU's power could not be read: nvmlDeviceGetPowerUsage: {errors['nvmlDeviceGetPowerUsage']}"))
    return found


def crc_warn_checks(component: str, counters: dict[str, Any], refs: References) -> list[Check]:
    """DCGM's warn tier on NVLink 4 and older: CRC errors in the window, below the rate that fails
    (rules.yaml link_counters crc_errors fails those at or above it)."""
    rule = refs.rules["nvlink_crc_warn"]
    fail_at = next(r["threshold"] for r in refs.rules["link_counters"] if r["counter"] == "crc_errors")
    links = counters.get("links") or []
    generation = (refs.sku or {}).get("nvlink_generation")
    if generation is None:  # no reference file: the generation the counters show
        generation = 5 if any("recovery_failed" in link.get("deltas", {}) for link in links) else 4
    if int(generation) not in rule["generations"]:
        return []
    read = [link for link in links if link.get("deltas", {}).get("crc_errors") is not None]
    if not read:
        return []
    window = counters.get("window_s") or 0.0
    found: list[Check] = []
    for link in read:
        count = link["deltas"]["crc_errors"]
        rate = link.get("rates_per_s", {}).get("crc_errors", 0.0)
        if count >= rule["threshold"] and rate < fail_at:
            found.append(check("nvlink.crc_errors_warn", f"{component}/nvl{link['port']:02d}", rule["verdict"], count,
                               rule["threshold"], "in window", rule["op"], rule["source"],
                               f"{count:g} CRC errors on port {link['port']} in {window:.0f} s ({rate:.3g} per second, "
                               f"below the {fail_at:g} per second that fails)"))
    if not found:
        found.append(check("nvlink.crc_errors_warn", component, "pass", 0, rule["threshold"], "in window", rule["op"],
                           rule["source"], f"no CRC error below the failing rate on any of {len(read)} links"))
    return found


def speed_checks(component: str, speed_mbps: float, refs: References) -> list[Check]:
    """The NVLink speed the GPU reports against NVIDIA's figure for its SKU; a SKU NVIDIA gives
    no figure for is not judged here (the rack rule still compares it with its siblings)."""
    rule = refs.rules["nvlink_speed"]
    expected = rule["expected_mbps"].get((refs.sku or {}).get("sku"))
    if expected is None:
        return []
    return [compare("nvlink.speed_mbps", component, speed_mbps, "<", expected, "MB/s per link", rule["source"],
                    f"NVLinks run at {speed_mbps:g} MB/s each (NVIDIA expects {expected:,} MB/s on this GPU)")]
