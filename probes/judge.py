"""Judging a tray's results. Every check says what was judged, the reading, the threshold and
where the threshold comes from (probes/references/*.yaml carry the figures and their sources).

Checks are plain dicts (docs/probe-output.md):
{"check", "component", "verdict", "value", "threshold", "unit", "op", "source", "reason"}
`op` is the comparison that fails: value <op> threshold → the check's verdict is not "pass".
"""

from __future__ import annotations

import math
import operator
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from probes.compute import DTYPES
from probes import running_totals, xids
from probes.gemm import TOLERANCE_SOURCE
from probes.gpu_deadline import DEADLINE_SOURCE
from probes.shipped_yaml import load_shipped_yaml

REFERENCES = Path(__file__).parent / "references"
SHARED_FILES = ("rules.yaml", "xids.yaml")
OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "!=": operator.ne}
GPU_BURN_SOURCE = ("gpu-burn's check: every result compared element by element with the first; cuBLAS "
                   "results are bit-wise reproducible on one GPU (cuBLAS documentation, Results reproducibility)")
PEER_COPY_SOURCE = "a pair of GPUs that cannot copy to each other has no NVLink path (links down, fabric not routing)"
LOST_SOURCE = ("NVML NVML_ERROR_GPU_IS_LOST; NVIDIA XID catalog: XID 79, GPU has fallen off the bus, immediate RESTART_BM "
               "(reboot the machine)")


class ReferencesError(ValueError):
    """A references file that cannot be used."""


@dataclass
class References:
    sku: dict[str, Any] | None  # the GPU model's figures; None for a model without a reference file
    rules: dict[str, Any]
    xids: dict[str, Any]
    sku_source: str | None = None


# What a GPU model's references file may hold: each figure is a mapping with its threshold and
# the source it comes from (every verdict names its source).
FIGURES = {"nvlink_links": "value", "membw": "min_gbps", "nvlink_peer": "min_gbps", "collective": "min_busbw_gbps",
           "tdp": "watts"}


