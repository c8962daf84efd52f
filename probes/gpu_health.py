"""What a GPU's own health says with no load on it: ECC, remapped rows, retired pages, violation
time, NVLink fabric registration and the driver's recovery action (the rulebook's rules). The
window's counter checks (probes/counter_checks.py) and the snapshot's own failures read these.
"""

from __future__ import annotations

from typing import Any

from probes.check_record import Check, check, compare
from probes.sku_references import References


def health_checks(component: str, counters: dict[str, Any], refs: References) -> list[Check]:
    """What a GPU's own health says with no load on it: ECC, remapped rows, retired pages,
    violation time, fabric and the driver's recovery action. Triage reads these too."""
    sku = refs.sku or {}
    return (_memory_checks(component, counters, refs.rules, required=refs.sku is not None)
            + _fabric_checks(component, counters.get("fabric"), refs.rules, required=bool(sku.get("fabric_required")))
            + _recovery_action_checks(component, counters.get("recovery_action"), refs.rules))


def _memory_checks(component: str, counters: dict[str, Any], rules: dict[str, Any],
                   required: bool = True) -> list[Check]:
    checks: list[Check] = []
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
                   required: bool = False) -> list[Check]:
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


def _recovery_action_checks(component: str, action: str | None, rules: dict[str, Any]) -> list[Check]:
    """NVML's GPU recovery action (the driver's ask after an XID; XID 154 says it changed)."""
    if action is None:
        return []
    rule = rules["recovery_action"]
    verdict = "fail" if action in rule["fail"] else "warn" if action in rule["warn"] else "pass"
    return [check("gpu.recovery_action", component, verdict, action, rule["fail"] + rule["warn"], "recovery action", "any of",
                  rule["source"], f"the driver asks for: {action.replace('_', ' ')}" if verdict != "pass"
                  else f"no recovery action pending ({action})")]
