"""The check record every check family makes, and the two helpers that make it. At the bottom of
the probes: it imports no other probes module, so any family can import it and none needs the
orchestrator (probes/tray_judge.py).

A check (docs/probe-output.md): what was judged (`check`, `component`), the reading (`value`,
`unit`), the threshold and the comparison that fails (`op`: value <op> threshold → the verdict is
not "pass"), where the threshold comes from (`source`), and why (`reason`).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any, TypedDict

OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "!=": operator.ne}


class _CheckFields(TypedDict):
    check: str
    component: str
    verdict: str  # pass | warn | fail | incomplete
    value: Any
    threshold: Any
    unit: str
    op: str
    source: str
    reason: str


class LinkFields(TypedDict, total=False):
    """What a switch tray's check on one of its ports adds: the link that port ends and the port
    (probes/link_rules.py switch_checks), so the rack judges both ends of a link together."""

    link: str
    switch_port: int


class Check(_CheckFields, LinkFields):
    """A check record (docs/probe-output.md)."""


@dataclass(frozen=True)
class GpuContext:
    """What a GPU check family is given besides the GPU's entry and the references
    (probes/gpu_check_families.py)."""

    component: str  # the GPU's component in its checks: gpu2
    peer_medians: dict[str, float]  # the tray's median per throughput (probes/peer_throughput.py peer_medians)


def check(name: str, component: str, verdict: str, value: Any, threshold: Any, unit: str, op: str, source: str,
          reason: str) -> Check:
    return {"check": name, "component": component, "verdict": verdict, "value": value, "threshold": threshold,
            "unit": unit, "op": op, "source": source, "reason": reason}


def compare(name: str, component: str, value: Any, op: str, threshold: Any, unit: str, source: str, reason: str,
            bad: str = "fail") -> Check:
    """A check whose verdict is `bad` when `value op threshold`, else pass. A reading that is not
    a finite number (NaN compares false with everything, so it would pass) is no evidence:
    incomplete, never a pass."""
    if isinstance(value, float) and not math.isfinite(value):
        return check(name, component, "incomplete", value, threshold, unit, op, source,
                     f"{reason}; the reading is {value}, not a finite number: nothing can be judged from it")
    verdict = bad if OPS[op](value, threshold) else "pass"
    return check(name, component, verdict, value, threshold, unit, op, source, reason)
