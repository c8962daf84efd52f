"""One NVLink domain: every GPU of an NVL72 that registered with its fabric must be in the same
clique and cluster as the others (NVML nvmlGpuFabricInfo cliqueId / clusterUuid). A GPU in
another clique cannot reach the rest over NVLink, whatever its own health says.

Judged across the rack, since no tray sees the others: the rack's clique and cluster are
those most of its GPUs report, and every GPU that reports another fails `fabric.clique`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from opsctl.burnin.checks import Check
from opsctl.burnin.rack_evidence import RackEvidence, RackFindings
from probes.sku_references import load_references


def rack_checks(evidence: RackEvidence) -> RackFindings:
    """fabric.clique, on an NVL72 (an HGX's GPUs register with no fabric of the rack's)."""
    return RackFindings(fabric_domain_checks(evidence.gpus) if evidence.rack.model.is_nvl72 else [])


def fabric_domain_checks(gpu_readings: dict[str, dict[str, Any]]) -> list[Check]:
    """gpu_readings: {GPU id: its run-document entry}. One check per GPU that registered."""
    source = load_references().rules["fabric_clique"]["source"]
    registered: dict[str, tuple[Any, Any]] = {}
    for gpu_id, reading in gpu_readings.items():
        fabric = (reading.get("counters") or {}).get("fabric") or {}
        if fabric.get("state") == "completed" and fabric.get("clique_id") is not None:
            registered[gpu_id] = (fabric.get("clique_id"), fabric.get("cluster_uuid"))
    if len(registered) < 2:
        return []
    (domain, count), = Counter(registered.values()).most_common(1)
    checks = []
    for gpu_id, found in sorted(registered.items()):
        verdict = "pass" if found == domain else "fail"
        reason = (f"clique {found[0]}, cluster {found[1]}: the rack's domain, as {count} of {len(registered)} GPUs report"
                  if verdict == "pass" else
                  f"clique {found[0]}, cluster {found[1]}, where {count} of {len(registered)} GPUs of the rack report "
                  f"clique {domain[0]}, cluster {domain[1]}: not in the rack's NVLink domain")
        checks.append(Check("fabric.clique", gpu_id, verdict, list(found), list(domain), "clique, cluster", "!=", source, reason))
    return checks
