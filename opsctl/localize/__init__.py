"""Fault localization on the rack graph: from link-health readings to the smallest likely set
of faulty parts, each with its repair, MTTR, blast radius and runbook.

    from opsctl.localize import localize, localize_snapshot, localize_verdicts

    localize(documents)                       # CONTRACT's {"racks": [...]}, many snapshots at once
    localize_snapshot(document, topology)     # one rack
    localize_verdicts(topology, {link_id: "fail" | "pass" | ...}, gpus=[...])   # from a judge's verdicts

How it decides is in evidence.py (what a reading says about a link or GPU), parts.py (the
parts, their priors and penetrance) and search.py (the hypothesis search and its scores).
"""

import numpy as np

from opsctl.errors import InputError
from opsctl.localize.evidence import (
    gpu_log_ratio, link_log_ratios, nvlink_origins, origin_log_ratio, verdict_log_ratio,
)
from opsctl.localize.parts import part_index_for
from opsctl.localize.result import LinkDetails, RackResult
from opsctl.localize.search import Evidence, find_faults
from opsctl.localize.snapshot import (
    SideReadings, lost_gpus, parse_snapshot, read_snapshot_file, snapshot_header, unread_trays,
)
from opsctl.mttr import load_mttr_model
from opsctl.topology import default_cabling_map

__all__ = ["localize", "localize_files", "localize_snapshot", "localize_verdicts", "read_snapshot_file"]


def _index_for_topology(topology):
    custom = topology.cabling_map_path.resolve() != default_cabling_map(topology.model).resolve()
    return part_index_for(topology.model, topology.cabling_map_path if custom else None)


def _evidence(index, log_r, gpu_xids, lost):
    origins, downstream = nvlink_origins(gpu_xids)
    gpu_own = np.array([gpu_log_ratio([code for code, _ in gpu_xids.get(g, [])], g in lost) for g in range(len(index.gpu_ids))])
    gpu_origin = np.zeros(len(index.gpu_ids))
    gpu_origin[list(origins)] = origin_log_ratio()
    return Evidence(log_r, gpu_own, gpu_origin), origins, downstream


def _localize_observation(observation, index, mttr):
    log_r = np.zeros(index.links)
    for readings in observation.sides.values():
        log_r += link_log_ratios(readings.counts, readings.state, readings.ber, observation.window_s)
    lost = lost_gpus(observation, index)
    evidence, origins, downstream = _evidence(index, log_r, observation.gpu_xids, lost)
    details = LinkDetails(observation.sides, observation.window_s, observation.gpu_xids, origins, downstream, lost,
                          int(np.sum(observation.gpu_reachable == 1)))
    slots = find_faults(index, evidence)
    result = RackResult(observation.rack, index, evidence, details, mttr)
    return result.document(slots, observation.window_s, unread_trays(observation, index), observation.source,
                           observation.document.get("taken"))


def localize_snapshot(document, topology=None, mttr=None, source="<snapshot>", cabling_map=None):
    """One rack's result (CONTRACT's entry of `racks`). A `topology` or `cabling_map` path
    gives the rack's own cabling; without them the model's default map is used."""
    rack, model = snapshot_header(document, source)
    if topology is not None:
        if topology.model.name != model.name:
            raise InputError(f"{source}: rack {rack} is a {topology.model.name}, the snapshot says {model.name}")
        index = _index_for_topology(topology)
    else:
        index = part_index_for(model, cabling_map)
    observation = parse_snapshot(document, source, index)
    return _localize_observation(observation, index, mttr if mttr is not None else load_mttr_model())


def localize(documents, rack_for=None, mttr=None, sources=None):
    """CONTRACT's `{"racks": [...]}` for many snapshot documents in one call.

    rack_for(name) may return what the inventory knows of a rack — (model name, cabling map
    path or None) — or None for a rack it does not hold (the model's default map is used)."""
    mttr = mttr if mttr is not None else load_mttr_model()
    racks = []
    seen = {}
    for i, document in enumerate(documents):
        source = sources[i] if sources else f"<snapshot {i}>"
        rack, model = snapshot_header(document, source)
        if rack in seen:
            raise InputError(f"{source}: rack {rack} is also in {seen[rack]}; localize one snapshot per rack")
        seen[rack] = source
        known = rack_for(rack) if rack_for else None
        cabling_map = None
        if known is not None:
            known_model, cabling_map = known
            if known_model != model.name:
                raise InputError(f"{source}: rack {rack} is a {known_model} in the inventory, the snapshot says {model.name}")
        racks.append(localize_snapshot(document, None, mttr, source, cabling_map))
    return {"racks": racks}


def localize_files(paths, rack_for=None, mttr=None):
    """`localize` over snapshot files (each one snapshot or a list of them)."""
    documents, sources = [], []
    for path in paths:
        found = read_snapshot_file(path)
        documents.extend(found)
        sources.extend([str(path)] if len(found) == 1 else [f"{path}[{i}]" for i in range(len(found))])
    return localize(documents, rack_for, mttr, sources)


def localize_verdicts(topology, verdicts, gpus=None, mttr=None, window_s=None, source="<verdicts>"):
    """Localize from a judge's per-link verdicts (burn-in): {link id: "fail" | "warn" | "pass" |
    "incomplete"}; links not given were not observed. `gpus`: snapshot-style GPU entries
    ({"id", "reachable", "xids"}) for XID and lost-GPU evidence."""
    index = _index_for_topology(topology)
    prefix = topology.rack + "/"
    log_r = np.zeros(index.links)
    observed = SideReadings.empty(index.links)
    link_index = {f"{prefix}{link_id}": i for i, link_id in enumerate(index.link_ids)}
    for link_id, verdict in verdicts.items():
        if link_id not in link_index:
            raise InputError(f"{source}: {link_id} is not a link of {topology.rack}")
        log_r[link_index[link_id]] = verdict_log_ratio(verdict)
        observed.observed[link_index[link_id]] = verdict in ("fail", "warn", "pass")
    document = {"rack": topology.rack, "model": topology.model.name, "window_seconds": window_s or 1.0,
                "links": [], "gpus": gpus or []}
    observation = parse_snapshot(document, source, index)
    observation.sides = {"gpu": observed}
    lost = lost_gpus(observation, index)
    evidence, origins, downstream = _evidence(index, log_r, observation.gpu_xids, lost)
    details = LinkDetails({"gpu": observed}, observation.window_s, observation.gpu_xids, origins, downstream, lost,
                          int(np.sum(observation.gpu_reachable == 1)))
    slots = find_faults(index, evidence)
    result = RackResult(topology.rack, index, evidence, details, mttr if mttr is not None else load_mttr_model())
    return result.document(slots, window_s, [], source)
