"""The GPU's link to its host CPU: on HGX the PCIe link's generation and width against the
most the GPU supports, its replay counter and its AER error counters over the run. The generation
and width are judged from a reading taken while the pinned host copies run (probes/host_copy.py)
and only at performance state P0, as DCGM's pcie plugin does: a GPU out of P0 may run its link
slower to save power, which is no fault. A GB200 GPU
reaches its Grace CPU over NVLink-C2C, which NVML does not report as a PCIe link; there the
PCIe calls answer NOT_SUPPORTED and only what is read is judged (the SKU's reference file says
`host_link: pcie` where a PCIe link must be read).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from probes.check_record import Check, GpuContext, check, compare
from probes.sku_references import References

CALLS = {"generation": "nvmlDeviceGetCurrPcieLinkGeneration", "max_generation": "nvmlDeviceGetGpuMaxPcieLinkGeneration",
         "width": "nvmlDeviceGetCurrPcieLinkWidth", "max_width": "nvmlDeviceGetMaxPcieLinkWidth",
         "replays": "nvmlDeviceGetPcieReplayCounter", "pstate": "nvmlDeviceGetPerformanceState"}
P0 = 0  # NVML_PSTATE_0: the performance state at which DCGM checks a PCIe link
# The GPU's PCIe Advanced Error Reporting counters, by the PCIe error classes (nvml.h field ids,
# named in nvidia-ml-py 13.580.65, the floor): one batched nvmlDeviceGetFieldValues call.
AER_FIELDS = {"correctable": "NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS",
              "non_fatal": "NVML_FI_DEV_PCIE_COUNT_NON_FATAL_ERROR",
              "fatal": "NVML_FI_DEV_PCIE_COUNT_FATAL_ERROR"}

Link = dict[str, Any]


def read(nvml: Any, handle: Any, now: Callable[[], float]) -> Link:
    """One reading of the host link: {generation, max_generation, width, max_width, replays,
    aer: {correctable, non_fatal, fatal}, time, unread}."""
    link: Link = {"time": now(), "unread": {}}
    for key, call in CALLS.items():
        try:
            link[key] = int(getattr(nvml, call)(handle))
        except nvml.NVMLError as error:
            link[key] = None
            link["unread"][key] = f"{call}: {error}"
    link["aer"] = _read_aer(nvml, handle, link["unread"])
    return link


def _read_aer(nvml: Any, handle: Any, unread: dict[str, str]) -> dict[str, int | None]:
    fields = {name: getattr(nvml, const) for name, const in AER_FIELDS.items() if hasattr(nvml, const)}
    found: dict[str, int | None] = {name: None for name in AER_FIELDS}
    if not fields:
        return found
    try:
        values = nvml.nvmlDeviceGetFieldValues(handle, list(fields.values()))
    except nvml.NVMLError as error:
        unread["aer"] = f"nvmlDeviceGetFieldValues: {error}"
        return found
    for (name, const), value in zip(fields.items(), values):
        if value.nvmlReturn == nvml.NVML_SUCCESS:
            found[name] = int(value.value.ullVal if value.valueType == nvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                              else value.value.uiVal)
        else:
            unread[f"aer.{name}"] = f"{AER_FIELDS[name]}: {nvml.NVMLError(value.nvmlReturn)}"
    return found


def window(before: Link, after: Link, under_copies: Link | None = None) -> Link:
    """The `host_link` section of a GPU entry: the link as read while the host copies ran (else as
    the run ends, `read` says which) with the performance state then, and the replays and AER
    errors of the run."""
    judged = under_copies if under_copies is not None else after
    link = {key: judged.get(key) for key in ("generation", "max_generation", "width", "max_width", "pstate")}
    link["read"] = "during the host copies" if under_copies is not None else "at the end of the run"
    link["unread"] = {**before.get("unread", {}), **after.get("unread", {}), **judged.get("unread", {})}
    seconds = max(0.0, after["time"] - before["time"])
    if before.get("replays") is not None and after.get("replays") is not None:
        link["replays"] = after["replays"] - before["replays"]
        link["window_s"] = round(seconds, 3)
    start, end = before.get("aer") or {}, after.get("aer") or {}
    errors = {name: end[name] - start[name] for name in AER_FIELDS
              if start.get(name) is not None and end.get(name) is not None}
    if errors:
        link["aer_errors"] = errors
    return link


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """The host link over the run, where it was read; a PCIe link must be, where the SKU says `host_link: pcie`."""
    if not gpu.get("host_link"):
        return []
    return checks(context.component, gpu["host_link"], refs.rules, required=(refs.sku or {}).get("host_link") == "pcie")


def checks(component: str, link: Link, rules: dict[str, Any], required: bool = False) -> list[Check]:
    rule = rules["host_link"]
    found: list[Check] = []
    # DCGM checks the link only at P0; a state NVML did not give is judged (as before it was read).
    at_p0 = link.get("pstate") in (None, P0)
    for what, best in (("generation", "max_generation"), ("width", "max_width")) if at_p0 else ():
        source = rule[f"pcie_{what}"]["source"]
        if link.get(what) is None or link.get(best) is None:
            if required:
                found.append(check(f"host_link.pcie_{what}", component, "incomplete", None, None, what, "<",
                                   rule["pcie_required_source"], f"PCIe link {what} not read ({link['unread'].get(what) or link['unread'].get(best)})"))
            continue
        unit = "generation" if what == "generation" else "lanes"
        when = f", read {link['read']} at P0" if link.get("pstate") == P0 and link.get("read") else ""
        found.append(compare(f"host_link.pcie_{what}", component, link[what], "<", link[best], unit,
                             f"{source}; {rule['pcie_p0_source']}",
                             f"PCIe link {'Gen' if what == 'generation' else 'x'}{link[what]}, the GPU's best "
                             f"{'Gen' if what == 'generation' else 'x'}{link[best]}{when}"))
    if link.get("replays") is not None and link.get("window_s"):
        per_minute = link["replays"] / link["window_s"] * 60.0
        limit = rule["replay_per_minute"]
        found.append(compare("host_link.pcie_replays", component, round(per_minute, 3), ">", limit["max"], "per minute",
                             limit["source"], f"{link['replays']} PCIe replays in {link['window_s']:.0f} s"))
    found += _aer_checks(component, link, rule["pcie_aer"])
    return found


def _aer_checks(component: str, link: Link, rule: dict[str, Any]) -> list[Check]:
    """host_link.pcie_aer: any uncorrectable (non-fatal or fatal) PCIe error of the run fails;
    host_link.pcie_aer_correctable: correctable ones a minute above DCGM's pcie plugin limit fail,
    judged, as DCGM does, only over a window of a minute or more."""
    errors = link.get("aer_errors") or {}
    found = []
    parts = [f"{errors[name]} {name.replace('_', '-')}" for name in ("fatal", "non_fatal", "correctable") if name in errors]
    if "non_fatal" in errors or "fatal" in errors:
        uncorrectable = errors.get("non_fatal", 0) + errors.get("fatal", 0)
        found.append(compare("host_link.pcie_aer", component, uncorrectable, ">", rule["max_uncorrectable"], "errors",
                             rule["source"], f"PCIe AER errors over the run: {', '.join(parts)}"))
    window_s = link.get("window_s") or 0.0
    if "correctable" in errors and window_s >= 60.0:
        correctable = rule["correctable"]
        at_best = (link.get("max_generation"), link.get("max_width")) == tuple(correctable["full_link"])
        limit = correctable["per_minute_full_link"] if at_best else correctable["per_minute_other"]
        per_minute = round(errors["correctable"] / window_s * 60.0, 3)
        found.append(compare("host_link.pcie_aer_correctable", component, per_minute, ">", limit, "per minute",
                             correctable["source"], f"{errors['correctable']} correctable PCIe AER errors in "
                             f"{window_s:.0f} s; the limit for a Gen{link.get('max_generation')} "
                             f"x{link.get('max_width')} GPU is {limit} a minute"))
    return found
