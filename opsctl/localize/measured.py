"""What links and trays failed on their own measurement, beside their counters: evidence the
localizer weighs with the counters' (a link), or a fault it names by judgment (a tray).

The burn-in measures more than error counters. A link that carried under 75% of its GPU's
median link (`nvlink.link_traffic`) runs degraded — fewer lanes or a lower rate — which no
error counter need show; the NVLink domain's bisection can narrow a slow all-reduce to one tray
(`collective.bisection`). A snapshot carries them as the entry's `failed_checks`, as it carries
a GPU's own:

    "links": [{"gpu": "rack07/ct03/gpu2", "port": 4, …, "failed_checks": [{"check": "nvlink.link_traffic", "value": 11.1, "reason": …}]}]
    "trays": [{"tray": "ct05", "status": "complete", "failed_checks": [{"check": "collective.bisection", …}]}]

A link's totals since the driver loaded (`nvlink.total.*`, read before the load) come the same
way: a link that arrived with a failed recovery is named although its window was clean, and its
repair starts with NVIDIA's first step, a reset of its GPU, which clears them.

Links. A link with a failed check of its own is judged failing, whatever its counters say:
clean counters say that a link makes no errors, not that it carries its bandwidth (a link
trained with fewer lanes counts none), so they do not weigh against the check. Its log ratio
is at least a failing judgment's (evidence.verdict_log_ratio("fail")), and the search names the
smallest part that explains every failing link, by counters and by measurement alike: one link
is that link, a connector's few are the connector, a switch chip's 72 are the chip.

Trays. A tray that failed a check of its own is a fault by judgment, as a GPU's own failed
check is (result.RackResult.judged_gpus): named, with its repair, unless a declared part inside
it — one of its links or connectors, a GPU of it, the tray itself — already explains it (a
degraded link of the tray is what made it slow, and that link is the repair). Only a slow
bisection half can be explained so; a switch tray's firmware is its own fault beside any link's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from opsctl.localize.evidence import verdict_log_ratio
from opsctl.localize.snapshot import link_index, with_failed_checks

if TYPE_CHECKING:
    from opsctl.localize.parts import PartIndex
    from opsctl.localize.snapshot_schema import FailedCheck, Snapshot

FAILED = verdict_log_ratio("fail")
# A link's totals since the driver loaded, as the tray read them before any load (DCGM 4.6
# MonitorNVLinkErrorFields; probes/running_totals.py): what it arrived with, not what it did.
ARRIVAL_TOTAL = "nvlink.total."


def arrival_only(link_checks: dict[int, list[dict[str, Any]]], window_log_r: np.ndarray) -> set[int]:
    """The links failed only on the totals they arrived with, whose counters were clean in the
    window: the first step is a GPU reset, which clears the totals (opsctl/data/mttr.yaml link@reset)."""
    return {link for link, checks in link_checks.items()
            if window_log_r[link] <= 0 and all(c["check"].startswith(ARRIVAL_TOTAL) for c in checks)}
TRAY_KINDS = ("compute_tray", "switch_tray")
# A tray's own checks that a faulty part inside it can explain: a slow bisection half is its
# degraded link's doing. Its firmware (switch_tray.firmware) is the tray's whatever its links do.
EXPLAINED_BY_PARTS = ("collective.bisection",)
JUDGED_TRAY = {
    "judged": "the tray failed a measurement of its own (failed_checks in its evidence) that no part inside it explains",
    "threshold": None,
    "source": "probes/references/rules.yaml, as each failed check names (collective_trays: the NVLink domain's bisection)",
}

# An HGX server's own failed checks are its baseboard's (tray_part): its NVSwitch chips' SXids.
JUDGED_BASEBOARD = {
    "judged": "the server failed a check of its own (failed_checks in its evidence): its NVSwitch chips, whose "
              "SXids it logged, are on the GPU baseboard",
    "threshold": None,
    "source": "each failed check's own source (an NVSwitch SXid: DCGM's health watch, MonitorNvSwitchErrorCounts)",
}


def read_measured(snapshot: Snapshot, source: str, index: PartIndex) -> tuple[dict[int, list[dict[str, Any]]],
                                                                         dict[str, list[dict[str, Any]]]]:
    """({link index: [failed check]}, {tray: [failed check]}) of a snapshot already read by
    parse_snapshot (so its links and trays are known ones)."""
    prefix = snapshot.rack + "/"
    links: dict[int, list[dict[str, Any]]] = {}
    for i in with_failed_checks(snapshot.links):
        entry = snapshot.links[i]
        link = link_index(entry, f"{source}: links[{i}]", prefix, index)
        links.setdefault(link, []).extend(_as_dicts(entry.failed_checks or []))
    trays = {entry.tray: _as_dicts(entry.failed_checks) for entry in snapshot.trays or [] if entry.failed_checks}
    return links, trays


def _as_dicts(checks: list[FailedCheck]) -> list[dict[str, Any]]:
    return [{"check": c.check, "value": c.value, "reason": c.reason} for c in checks]


def with_measured_links(log_r: np.ndarray, link_checks: dict[int, list[dict[str, Any]]]) -> np.ndarray:
    """Per-link log r with every link that failed a check of its own judged failing at least."""
    if not link_checks:
        return log_r
    log_r = np.array(log_r, dtype=float)
    failed = np.fromiter(link_checks, dtype=np.int64)
    log_r[failed] = np.maximum(log_r[failed], FAILED)
    return log_r


def tray_part(index: PartIndex, tray: str) -> int | None:
    """The part index of a tray (compute or switch tray), None when the model has none of that name.
    An HGX server has no tray part: its own failed checks (an NVSwitch's SXids, whose chip is on
    the GPU baseboard) are the baseboard's, the part that holds them (opsctl/data/mttr.yaml)."""
    for part, (part_id, same) in enumerate(zip(index.part_ids, index.part_same_as)):
        if index.part_kinds[part] in TRAY_KINDS and (part_id == tray or tray in same):
            return part
    if not index.model.is_nvl72:
        return next((part for part, kind in enumerate(index.part_kinds) if kind == "baseboard"), None)
    return None


def judged_trays(index: PartIndex, declared: Sequence[int], tray_checks: dict[str, list[dict[str, Any]]]) -> list[int]:
    """Part indices of the trays that failed a check of their own and that no declared part
    inside them explains: a part whose links all run through the tray."""
    found: list[int] = []
    for tray in sorted(tray_checks):
        part = tray_part(index, tray)
        if part is None:
            continue
        inside = set(index.part_links(part).tolist())
        explainable = all(c["check"] in EXPLAINED_BY_PARTS for c in tray_checks[tray])
        if not (explainable and any(set(index.part_links(other).tolist()) <= inside for other in declared)):
            found.append(part)
    return found
