"""The parts a fault can sit in, precomputed once per rack model and cabling map.

For every part of the topology: its kind, the links whose signal passes through it (as index
arrays, so a hypothesis is scored with numpy over all parts at once), the GPUs those links
start at, its prior probability of being faulty, and its penetrance: how much of its links a
fault in it makes bad. Parts that carry exactly the same links (a link and its four cables)
cannot be told apart by any reading; they are one candidate, named after the smallest.

Priors. P(part faulty at the moment of a snapshot) = RACK_FAULT_PRIOR × the kind's share of
faults ÷ the number of parts of that kind. The shares are opsctl's estimates: on H100 Llama 3
saw GPU-related causes in 268 of 419 unexpected interruptions and switch/cable in 35
(Meta, The Llama 3 Herd of Models, 2024, arXiv 2407.21783, Table 5); NVL72 moves much of the network into the rack's copper spine, so
links, connectors and cartridges get a larger share here.

Penetrance. A part makes some or all of its links bad. Each kind has a prior over the fraction
q of its links a fault shows on (PENETRANCE); the score of a part marginalizes over it, which
is the Occam factor: a cartridge whose fault shows on 3 of its 360 links must pay for the 357
that look fine, so three unrelated bad links stay three links, while six in one cartridge
with no smaller part in common point at the cartridge. A GPU can be faulty with no link
symptom at all (q = 0: an XID says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from opsctl.rack_models import model_named
from opsctl.topology import build_topology

if TYPE_CHECKING:
    from opsctl.rack_models import RackModel
    from opsctl.topology.graph import Component, Topology

TEMPLATE_RACK = "_"  # parts are built once per model under this rack name, then renamed
RACK_FAULT_PRIOR = 0.5  # P(the rack has a hardware fault) when someone takes a snapshot to look
KIND_SHARE = {  # share of faults by part kind (estimate; see the module docstring)
    "gpu": 0.40, "link": 0.30, "connector": 0.10, "compute_tray": 0.08,
    "cartridge": 0.04, "switch_chip": 0.04, "switch_tray": 0.04, "baseboard": 0.30,
}
# kind -> {q: weight}: the fraction of its links a fault of the part shows on, and how likely.
PENETRANCE = {
    "link": {1.0: 1.0},
    # XID-only faults, lost; a GPU's own ports failing in part is rarer than bent pins in the
    # connector its links leave by, so a few bad links in one connector half blame the connector.
    "gpu": {0.0: 0.65, 0.2: 0.02, 0.5: 0.03, 1.0: 0.3},
    "compute_tray": {0.25: 0.1, 0.5: 0.2, 1.0: 0.7},  # a tray fails whole (unseated, board) more than in part
    "connector": {0.1: 0.25, 0.2: 0.25, 0.35: 0.2, 0.6: 0.1, 1.0: 0.2},  # bent pins on a few links, or unseated
    "switch_connector": {0.05: 0.2, 0.1: 0.2, 0.2: 0.2, 0.35: 0.15, 0.6: 0.1, 1.0: 0.15},
    "cartridge": {0.05: 0.3, 0.1: 0.25, 0.25: 0.2, 0.5: 0.1, 1.0: 0.15},  # a damaged group of cables, or all
    "switch_chip": {0.5: 0.2, 1.0: 0.8},
    "switch_tray": {0.5: 0.4, 1.0: 0.6},  # one chip's links, or both
    "baseboard": {0.02: 0.2, 0.05: 0.2, 0.1: 0.2, 0.25: 0.15, 0.5: 0.1, 1.0: 0.15},
}
PRIOR_SOURCE = ("opsctl localizer priors: fault shares by part kind estimated from Llama 3's causes of interruption "
                "(Meta, The Llama 3 Herd of Models, 2024, Table 5); penetrance per kind in opsctl/localize/parts.py")
# When two kinds carry the same links, the candidate is named after the first in this order.
NAMING_ORDER = ("link", "gpu", "connector", "compute_tray", "cartridge", "switch_chip", "switch_tray", "baseboard", "cable")


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one per model
class PartIndex:
    """The parts of one rack model, rack-name free: ids are relative (`ct03/gpu2`)."""

    model: RackModel
    topology: Topology  # the template Topology (rack name TEMPLATE_RACK)
    link_ids: tuple  # relative link ids, index = link index
    link_index: dict  # relative link id -> link index
    link_by_gpu_port: dict  # (relative gpu id, port) -> link index
    link_by_switch_port: dict  # (relative switch chip id, switch port) -> link index
    gpu_ids: tuple  # relative GPU ids, index = GPU index
    gpu_index: dict  # relative gpu id -> GPU index
    gpu_tray: tuple  # GPU index -> tray name
    link_gpu: np.ndarray  # link index -> GPU index
    part_ids: tuple  # relative ids of the candidate parts
    part_kinds: tuple
    part_same_as: tuple  # other parts with the same links (a link's cables)
    penetrance_kind: tuple  # the PENETRANCE row each part uses
    entry_link: np.ndarray  # concatenated link indices of all parts
    entry_start: np.ndarray  # part i's links are entry_link[entry_start[i]:entry_start[i + 1]]
    entry_part: np.ndarray  # part index of each entry
    gpu_entry_gpu: np.ndarray  # concatenated GPU indices each part's links start at
    gpu_entry_start: np.ndarray
    gpu_part: np.ndarray  # GPU index -> its part index
    log_prior_odds: np.ndarray  # per part: log(π / (1 − π))
    q_grid: np.ndarray  # the union of penetrance values
    log_q_weight: np.ndarray  # parts × q_grid: log weight, −inf where the kind has no such q

    @property
    def links(self) -> int:
        return len(self.link_ids)

    def part_links(self, part: int) -> np.ndarray:
        return self.entry_link[self.entry_start[part]:self.entry_start[part + 1]]

    def part_gpus(self, part: int) -> np.ndarray:
        return self.gpu_entry_gpu[self.gpu_entry_start[part]:self.gpu_entry_start[part + 1]]


def _relative(component_id: str) -> str:
    return component_id.split("/", 1)[1]


def _penetrance_kind(component: Component, topology: Topology) -> str:
    if component.kind == "connector" and topology.model.is_switch_tray(component.tray):
        return "switch_connector"
    return component.kind


def build_part_index(model: RackModel, cabling_map: str | Path | None = None) -> PartIndex:
    topology = build_topology(TEMPLATE_RACK, model, cabling_map)
    links = list(topology.links.values())
    link_index = {link.id: i for i, link in enumerate(links)}
    gpus = topology.of_kind("gpu")
    gpu_index = {_relative(g.id): i for i, g in enumerate(gpus)}

    groups: dict[frozenset[str], list[Component]] = {}  # frozenset of links -> components carrying exactly those
    for component in topology.components.values():
        if component.links:
            groups.setdefault(frozenset(component.links), []).append(component)
    parts: list[tuple[Component, tuple[str, ...]]] = []
    for members in groups.values():
        members.sort(key=lambda c: (NAMING_ORDER.index(c.kind) if c.kind in NAMING_ORDER else len(NAMING_ORDER), c.id))
        if members[0].kind == "cable":
            continue  # a cable alone on its links would be its link's twin; the link stands for it
        parts.append((members[0], tuple(_relative(m.id) for m in members[1:])))
    parts.sort(key=lambda p: (NAMING_ORDER.index(p[0].kind), p[0].id))

    counts: dict[str, int] = {}
    for component, _ in parts:
        counts[component.kind] = counts.get(component.kind, 0) + 1
    q_grid = np.array(sorted({q for row in PENETRANCE.values() for q in row}))
    link_entries: list[int] = []
    link_starts = [0]
    gpu_entry: list[int] = []
    gpu_start = [0]
    log_prior: list[float] = []
    log_weight: list[list[float]] = []
    kinds: list[str] = []
    for component, _ in parts:
        indices = sorted(link_index[link] for link in component.links)
        link_entries.extend(indices)
        link_starts.append(len(link_entries))
        part_gpus = sorted({gpu_index[_relative(topology.links[links[i].id].gpu)] for i in indices})
        gpu_entry.extend(part_gpus)
        gpu_start.append(len(gpu_entry))
        prior = RACK_FAULT_PRIOR * KIND_SHARE.get(component.kind, 0.01) / counts[component.kind]
        log_prior.append(np.log(prior / (1 - prior)))
        kind = _penetrance_kind(component, topology)
        kinds.append(kind)
        weights = PENETRANCE.get(kind, PENETRANCE["connector"])
        with np.errstate(divide="ignore"):
            log_weight.append([np.log(weights.get(q, 0.0)) for q in q_grid])

    entry_link = np.array(link_entries, dtype=np.int64)
    entry_start = np.array(link_starts, dtype=np.int64)
    part_ids = tuple(_relative(c.id) for c, _ in parts)
    gpu_part = np.full(len(gpus), -1, dtype=np.int64)
    for i, (component, _) in enumerate(parts):
        if component.kind == "gpu":
            gpu_part[gpu_index[_relative(component.id)]] = i
    return PartIndex(
        model=model,
        topology=topology,
        link_ids=tuple(_relative(link.id) for link in links),
        link_index={_relative(link.id): i for i, link in enumerate(links)},
        link_by_gpu_port={(_relative(link.gpu), link.port): i for i, link in enumerate(links)},
        link_by_switch_port={(_relative(link.switch), link.switch_port): i for i, link in enumerate(links)},
        gpu_ids=tuple(gpu_index),
        gpu_index=gpu_index,
        gpu_tray=tuple(g.tray for g in gpus),
        link_gpu=np.array([gpu_index[_relative(link.gpu)] for link in links], dtype=np.int64),
        part_ids=part_ids,
        part_kinds=tuple(c.kind for c, _ in parts),
        part_same_as=tuple(same for _, same in parts),
        penetrance_kind=tuple(kinds),
        entry_link=entry_link,
        entry_start=entry_start,
        entry_part=np.repeat(np.arange(len(parts)), np.diff(entry_start)),
        gpu_entry_gpu=np.array(gpu_entry, dtype=np.int64),
        gpu_entry_start=np.array(gpu_start, dtype=np.int64),
        gpu_part=gpu_part,
        log_prior_odds=np.array(log_prior),
        q_grid=q_grid,
        log_q_weight=np.array(log_weight),
    )


@lru_cache(maxsize=16)
def _cached(model_name: str, cabling_map: str | None) -> PartIndex:
    return build_part_index(model_named(model_name), cabling_map)


def part_index_for(model: RackModel, cabling_map: str | Path | None = None) -> PartIndex:
    """The PartIndex of a model (and cabling map), built once per process."""
    return _cached(model.name, str(cabling_map) if cabling_map else None)
