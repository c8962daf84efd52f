"""Fault localization on the rack graph: from link-health readings to the smallest likely set
of faulty parts, each with its repair, MTTR, blast radius and runbook.

    from opsctl.localize import localize, localize_snapshot, localize_verdicts

    localize(documents)                       # {"racks": [...]}, many snapshots at once
    localize_files(paths)                     # the same from files, a fleet spread over the CPUs
    localize_snapshot(document, topology)     # one rack
    localize_verdicts(topology, {link_id: "fail" | "pass" | ...}, gpus=[...])   # from a judge's verdicts

How it decides is in evidence.py (what a reading says about a link or GPU), parts.py (the
parts, their priors and penetrance) and search.py (the hypothesis search and its scores).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from opsctl.errors import InputError
from opsctl.localize.evidence import (
    gpu_log_ratio, link_log_ratios, nvlink_xid_gpus, nvlink_xid_log_ratio, verdict_log_ratio,
)
from opsctl.localize.measured import arrival_only, read_measured, with_measured_links
from opsctl.localize.parts import part_index_for
from opsctl.localize.result import LinkDetails, RackResult
from opsctl.localize.search import Evidence, find_faults
from opsctl.localize.snapshot import (
    RackObservation, SideReadings, checked_snapshot, lost_gpus, parse_snapshot, read_snapshot_file, snapshot_model,
    unread_trays,
)
from opsctl.mttr import load_mttr_model
from opsctl.topology import default_cabling_map

if TYPE_CHECKING:
    from opsctl.localize.parts import PartIndex
    from opsctl.localize.snapshot_schema import Snapshot
    from opsctl.mttr import MttrModel
    from opsctl.topology.graph import Topology

    # rack name -> (model name, its cabling map or None for the model's default)
    KnownRacks = Mapping[str, tuple[str, str | Path | None]]

__all__ = ["localize", "localize_files", "localize_snapshot", "localize_verdicts", "read_snapshot_file"]
PARALLEL_FROM_FILES = 16  # fewer files are localized in this process: starting workers costs more than it saves


def _index_for_topology(topology: Topology) -> PartIndex:
    custom = topology.cabling_map_path.resolve() != default_cabling_map(topology.model).resolve()
    return part_index_for(topology.model, topology.cabling_map_path if custom else None)


def _evidence(index: PartIndex, log_r: np.ndarray, gpu_xids: dict[int, list[tuple[int, float | None]]],
              lost: Collection[int], observed_gpus: set[int]) -> tuple[Evidence, set[int]]:
    nvlink_gpus = nvlink_xid_gpus(gpu_xids)
    gpu_own = np.array([gpu_log_ratio([code for code, _ in gpu_xids.get(g, [])], g in lost) for g in range(len(index.gpu_ids))])
    gpu_origin = np.zeros(len(index.gpu_ids))
    # An NVLink XID points at a part on the GPU's own links; with none of them read, nothing says
    # which part, and the prior alone would pick one (a cartridge) with confidence it has not earned.
    gpu_origin[[g for g in nvlink_gpus if g in observed_gpus]] = nvlink_xid_log_ratio()
    return Evidence(log_r, gpu_own, gpu_origin), nvlink_gpus


def _gpus_with_links_read(observation: RackObservation, index: PartIndex) -> set[int]:
    """The GPU indices with at least one link read at either end."""
    read = np.zeros(index.links, dtype=bool)
    for readings in observation.sides.values():
        read |= readings.observed
    return set(index.link_gpu[read].tolist())  # not np.unique: it imports numpy.ma, 15 ms a process


def _localize_observation(observation: RackObservation, index: PartIndex, mttr: MttrModel,
                          log_r: np.ndarray | None = None) -> dict[str, Any]:
    """The rack's result; `log_r` (per link) when the links were judged already, else each link
    judged by the rulebook from its readings."""
    if log_r is None:
        log_r = link_log_ratios(observation.sides, observation.window_s)
    link_checks, tray_checks = read_measured(observation.snapshot, observation.source, index)
    arrived = arrival_only(link_checks, log_r)
    log_r = with_measured_links(log_r, link_checks)  # a link's failed traffic check, beside its counters
    lost = lost_gpus(observation, index)
    evidence, nvlink_gpus = _evidence(index, log_r, observation.gpu_xids, lost, _gpus_with_links_read(observation, index))
    details = LinkDetails(observation.sides, observation.window_s, observation.gpu_xids, nvlink_gpus, lost,
                          int(np.sum(observation.gpu_reachable == 1)), observation.gpu_checks, link_checks, tray_checks,
                          arrived)
    slots = find_faults(index, evidence)
    result = RackResult(observation.rack, index, evidence, details, mttr)
    return result.document(slots, observation.window_s, unread_trays(observation, index), observation.source,
                           observation.snapshot.taken)


def localize_snapshot(document: Any, topology: Topology | None = None, mttr: MttrModel | None = None,
                      source: str = "<snapshot>", cabling_map: str | Path | None = None) -> dict[str, Any]:
    """One rack's result (an entry of `racks`). A `topology` or `cabling_map` path
    gives the rack's own cabling; without them the model's default map is used."""
    return _localize_checked(checked_snapshot(document, source), topology, mttr, source, cabling_map)


def _localize_checked(snapshot: Snapshot, topology: Topology | None, mttr: MttrModel | None, source: str,
                      cabling_map: str | Path | None) -> dict[str, Any]:
    model = snapshot_model(snapshot)
    if topology is not None:
        if topology.model.name != model.name:
            raise InputError(f"{source}: rack {snapshot.rack} is a {topology.model.name}, the snapshot says {model.name}")
        index = _index_for_topology(topology)
    else:
        index = part_index_for(model, cabling_map)
    observation = parse_snapshot(snapshot, source, index)
    return _localize_observation(observation, index, mttr if mttr is not None else load_mttr_model())


def localize(documents: Sequence[Any], known_racks: KnownRacks | None = None, mttr: MttrModel | None = None,
             sources: Sequence[str] | None = None) -> dict[str, Any]:
    """`{"racks": [...]}` for many snapshot documents in one call.

    known_racks: {rack name: (model name, cabling map path or None)} for the racks the inventory
    holds; a rack not in it uses its model's default cabling map."""
    mttr = mttr if mttr is not None else load_mttr_model()
    sources = sources or [f"<snapshot {i}>" for i in range(len(documents))]
    racks = [_localize_known(checked_snapshot(document, source), source, known_racks or {}, mttr)
             for document, source in zip(documents, sources)]
    _one_snapshot_per_rack(racks)
    return {"racks": racks}