def _load(path: str | Path) -> dict[str, Any]:
    try:
        data = load_shipped_yaml(path)
    except OSError as error:
        raise ReferencesError(f"{path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ReferencesError(f"{path}: not valid YAML{where}: {getattr(error, 'problem', None) or error}") from None
    if not isinstance(data, dict):
        raise ReferencesError(f"{path}: not a mapping")
    return data


def check_sku_references(data: dict[str, Any], path: str | Path) -> None:
    """Refuse a references file that would silently judge nothing: unknown keys, figures that
    are not positive numbers or lack their source, no figure at all."""
    known = {"sku", "names", "pci_device_ids", "nvlink_generation", "fabric_required", "host_link", "gemm", *FIGURES}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ReferencesError(f"{path}: unknown key {unknown[0]!r} (a references file holds {', '.join(sorted(known))})")
    figures = [(key, data[key], FIGURES[key]) for key in FIGURES if key in data]
    gemm = data.get("gemm", {})
    if not isinstance(gemm, dict):
        raise ReferencesError(f"{path}: gemm must be a mapping of dtypes ({', '.join(DTYPES)})")
    for dtype, figure in gemm.items():
        if dtype not in DTYPES:
            raise ReferencesError(f"{path}: gemm.{dtype} is not a dtype the probe runs ({', '.join(DTYPES)})")
        figures.append((f"gemm.{dtype}", figure, "min_tflops"))
    if not figures:
        raise ReferencesError(f"{path}: no figure to judge against (gemm, {', '.join(FIGURES)})")
    for key, figure, field in figures:
        if not isinstance(figure, dict):
            raise ReferencesError(f"{path}: {key} must be a mapping with {field} and source")
        value = figure.get(field)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ReferencesError(f"{path}: {key}.{field} must be a positive number, got {value!r}")
        if not isinstance(figure.get("source"), str) or not figure["source"].strip():
            raise ReferencesError(f"{path}: {key} needs a source (where the figure comes from)")
    if "names" in data and not (isinstance(data["names"], list) and all(isinstance(n, str) for n in data["names"])):
        raise ReferencesError(f"{path}: names must be a list of GPU names as NVML reports them")


def sku_files() -> list[Path]:
    return sorted(p for p in REFERENCES.glob("*.yaml") if p.name not in SHARED_FILES)


def load_references(gpu_name: str | None = None, path: str | None = None, sku: str | None = None,
                    device_id: str | None = None) -> References:
    """The rules, the XID catalog and the figures for the GPU model: by `sku` (h100, gb200…),
    else by its PCI device id as NVML reports it (`device_id`, "2330"), else by the name NVML
    reports; or those of the file `path`. The device id decides where it is known: an H100 NVL
    or H200 NVL is named like the SXM part but is another SKU (DCGM's diag-skus.yaml tells them
    apart by device id), and gets no SXM figures."""
    rules, catalog = _load(REFERENCES / "rules.yaml"), xids.catalog()  # the catalog is read once (probes/xids.py)
    if path is not None:
        figures = _load(path)
        check_sku_references(figures, path)
        return References(figures, rules, catalog, str(path))
    device_id = device_id.lower() if isinstance(device_id, str) else None
    for file in sku_files():
        data = _load(file)
        if sku:
            found = data.get("sku") == sku
        elif device_id:
            found = device_id in [str(d).lower() for d in data.get("pci_device_ids", [])]
        else:
            found = bool(gpu_name and any(gpu_name.startswith(n) for n in data.get("names", [])))
        if found:
            return References(data, rules, catalog, f"probes/references/{file.name}")
    return References(None, rules, catalog)


def check(name: str, component: str, verdict: str, value: Any, threshold: Any, unit: str, op: str, source: str,
          reason: str) -> dict[str, Any]:
    return {"check": name, "component": component, "verdict": verdict, "value": value, "threshold": threshold,
            "unit": unit, "op": op, "source": source, "reason": reason}


def compare(name: str, component: str, value: Any, op: str, threshold: Any, unit: str, source: str, reason: str,
            bad: str = "fail") -> dict[str, Any]:
    """A check whose verdict is `bad` when `value op threshold`, else pass. A reading that is not
    a finite number (NaN compares false with everything, so it would pass) is no evidence:
    incomplete, never a pass."""
    if isinstance(value, float) and not math.isfinite(value):
        return check(name, component, "incomplete", value, threshold, unit, op, source,
                     f"{reason}; the reading is {value}, not a finite number: nothing can be judged from it")
    verdict = bad if OPS[op](value, threshold) else "pass"
    return check(name, component, verdict, value, threshold, unit, op, source, reason)


# --- one GPU -------------------------------------------------------------------------------------
def judge_gpu(gpu: dict[str, Any], refs: References, tray: dict[str, float]) -> list[dict[str, Any]]:
    """The checks of one GPU entry of the run document; `tray` holds the peer medians."""
    component = f"gpu{gpu['index']}"
    checks: list[dict[str, Any]] = []
    if gpu.get("lost"):
        checks.append(check("gpu.lost", component, "fail", True, False, "lost", "==", LOST_SOURCE,
                            gpu.get("lost_reason") or "the GPU stopped answering NVML (GPU_IS_LOST)"))
    if gpu.get("hung"):  # named, and failed on its own account, while its siblings are judged as usual
        checks.append(check("gpu.hung", component, "fail", gpu.get("hung_deadline_s"), gpu.get("hung_deadline_s"),
                            "seconds without an answer", ">=", DEADLINE_SOURCE,
                            gpu.get("hung_reason") or "its NVML calls did not return within the deadline"))
    for failure in gpu.get("failures", []):
        checks.append(check(f"{failure['probe']}.device", component, "fail", failure["error"], None, "error", "raised",
                            "a GPU that fails under load fails burn-in (CUDA error, fell off the bus, no NVLink path)",
                            f"{failure['probe']} failed on this GPU: {failure['error']}"))
    for dtype, result in (gpu.get("gemm") or {}).items():
        checks += _gemm_checks(component, dtype, result, refs, tray)
    if gpu.get("under_load") and not (gpu.get("lost") or gpu.get("hung")):  # gpu.lost/hung fail it already
        checks += _under_load_checks(component, gpu["under_load"], refs)
    if gpu.get("membw") and gpu["membw"].get("gbps") is not None:
        checks += _throughput_checks(component, "membw.gbps", gpu["membw"]["gbps"], "GB/s", refs.sku and refs.sku.get("membw"),
                                     "min_gbps", tray.get("membw"), refs, "device-to-device copy")
    if gpu.get("nvlink"):
        checks += _nvlink_checks(component, gpu["nvlink"], refs)
    if gpu.get("counters"):
        checks += _counter_checks(component, gpu["counters"], refs, lost=bool(gpu.get("lost") or gpu.get("hung")))
    checks += recorded_xid_checks(component, gpu.get("recorded_xids"), refs.xids)
    from probes.tray_depth import depth_checks  # here: tray_depth builds its checks with this module's helpers

    return checks + depth_checks(gpu, refs) + running_totals.checks(gpu, refs)


def _gemm_checks(component: str, dtype: str, result: dict[str, Any], refs: References,
                 tray: dict[str, float]) -> list[dict[str, Any]]:
    if "skipped" in result:
        return []
    name = f"gemm.{dtype}"
    enough = refs.rules["min_evidence"]
    windows = len(result.get("tflops_windows") or [])
    if "checks" not in result:  # stopped before its first verified result: nothing of it to judge
        return [check(f"{name}.windows", component, "incomplete", 0, enough["gemm_windows"], "timed windows", "<",
                      enough["gemm_source"], f"{dtype} GEMM stopped before its first verified result")]
    checks = [] if windows >= enough["gemm_windows"] else [
        check(f"{name}.windows", component, "incomplete", windows, enough["gemm_windows"], "timed windows", "<",
              enough["gemm_source"], f"{windows} timed window(s) of {dtype} GEMM ({result['checks']} results verified) "
              f"in {result.get('seconds', 0):g} s: too short a load for a verdict, at least {enough['gemm_windows']} "
              f"windows needed (a longer --duration)")]
    checks += [
        compare(f"{name}.mismatches", component, result["mismatches"], ">", 0, "wrong elements", GPU_BURN_SOURCE,
                _corruption(result) if result["mismatches"] else f"all {result['checks']} results identical"),
        compare(f"{name}.reference", component, result["max_rel_error"], ">", result["tolerance"],
                "relative to the largest element", TOLERANCE_SOURCE,
                f"result differs from a float64 reference by {result['max_rel_error']:.3g} (tolerance {result['tolerance']:.3g})"),
    ]
    median = result.get("tflops_median")
    if median is None:
        return checks
    sku = (refs.sku or {}).get("gemm", {}).get(dtype)
    checks += _throughput_checks(component, f"{name}.tflops", median, "TFLOPS", sku, "min_tflops", tray.get(name), refs,
                                 f"{dtype} GEMM {result['n']}³, median of {len(result['tflops_windows'])} windows")
    rule = refs.rules["gemm_drop"]
    if result.get("drop_pct") is not None:
        checks.append(compare(f"{name}.drop_pct", component, result["drop_pct"], ">", rule["max_pct"], "%", rule["source"],
                              f"throughput fell {result['drop_pct']:.1f}% from the first to the last quarter of the burn "
                              f"(min window {result['tflops_min']:.0f} TFLOPS)"))
    return checks


def _corruption(result: dict[str, Any]) -> str:
    reason = (f"silent data corruption: {result['mismatches']} wrong elements in {result['corrupted_results']} of "
              f"{result['checks']} results")
    if result["corrupted_results"] == result["checks"]:
        reason += "; every result differs from the first, so the first (golden) result was itself wrong"
    return reason


def _throughput_checks(component: str, name: str, value: float, unit: str, sku_figure: dict[str, Any] | None, key: str,
                       peer_median: float | None, refs: References, what: str) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = []
    if sku_figure and key in sku_figure:
        checks.append(compare(name, component, value, "<", sku_figure[key], unit, sku_figure["source"],
                              f"{what}: {value:.4g} {unit}"))
    rule = refs.rules["peers"]
    if peer_median:
        floor = round(peer_median * (1 - rule["max_below_median_pct"] / 100), 2)
        below = 100 * (1 - value / peer_median)
        checks.append(compare(f"{name}.peers", component, value, "<", floor, unit, rule["source"],
                              f"{value:.4g} {unit} is {below:.1f}% below the tray median {peer_median:.4g}" if below > 0
                              else f"{value:.4g} {unit}, at or above the tray median {peer_median:.4g}"))
    return checks


def _under_load_checks(component: str, under_load: dict[str, Any], refs: References) -> list[dict[str, Any]]:
    rule = refs.rules["clocks_event_reasons"]
    seen = under_load.get("clocks_event_reasons") or []
    bad = [reason for reason in seen if reason in rule["fail"]]
    reason = (f"clocks held down under load by {', '.join(bad)} (max {under_load.get('temperature_c_max')} °C, "
              f"SM clock median {under_load.get('sm_clock_mhz_median')} MHz)" if bad
              else f"no throttling under load ({', '.join(seen) or 'no clock event reasons'})")
    checks = [check("under_load.clocks_event_reasons", component, "fail" if bad else "pass", bad, rule["fail"],
                    "clock event reasons", "any of", rule["source"], reason)]
    if under_load.get("temperature_c_max") is None and refs.sku is not None:
        # Every GPU model with a reference file reports its temperature: without it the rack
        # cannot tell a hot GPU from its siblings.
        checks.append(check("under_load.temperature", component, "incomplete", None, None, "°C", "unread",
                            "NVML nvmlDeviceGetTemperatureV / nvmlDeviceGetTemperature (NVML_TEMPERATURE_GPU)",
                            "the GPU's temperature could not be read under load (neither NVML call answered)"))
    return checks


def _nvlink_checks(component: str, nvlink: dict[str, Any], refs: References) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = []
    peers = nvlink.get("peer_gbps") or {}
    figure = (refs.sku or {}).get("nvlink_peer")
    if peers and figure:
        worst = min(peers, key=lambda peer: peers[peer])
        checks.append(compare("nvlink.peer_gbps", component, peers[worst], "<", figure["min_gbps"], "GB/s", figure["source"],
                              f"slowest peer copy: to gpu{worst} at {peers[worst]:.0f} GB/s"))
    for peer, error in sorted((nvlink.get("peer_errors") or {}).items()):
        checks.append(check("nvlink.peer_copy", component, "fail", error, None, "error", "raised", PEER_COPY_SOURCE,
                            f"copy to gpu{peer} failed: {error}"))
    traffic = [{"port": int(port), "gbps": gbps} for port, gbps in (nvlink.get("link_gbps") or {}).items()
               if gbps is not None]
    if len(traffic) >= 2:
        rule = refs.rules["link_traffic"]
        median = statistics.median(link["gbps"] for link in traffic)
        floor = round(median * rule["min_share_of_median"], 3)
        checks += _per_link("nvlink.link_traffic", traffic, lambda link: link["gbps"], "<", floor, "GB/s", rule["source"],
                            lambda label, value: f"{label} carried {value:.1f} GB/s of the peer copies, the GPU's median "
                            f"link {median:.1f} GB/s", gpu_link(component), component)
    return checks


def _per_link(name: str, links: Sequence[dict[str, Any]], value_of: Callable[[dict[str, Any]], Any], op: str, threshold: Any,
              unit: str, source: str, describe: Callable[[str, Any], str],
              where: Callable[[dict[str, Any]], tuple[str, str, dict[str, Any]]], summary_component: str,
              verdict: str = "fail") -> list[dict[str, Any]]:
    """One check per failing link, or one pass for all of them naming the worst. `where(link)`
    gives a link's (component, label, extra check fields)."""
    measured = [(link, value_of(link)) for link in links]
    measured = [(link, value) for link, value in measured if value is not None]
    if not measured:
        return []
    checks: list[dict[str, Any]] = []
    for link, value in measured:
        if OPS[op](value, threshold):
            component, label, extra = where(link)
            checks.append({**check(name, component, verdict, value, threshold, unit, op, source, describe(label, value)),
                           **extra})
    if checks:
        return checks
    worst = min if op in ("<", "<=") else max
    link, value = worst(measured, key=lambda item: item[1])
    label = where(link)[1]
    return [check(name, summary_component, "pass", value, threshold, unit, op, source,
                  f"all {len(measured)} links {value}" if isinstance(value, str)
                  else f"all {len(measured)} links within limits (worst: {label}, {value:g})")]


def _counter_checks(component: str, counters: dict[str, Any], refs: References, lost: bool = False) -> list[dict[str, Any]]:
    rules = refs.rules
    links = counters.get("links") or []
    window = counters.get("window_s") or 0.0
    sku = refs.sku or {}
    checks: list[dict[str, Any]] = []
    enough = rules["min_evidence"]
    if window < enough["counter_window_s"] and not lost:  # errors seen still count; their absence does not
        checks.append(check("counters.window_s", component, "incomplete", window, enough["counter_window_s"], "s", "<",
                            enough["counter_source"], f"counters read over {window:g} s: too short a window to judge "
                            f"them, at least {enough['counter_window_s']:g} s needed (a longer --duration)"))
    expected = sku.get("nvlink_links")
    if expected and not lost:  # a lost GPU answers nothing: gpu.lost fails it already
        checks.append(_link_count_check(component, links, expected))
    for link in links:  # a counter with no delta over the window is missing evidence, never a clean link
        for name in link.get("went_back") or []:
            checks.append(check(f"nvlink.{name}", f"{component}/nvl{link['port']:02d}", "incomplete", None, None, "",
                                "went back", "NVLink error counters count up until they are reset (NVML "
                                "nvmlDeviceResetNvLinkErrorCounters, a GPU reset); one that reads lower at the end of the "
                                "window wrapped or was reset, so its change over the window is unknown",
                                f"{name.replace('_', ' ')} on port {link['port']} read lower at the end of the window "
                                f"than at its start: not judged"))
    if links:
        checks += link_rule_checks(links, window, rules, gpu_link(component), component)
        if sku.get("nvlink_generation") and not lost:
            checks += _required_counter_checks(component, links, sku["nvlink_generation"], rules)
    if not lost:
        checks += health_checks(component, counters, refs)
    checks += xid_checks(component, counters.get("xids") or [], refs.xids)
    return checks


def health_checks(component: str, counters: dict[str, Any], refs: References) -> list[dict[str, Any]]:
    """What a GPU's own health says with no load on it: ECC, remapped rows, retired pages,
    violation time, fabric and the driver's recovery action. Triage reads these too."""
    sku = refs.sku or {}
    return (_memory_checks(component, counters, refs.rules, required=refs.sku is not None)
            + _fabric_checks(component, counters.get("fabric"), refs.rules, required=bool(sku.get("fabric_required")))
            + _recovery_action_checks(component, counters.get("recovery_action"), refs.rules))


# What a GPU reports because one of its own links fails, not because of itself: the XIDs of
# NVIDIA's NVLink workflows, a fabric mask that says only "bandwidth degraded" (and the limited
# capacity that sums it up) — which a link down makes true — and NVLink bandwidth to its peers,
# which a link down for part of the copy lowers (17 of 18 links: 5.6% below its siblings).
LINK_FABRIC_FLAGS = ("degraded_bw", "summary limited_capacity")
LINK_BANDWIDTH_CHECKS = ("nvlink.peer_gbps", "rack.nvlink_gbps")


def is_link_symptom(check_name: str, value: Any) -> bool:
    if check_name in LINK_BANDWIDTH_CHECKS:
        return True
    if check_name in ("xid", "xid.recorded"):  # an NVLink XID belongs to the GPU's failing link
        return value in xids.nvlink_xids()
    if check_name == "fabric.health":
        return bool(value) and isinstance(value, list) and set(value) <= set(LINK_FABRIC_FLAGS)
    return False


def _required_counter_checks(component: str, links: list[dict[str, Any]], generation: int | str,
                             rules: dict[str, Any]) -> list[dict[str, Any]]:
    """The counters every GPU of this NVLink generation must report. One it does not report
    (NOT_SUPPORTED, a driver that is too old) leaves its rule unjudged: incomplete, never a pass."""
    required = rules["nvlink_required"].get(generation) or rules["nvlink_required"].get(str(generation)) or []
    missing: dict[str, list[int]] = {}
    for link in links:
        for counter in required:
            if counter not in link["deltas"]:
                missing.setdefault(counter, []).append(link["port"])
    if not missing:
        return [check("nvlink.counters_read", component, "pass", [], required, "counters", "missing",
                      rules["nvlink_required_source"], f"every NVLink {generation} counter read on all {len(links)} links")]
    what = "; ".join(f"{counter} on {len(ports)} of {len(links)} links" for counter, ports in missing.items())
    return [check("nvlink.counters_read", component, "incomplete", sorted(missing), required, "counters", "missing",
                  rules["nvlink_required_source"], f"NVLink {generation} counters not reported, their rules not judged: {what}")]


def _link_count_check(component: str, links: list[dict[str, Any]], expected: dict[str, Any]) -> dict[str, Any]:
    """Does the GPU report every NVLink its model has? A link it reports but that is down is
    that link's failure (nvlink.state names it), not the GPU's: whether a flapping link happens
    to be down at the moment of reading must not decide whether its GPU fails. No link at all
    on a model that has them is missing evidence: incomplete, never a pass."""
    reported = len(links)
    down = [link["port"] for link in links if link["state"] != "up"]
    if reported == 0:
        return check("nvlink.link_count", component, "incomplete", 0, expected["value"], "links", "<",
                     expected["source"], f"no NVLink could be read, where this GPU model has {expected['value']}")
    reason = f"{reported} of {expected['value']} NVLinks reported"
    if down:
        reason += f"; down in the window (judged on each link): {', '.join(f'port {p}' for p in down)}"
    return compare("nvlink.link_count", component, reported, "<", expected["value"], "links", expected["source"], reason)


def gpu_link(component: str) -> Callable[[dict[str, Any]], tuple[str, str, dict[str, Any]]]:
    """How a GPU's own links are named in checks: gpu2/nvl05, "port 5"."""
    return lambda link: (f"{component}/nvl{link['port']:02d}", f"port {link['port']}", {})


def link_rule_checks(links: list[dict[str, Any]], window_s: float, rules: dict[str, Any],
                     where: Callable[[dict[str, Any]], tuple[str, str, dict[str, Any]]],
                     summary_component: str) -> list[dict[str, Any]]:
    """Link state, the counter rules and the BER rule over a set of links (GPU or switch side)."""
    state = rules["link_state"]
    checks = _per_link("nvlink.state", links, lambda link: link.get("state"), "!=", "up", "state", state["source"],
                       lambda label, value: f"{label} was {value} during the window", where, summary_component)
    for rule in rules["link_counters"]:
        counter = rule["counter"]
        words = counter.replace("_", " ")
        if rule.get("per_second"):
            unit = "per second"
            value_of = lambda link, c=counter: link["rates_per_s"].get(c)  # noqa: E731
            describe = lambda label, value, w=words: f"{value:.1f} {w} per second on {label} over {window_s:.0f} s"  # noqa: E731
        else:
            unit = "in window"
            value_of = lambda link, c=counter: link["deltas"].get(c)  # noqa: E731
            describe = lambda label, value, w=words: f"{value} {w} in {window_s:.0f} s on {label}"  # noqa: E731
        checks += _per_link(f"nvlink.{rule.get('check', counter)}", links, value_of, rule["op"], rule["threshold"], unit,
                            rule["source"], describe, where, summary_component, verdict=rule["verdict"])
    ber = rules["effective_ber"]
    checks += _per_link("nvlink.effective_ber", links, lambda link: link.get("effective_ber"), ber["op"], ber["threshold"],
                        "errors per bit", ber["source"], lambda label, value: f"effective BER {value:.1e} on {label}",
                        where, summary_component)
    return checks


def switch_checks(links: list[dict[str, Any]], window_s: float, refs: References) -> list[dict[str, Any]]:
    """The link rules over a switch tray's ports, per chip; each failing check names its link."""
    checks: list[dict[str, Any]] = []
    for chip in sorted({link["chip"] for link in links}):
        checks += link_rule_checks(
            [link for link in links if link["chip"] == chip], window_s, refs.rules,
            lambda link: (link["chip"], f"switch port {link['switch_port']} ({link['link']})",
                          {"link": link["link"], "switch_port": link["switch_port"]}),
            chip)
    return checks


def _memory_checks(component: str, counters: dict[str, Any], rules: dict[str, Any],
                   required: bool = True) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = []
    ecc = counters.get("ecc") or {}
    window = counters.get("window_s") or 0.0
    for key, rule in rules["ecc"].items():
        if key in ecc:
            checks.append(compare(f"ecc.{key}", component, ecc[key], ">", 0, "errors in window", rule["source"],
                                  f"{ecc[key]} {key.replace('_', ' ')} ECC errors in {window:.0f} s",
                                  bad=rule["verdict"]))
        elif required:
            checks.append(check(f"ecc.{key}", component, "incomplete", None, 0, "errors in window", ">",
                                rules["ecc_required_source"],
                                f"{key.replace('_', ' ')} ECC errors could not be read (ECC disabled or not supported)"))
    rows = counters.get("remapped_rows")
    if rows is not None:
        bad = [what for what in ("pending", "failure") if rows.get(what)]
        checks.append(check("memory.remapped_rows", component, "fail" if bad else "pass", bad, ["pending", "failure"], "remap state", "any of",
                            rules["remapped_rows"]["source"],
                            f"row remapping {' and '.join(bad)} ({rows['uncorrected']} rows remapped for uncorrectable errors)"
                            if bad else f"no remap pending ({rows['corrected']} + {rows['uncorrected']} rows remapped)"))
    elif required:
        checks.append(check("memory.remapped_rows", component, "incomplete", None, ["pending", "failure"], "remap state",
                            "any of", rules["remapped_rows"]["source"], "remapped rows could not be read"))
    pages = counters.get("retired_pages")
    if pages and pages.get("pending") is not None:
        rule = rules["retired_pages"]
        retired = (pages.get("single_bit") or 0) + (pages.get("double_bit") or 0)
        bad = [what for what, hit in (("pending", pages["pending"]), (f"{retired} retired", retired >= rule["max"])) if hit]
        verdict = "fail" if retired >= rule["max"] else rule["pending"] if pages["pending"] else "pass"
        checks.append(check("memory.retired_pages", component, verdict, bad,
                            ["pending", f"{rule['max']} retired"], "retirement", "any of", rule["source"],
                            f"page retirement: {', '.join(bad)}" if bad
                            else f"no page retirement pending ({retired} pages retired, fails at {rule['max']})"))
    violation = counters.get("violation_s") or {}
    if violation:
        rule = rules["violation"]
        held = {kind: seconds for kind, seconds in sorted(violation.items()) if kind in rule["judged"] and seconds > 0}
        checks.append(check("clocks.violation_s", component, rule["verdict"] if held else "pass", held or 0, 0, "s", ">",
                            rule["source"], f"clocks held by {', '.join(f'{k} limits for {v:.2f} s' for k, v in held.items())} "
                            f"in {window:.0f} s" if held else f"no thermal violation in {window:.0f} s"))
    return checks


def _fabric_checks(component: str, fabric: dict[str, Any] | None, rules: dict[str, Any],
                   required: bool = False) -> list[dict[str, Any]]:
    """NVLink fabric registration (nvmlDeviceGetGpuFabricInfoV) by DCGM's fabric rule: the
    state, then — only once it is completed — its status, the health mask and summary."""
    rule = rules["fabric"]
    if not fabric or fabric.get("state") == "not_supported":
        if not required:
            return []
        return [check("fabric.health", component, "incomplete", None, "completed", "fabric state", "!=", rule["source"],
                      "the NVLink fabric state could not be read, where this GPU model registers with a fabric")]
    state = fabric.get("state")
    found: dict[str, list[str]] = {"fail": [], "warn": []}
    verdict = rule["states"].get(state, "fail")
    if verdict != "pass":
        found[verdict].append(f"state {state}")
    if state == "completed":
        if fabric.get("status") not in (None, 0):
            found["fail"].append(f"status {fabric['status']} (not NVML_SUCCESS)")
        health = fabric.get("health") or {}
        found["fail"] += [flag for flag in rule["fail_flags"] if health.get(flag)]
        summary = rule["summaries"].get(fabric.get("summary"))
        if summary in ("fail", "warn"):
            found[summary].append(f"summary {fabric['summary']}")
    bad = found["fail"] + found["warn"]
    verdict = "fail" if found["fail"] else "warn" if found["warn"] else "pass"
    return [check("fabric.health", component, verdict, bad, "completed, status success, no health flags", "fabric state",
                  "!=", rule["source"], f"fabric: {', '.join(bad)}" if bad
                  else f"fabric registration completed, clique {fabric.get('clique_id')}")]


def _recovery_action_checks(component: str, action: str | None, rules: dict[str, Any]) -> list[dict[str, Any]]:
    """NVML's GPU recovery action (the driver's ask after an XID; XID 154 says it changed)."""
    if action is None:
        return []
    rule = rules["recovery_action"]
    verdict = "fail" if action in rule["fail"] else "warn" if action in rule["warn"] else "pass"
    return [check("gpu.recovery_action", component, verdict, action, rule["fail"] + rule["warn"], "recovery action", "any of",
                  rule["source"], f"the driver asks for: {action.replace('_', ' ')}" if verdict != "pass"
                  else f"no recovery action pending ({action})")]


def _logged_xids(events: list[dict[str, Any]]) -> list[tuple[int, xids.XidRuling, int]]:
    """(code, ruling, count) per distinct XID among `events`, each ruled by NVIDIA's catalog
    (probes/xids.py); an NVLink 5 event that carries its kernel log line's registers is decoded by them."""
    groups: dict[tuple[Any, ...], int] = {}
    for event in events:
        key = (event["xid"], event.get("intr_info"), event.get("error_status"), event.get("driver_major"))
        groups[key] = groups.get(key, 0) + 1
    return [(code, xids.rule(code, intr_info, status, driver), count)
            for (code, intr_info, status, driver), count in sorted(groups.items(), key=lambda item: tuple(map(str, item[0])))]


def _xid_reason(code: int, ruling: xids.XidRuling, count: int, when: str) -> str:
    name = f"{ruling.mnemonic}, {ruling.meaning}" if ruling.mnemonic else ruling.meaning
    decoded = f"; {ruling.decoded}" if ruling.decoded else ""
    return f"XID {code} ({name}{decoded}) logged {count}× {when}; action: {ruling.action}"


def xid_checks(component: str, events: list[dict[str, Any]], catalog: dict[str, Any]) -> list[dict[str, Any]]:
    """One check per XID code logged in the window, ruled by NVIDIA's catalog."""
    checks = [check("xid", component, ruling.verdict, code, ruling.bucket, "XID", "logged", ruling.source,
                    _xid_reason(code, ruling, count, "in the window"))
              for code, ruling, count in _logged_xids(events)]
    if not checks:
        checks.append(check("xid", component, "pass", [], None, "XID", "logged", catalog["source"], "no XID in the window"))
    return checks


RECORDED_SOURCE = ("the kernel log since the NVIDIA driver last loaded (NVRM Xid lines, matched by PCI bus id): "
                   "DCGM's health watch keeps the XIDs it has seen and fails the devastating ones on every later "
                   "check (DcgmHealthWatch.cpp, MonitorDevastatingXids); NVIDIA's Health Validation XID checks read "
                   "the kernel's log")


def recorded_xid_checks(component: str, recorded: dict[str, Any] | None, catalog: dict[str, Any]) -> list[dict[str, Any]]:
    """One check per XID the GPU logged before this run began (probes/kernel_history.py), each
    ruled by the catalog as if it came now: a GPU that arrives with XID 79 in its log is not
    healthy because it logged it a second before the probe looked."""
    if recorded is None:
        return []
    if recorded.get("unread"):
        return [check("xid.recorded", component, "incomplete", None, None, "XID", "logged", RECORDED_SOURCE,
                      f"the kernel log could not be read ({recorded['unread']}): what the GPU logged before this run is unknown")]
    checks = [check("xid.recorded", component, ruling.verdict, code, ruling.bucket, "XID", "logged",
                    f"{ruling.source}; {RECORDED_SOURCE}",
                    _xid_reason(code, ruling, count, "before this run, since the driver loaded"))
              for code, ruling, count in _logged_xids(recorded.get("events") or [])]
    return checks or [check("xid.recorded", component, "pass", [], None, "XID", "logged", RECORDED_SOURCE,
                            "no XID logged since the driver loaded")]


# --- the tray ------------------------------------------------------------------------------------
def peer_medians(gpus: list[dict[str, Any]], refs: References) -> dict[str, float]:
    """Median throughput of the tray's GPUs per measurement, where enough GPUs have one."""
    values: dict[str, list[float]] = {}
    for gpu in gpus:
        for dtype, result in (gpu.get("gemm") or {}).items():
            if result.get("tflops_median") is not None:
                values.setdefault(f"gemm.{dtype}", []).append(result["tflops_median"])
        if (gpu.get("membw") or {}).get("gbps") is not None:
            values.setdefault("membw", []).append(gpu["membw"]["gbps"])
    enough = refs.rules["peers"]["min_gpus"]
    return {name: statistics.median(found) for name, found in values.items() if len(found) >= enough}


def judge_run(document: dict[str, Any], refs: References) -> None:
    """Fill in each GPU's checks."""
    tray = peer_medians(document["gpus"], refs)
    for gpu in document["gpus"]:
        gpu["checks"] = judge_gpu(gpu, refs, tray)


# A tray's status, worst first: incomplete over fail. The probe's exit code answers "can this
# tray's result be trusted at all?": a run that did not finish (a probe crashed, a GPU hung) is
# incomplete even where something also failed, so opsctl runs it again rather than repair on half
# the evidence. The rack's verdict orders them the other way (opsctl/burnin/checks.py SEVERITY).
TRAY_STATUS_ORDER = ("incomplete", "fail", "warn", "pass")


def worst_verdict(checks: list[dict[str, Any]]) -> str | None:
    verdicts = {c["verdict"] for c in checks}
    for verdict in TRAY_STATUS_ORDER:
        if verdict in verdicts:
            return verdict
    return None
