"""The NVLink rules over a set of links — each link's state, the counter rules and the BER rule of
the rulebook — on a GPU's side or a switch tray's, one check per failing link; and which checks of
a GPU are the symptom of one of its own links failing rather than of the GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from probes import xids
from probes.check_record import OPS, Check, LinkFields, check, compare
from probes.nvlink_ber import ber_parts, decode_ber, symbol_ber_exceeded
from probes.sku_references import References

Where = Callable[[dict[str, Any]], tuple[str, str, LinkFields]]  # a link's (component, label, its own fields in the check)
GPU_COUNTER_CHECK = "nvlink.gpu."  # the prefix of gpu_counter_checks' names


def per_link(name: str, links: Sequence[dict[str, Any]], value_of: Callable[[dict[str, Any]], Any], op: str, threshold: Any,
             unit: str, source: str, describe: Callable[[str, Any], str], where: Where, summary_component: str,
             verdict: str = "fail") -> list[Check]:
    """One check per failing link, or one pass for all of them naming the worst. `where(link)`
    gives a link's (component, label, extra check fields)."""
    measured = [(link, value_of(link)) for link in links]
    measured = [(link, value) for link, value in measured if value is not None]
    if not measured:
        return []
    checks: list[Check] = []
    for link, value in measured:
        if OPS[op](value, threshold):
            component, label, extra = where(link)
            found = check(name, component, verdict, value, threshold, unit, op, source, describe(label, value))
            found.update(extra)
            checks.append(found)
    if checks:
        return checks
    worst = min if op in ("<", "<=") else max
    link, value = worst(measured, key=lambda item: item[1])
    label = where(link)[1]
    return [check(name, summary_component, "pass", value, threshold, unit, op, source,
                  f"all {len(measured)} links {value}" if isinstance(value, str)
                  else f"all {len(measured)} links within limits (worst: {label}, {value:g})")]


def gpu_link(component: str) -> Where:
    """How a GPU's own links are named in checks: gpu2/nvl05, "port 5"."""
    return lambda link: (f"{component}/nvl{link['port']:02d}", f"port {link['port']}", {})


def link_rule_checks(links: list[dict[str, Any]], window_s: float, rules: dict[str, Any],
                     where: Where, summary_component: str) -> list[Check]:
    """Link state, the counter rules and the BER rule over a set of links (GPU or switch side)."""
    state = rules["link_state"]
    checks = per_link("nvlink.state", links, lambda link: link.get("state"), "!=", "up", "state", state["source"],
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
        checks += per_link(f"nvlink.{rule.get('check', counter)}", links, value_of, rule["op"], rule["threshold"], unit,
                           rule["source"], describe, where, summary_component, verdict=rule["verdict"])
    ber = rules["effective_ber"]
    checks += per_link("nvlink.effective_ber", links, lambda link: link.get("effective_ber"), ber["op"], ber["threshold"],
                       "errors per bit", ber["source"], lambda label, value: f"effective BER {value:.1e} on {label}",
                       where, summary_component)
    checks += symbol_ber_checks(links, rules["symbol_ber"], where, summary_component)
    return checks


def symbol_ber_checks(links: list[dict[str, Any]], rule: dict[str, Any], where: Where, summary_component: str) -> list[Check]:
    """The symbol BER at the window's end against DCGM's floor, on its packed mantissa and exponent
    (`symbol_ber_raw`, as NVML gives it): one failing check per link worse than the floor, else one
    pass naming the worst. The value shown is the BER it encodes."""
    floor_exponent, floor_mantissa = rule["floor_exponent"], rule["floor_mantissa"]
    measured = [(link, link["symbol_ber_raw"]) for link in links if link.get("symbol_ber_raw") is not None]
    if not measured:
        return []
    floor = f"{floor_mantissa}e-{floor_exponent}"

    def shown(raw: int) -> str:
        mantissa, exponent = ber_parts(raw)
        return f"{mantissa}e-{exponent}"

    checks: list[Check] = []
    for link, raw in measured:
        if symbol_ber_exceeded(int(raw), floor_exponent, floor_mantissa):
            component, label, extra = where(link)
            found = check("nvlink.symbol_ber", component, "fail", decode_ber(raw), floor, "errors per bit", "worse than",
                          rule["source"], f"symbol BER {shown(raw)} on {label}: worse than DCGM's floor {floor}")
            found.update(extra)
            checks.append(found)
    if checks:
        return checks
    link, raw = max(measured, key=lambda item: decode_ber(item[1]))
    return [check("nvlink.symbol_ber", summary_component, "pass", decode_ber(raw), floor, "errors per bit", "worse than",
                  rule["source"], f"all {len(measured)} links within DCGM's floor {floor} (worst: {where(link)[1]}, {shown(raw)})")]


def gpu_counter_checks(component: str, counters: dict[str, Any], rules: dict[str, Any]) -> list[Check]:
    """The NVLink counters NVML gives for all of a GPU's links together (`nvlink_gpu`), judged on
    the GPU; a counter the GPU does not report is not judged (none is required)."""
    found = counters.get("nvlink_gpu") or {}
    window_s = counters.get("window_s") or 0.0
    checks: list[Check] = []
    for rule in rules["gpu_nvlink_counters"]:
        counter = rule["counter"]
        if counter in found:
            checks.append(compare(f"{GPU_COUNTER_CHECK}{counter}", component, found[counter], rule["op"], rule["threshold"], "in window",
                                  rule["source"], f"{found[counter]} {rule['words']} over all of the GPU's links in "
                                  f"{window_s:.0f} s", bad=rule["verdict"]))
    return checks


def switch_checks(links: list[dict[str, Any]], window_s: float, refs: References) -> list[Check]:
    """The link rules over a switch tray's ports, per chip; each failing check names its link."""
    checks: list[Check] = []
    for chip in sorted({link["chip"] for link in links}):
        checks += link_rule_checks(
            [link for link in links if link["chip"] == chip], window_s, refs.rules,
            lambda link: (link["chip"], f"switch port {link['switch_port']} ({link['link']})",
                          {"link": link["link"], "switch_port": link["switch_port"]}),
            chip)
    return checks


# What a GPU reports because one of its own links fails, not because of itself: the XIDs of
# NVIDIA's NVLink workflows, a fabric mask that says only "bandwidth degraded" (and the limited
# capacity that sums it up) — which a link down makes true — NVLink bandwidth to its peers,
# which a link down for part of the copy lowers (17 of 18 links: 5.6% below its siblings), and
# the NVLink counters NVML sums over all of the GPU's links (rules.yaml gpu_nvlink_counters),
# which count its failing link's errors too.
LINK_FABRIC_FLAGS = ("degraded_bw", "summary limited_capacity")
LINK_BANDWIDTH_CHECKS = ("nvlink.peer_gbps", "rack.nvlink_gbps")


def is_link_symptom(check_name: str, value: Any) -> bool:
    if check_name in LINK_BANDWIDTH_CHECKS or check_name.startswith(GPU_COUNTER_CHECK):
        return True
    if check_name in ("xid", "xid.recorded"):  # an NVLink XID belongs to the GPU's failing link
        return value in xids.nvlink_xids()
    if check_name == "fabric.health":
        return bool(value) and isinstance(value, list) and set(value) <= set(LINK_FABRIC_FLAGS)
    return False
