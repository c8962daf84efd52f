"""A judged thing, at rack level: what was judged (check, component id), the reading, the
threshold, how they compare, where the threshold comes from, and the verdict.

The probes' checks (docs/probe-output.md) have the same fields with tray-relative components
(`gpu2/nvl05`); `from_probe` gives them the rack's component ids (`rack07/ct03/gpu2/nvl05`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opsctl.runs.verdicts import VERDICTS, worst  # noqa: F401 (worst: the rack judge's modules import it from here)


@dataclass(frozen=True)
class Check:
    check: str  # what kind of thing: "gemm.bf16.tflops", "rack.temperature_c", "link.observed"
    component: str  # component id (docs/topology.md): rack07/ct03/gpu2, rack07/ct03/gpu2/nvl05, rack07/st3
    verdict: str  # pass | warn | fail | incomplete
    value: object = None
    threshold: object = None
    unit: str = ""
    op: str = ""  # the comparison that fails: value OP threshold
    source: str = ""
    reason: str = ""
    judged_by: str = "opsctl"  # "probe" on the tray, or "opsctl" across the rack

    def to_dict(self) -> dict[str, Any]:
        # Not dataclasses.asdict: its deep copy of every field cost a rack's 5,500 checks 0.15 CPU-s.
        return dict(vars(self))

    @classmethod
    def from_probe(cls, raw: Mapping[str, Any], component_prefix: str) -> Check:
        """A probe's check, its component prefixed with the tray's id (`rack07/ct03`)."""
        component = str(raw.get("component") or "")
        verdict = raw["verdict"] if raw.get("verdict") in VERDICTS else "incomplete"
        return cls(
            check=str(raw.get("check") or "probe"),
            component=f"{component_prefix}/{component}" if component else component_prefix,
            verdict=verdict, value=raw.get("value"), threshold=raw.get("threshold"), unit=str(raw.get("unit") or ""),
            op=str(raw.get("op") or ""), source=str(raw.get("source") or ""), reason=str(raw.get("reason") or ""),
            judged_by="probe",
        )
