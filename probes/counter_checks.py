"""The window's counters of one GPU: long enough a window, every NVLink its model has, the link
rules over its links (probes/link_rules.py), every counter its NVLink generation must report, its
own health (probes/gpu_health.py) and the XIDs of the window (probes/xid_checks.py).
"""

from __future__ import annotations

from typing import Any

from probes.check_record import Check, GpuContext, check, compare
from probes.gpu_health import health_checks
from probes.link_rules import gpu_counter_checks, gpu_link, link_rule_checks
from probes.sku_references import References
from probes.xid_checks import xid_checks


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """The window's counters, where the GPU entry has them; of a GPU lost or hung, the errors seen
    still count, their absence does not."""
    if not gpu.get("counters"):
        return []
    return counter_checks(context.component, gpu["counters"], refs, lost=bool(gpu.get("lost") or gpu.get("hung")))


def counter_checks(component: str, counters: dict[str, Any], refs: References, lost: bool = False) -> list[Check]:
    rules = refs.rules
    links = counters.get("links") or []
    window = counters.get("window_s") or 0.0
    sku = refs.sku or {}
    checks: list[Check] = []
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
    checks += gpu_counter_checks(component, counters, rules)
    if not lost:
        checks += health_checks(component, counters, refs)
    checks += xid_checks(component, counters.get("xids") or [], refs.xids)
    return checks


def _required_counter_checks(component: str, links: list[dict[str, Any]], generation: int | str,
                             rules: dict[str, Any]) -> list[Check]:
    """The counters every GPU of this NVLink generation must report. One it does not report
    (NOT_SUPPORTED, a driver that is too old) leaves its rule unjudged: incomplete, never a pass.
    The counters the generation does not have (rules.yaml nvlink_not_reported: the data-link ones
    on NVLink 5) are neither: the pass says they are not this generation's."""
    required = _for_generation(rules["nvlink_required"], generation)
    missing: dict[str, list[int]] = {}
    for link in links:
        for counter in required:
            if not _reported(link, counter):
                missing.setdefault(counter, []).append(link["port"])
    if not missing:
        not_its = _for_generation(rules["nvlink_not_reported"], generation)
        absent = [counter for counter in not_its if not any(_reported(link, counter) for link in links)]
        reason, source = f"every NVLink {generation} counter read on all {len(links)} links", rules["nvlink_required_source"]
        if absent:
            reason += f"; {', '.join(absent)} not reported, as NVLink {generation} has none"
            source += "; " + rules["nvlink_not_reported_source"]
        return [check("nvlink.counters_read", component, "pass", [], required, "counters", "missing", source, reason)]
    what = "; ".join(f"{counter} on {len(ports)} of {len(links)} links" for counter, ports in missing.items())
    return [check("nvlink.counters_read", component, "incomplete", sorted(missing), required, "counters", "missing",
                  rules["nvlink_required_source"], f"NVLink {generation} counters not reported, their rules not judged: {what}")]


def _reported(link: dict[str, Any], name: str) -> bool:
    """Did the link report it: a counter's delta over the window, or a reading at its end (the symbol BER)?"""
    return name in link["deltas"] or link.get(name) is not None


def _for_generation(table: dict[Any, list[str]], generation: int | str) -> list[str]:
    """A rulebook table's counters for an NVLink generation (by its number, or the number as text)."""
    return table.get(generation) or table.get(str(generation)) or []


def _link_count_check(component: str, links: list[dict[str, Any]], expected: dict[str, Any]) -> Check:
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