def _localize_known(snapshot: Snapshot, source: str, known_racks: KnownRacks, mttr: MttrModel) -> dict[str, Any]:
    known_model, cabling_map = known_racks.get(snapshot.rack, (snapshot.model, None))
    if known_model != snapshot.model:
        raise InputError(f"{source}: rack {snapshot.rack} is a {known_model} in the inventory, the snapshot says {snapshot.model}")
    return _localize_checked(snapshot, None, mttr, source, cabling_map)


def _one_snapshot_per_rack(racks: list[dict[str, Any]]) -> None:
    seen: dict[str, str] = {}
    for result in racks:
        if result["rack"] in seen:
            raise InputError(f"{result['source']}: rack {result['rack']} is also in {seen[result['rack']]}; "
                             "localize one snapshot per rack")
        seen[result["rack"]] = result["source"]


def _localize_file(path: str | Path, known_racks: KnownRacks, mttr: MttrModel) -> list[dict[str, Any]]:
    return [_localize_known(snapshot, source, known_racks, mttr) for source, snapshot in read_snapshot_file(path)]


def localize_files(paths: Sequence[str | Path], known_racks: KnownRacks | None = None, mttr: MttrModel | None = None,
                   workers: int | None = None) -> dict[str, Any]:
    """`localize` over snapshot files (each one snapshot or a list of them). With many files
    they are shared among `workers` processes (default: one a CPU): each file is read,
    checked and localized on its own, so a fleet takes a fraction of the time."""
    mttr = mttr if mttr is not None else load_mttr_model()
    known_racks = known_racks or {}
    workers = workers or os.cpu_count() or 1
    work = [(path, known_racks, mttr) for path in paths]
    if workers > 1 and len(paths) >= PARALLEL_FROM_FILES and "fork" in multiprocessing.get_all_start_methods():
        # fork: the workers start with this process's imports and model caches, not from scratch.
        with multiprocessing.get_context("fork").Pool(min(workers, len(paths))) as pool:
            per_file = pool.starmap(_localize_file, work, chunksize=max(1, len(paths) // (4 * workers)))
    else:
        per_file = [_localize_file(*args) for args in work]
    racks = [result for results in per_file for result in results]
    _one_snapshot_per_rack(racks)
    return {"racks": racks}


def localize_verdicts(topology: Topology, verdicts: Mapping[str, str], gpus: list[dict[str, Any]] | None = None,
                      mttr: MttrModel | None = None, window_s: float | None = None,
                      source: str = "<verdicts>") -> dict[str, Any]:
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
    observation: RackObservation = parse_snapshot(checked_snapshot(document, source), source, index)
    observation.sides = {"gpu": observed}
    return _localize_observation(observation, index, mttr if mttr is not None else load_mttr_model(), log_r)
