"""The repair model: for a suspect part, the repair action, how long it takes step by step
(detection, diagnosis, drain, repair, validation), and how many GPUs it idles.

Defaults come from opsctl/data/mttr.yaml (figures and sources in the file); a user's file
overrides any key. Localization reads it to say what to do; the TCO reads it to price repairs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.input_checks import number
from opsctl.yaml_input import MAX_WRITTEN_BYTES, load_yaml_file, require_mapping
from probes.shipped_yaml import load_shipped_yaml

if TYPE_CHECKING:
    from opsctl.rack_models import RackModel
    from opsctl.topology.graph import Component, Topology

DEFAULT_MTTR_CONFIG = Path(__file__).resolve().parent / "data" / "mttr.yaml"
MTTR_CONFIG_ENV = "OPSCTL_MTTR_CONFIG"
STEPS = ("detection_h", "diagnosis_h", "drain_h", "repair_h", "validation_h")
SCOPES = ("gpu", "compute_tray", "server", "rack")


@dataclass(frozen=True)
class RepairAction:
    name: str
    action: str
    out_of_service: str  # gpu | compute_tray | server | rack
    hours: dict[str, float]  # step -> hours
    source: str

    @property
    def mttr_hours(self) -> float:
        return sum(self.hours.values())


@dataclass(frozen=True)
class Repair:
    """The repair of one part: what to do, how long, and what it idles."""

    component: str
    kind: str
    action: RepairAction
    gpus_idled: int
    gpus_lost_to_training: int  # beyond the spares: GPUs a training job cannot cover
    gpu_ids: frozenset[str] = frozenset()  # the GPUs out of service while it lasts

    @property
    def mttr_hours(self) -> float:
        return self.action.mttr_hours


@dataclass(frozen=True)
class MttrModel:
    actions: dict[str, RepairAction]  # name -> RepairAction
    parts: dict[str, str]  # part kind (or kind@parent kind) -> action name
    models: dict[str, dict[str, str]]  # rack model -> {part kind: action name}
    spares: dict[str, dict[str, int]]  # rack model -> {"train_gpus", "spare_gpus"}
    source: str

    def action_for(self, kind: str, model_name: str, context: str | None = None) -> RepairAction:
        """The action for a part kind; `context` picks a `kind@context` entry first (a
        connector's tray kind; for a GPU, `reset` or `rma` as its XIDs call for)."""
        overrides = self.models.get(model_name, {})
        for key in (f"{kind}@{context}" if context else None, kind):
            if key is None:
                continue
            if key in overrides:
                return self.actions[overrides[key]]
            if key in self.parts:
                return self.actions[self.parts[key]]
        raise InputError(f"{self.source}: no repair action for part kind {kind!r}")

    def repair(self, component_id: str, topology: Topology, context: str | None = None) -> Repair:
        """The repair of a component of `topology` (a Topology). `context`: see action_for;
        a connector's defaults to the kind of tray it sits in."""
        component = topology.components[component_id]
        if component.kind == "connector" and context is None:
            context = "switch_tray" if topology.model.is_switch_tray(component.tray) else "compute_tray"
        action = self.action_for(component.kind, topology.model.name, context)
        out = gpus_out(action.out_of_service, component, topology)
        spare = self.spares.get(topology.model.name, {}).get("spare_gpus", 0)
        return Repair(component_id, component.kind, action, len(out), max(0, len(out) - spare), frozenset(out))

    def together(self, repairs: Sequence[Repair], topology: Topology) -> dict[str, Any]:
        """What a rack's concurrent repairs take out of service together, against its spares:
        GPUs idled by one repair and by another are counted once."""
        out: set[str] = set().union(*(repair.gpu_ids for repair in repairs)) if repairs else set()
        layout = self.spares.get(topology.model.name, {})
        spare, train = layout.get("spare_gpus", 0), layout.get("train_gpus", topology.model.gpus)
        lost = max(0, len(out) - spare)
        if not out:
            advice = "nothing to take out of service"
        elif len(out) == topology.model.gpus:
            advice = "drain the rack: the repairs take every GPU out of service"
        elif lost == 0:
            advice = f"train on: the {spare} hot spares cover the {len(out)} GPUs the repairs take out"
        else:
            advice = (f"the repairs take {len(out)} GPUs out, {lost} more than the {spare} hot spares: a {train}-GPU job "
                      f"cannot run on this rack until enough of them are back — repair together, or move the job")
        return {"gpus_out": len(out), "gpu_ids": sorted(out), "spare_gpus": spare, "train_gpus": train,
                "gpus_lost_to_training": lost, "advice": advice,
                "source": "the repair model's spares (opsctl/data/mttr.yaml `spares`, or your --mttr-config; "
                          "the 64-of-72 practice: docs/sources.md)"}


@lru_cache(maxsize=64)
def _gpu_trays(model: RackModel, rack: str) -> dict[str, str]:
    """GPU id -> its compute tray, once per rack: a fleet's localization asks for every suspect."""
    return {model.gpu_id(rack, index): model.gpu_tray(index) for index in range(model.gpus)}


def gpus_out(scope: str, component: Component, topology: Topology) -> set[str]:
    """The GPU ids a repair of `component` with this out-of-service scope idles."""
    trays = _gpu_trays(topology.model, topology.rack)
    if scope in ("server", "rack"):
        return set(trays)
    if scope == "gpu":
        if component.kind == "gpu":
            return {component.id}
        return {topology.links[link].gpu for link in component.links}
    # compute_tray: the trays the part sits in; a link or cable is served from its GPU's tray
    if component.kind in ("link", "cable") or component.tray is None:
        held = {trays[topology.links[link].gpu] for link in component.links}
    else:
        held = {component.tray}
    return {gpu for gpu, tray in trays.items() if tray in held}


def gpus_idled(scope: str, component: Component, topology: Topology) -> int:
    return len(gpus_out(scope, component, topology))


def _merge(base: dict[Any, Any], override: dict[Any, Any]) -> dict[Any, Any]:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return merged


def load_mttr_model(path: str | Path | None = None) -> MttrModel:
    """The default model, with the user's file (path, else $OPSCTL_MTTR_CONFIG) laid over it."""
    data = require_mapping(load_shipped_yaml(DEFAULT_MTTR_CONFIG), DEFAULT_MTTR_CONFIG)  # ours: parsed once, cached
    path = path or os.environ.get(MTTR_CONFIG_ENV)
    source = str(DEFAULT_MTTR_CONFIG)
    if path:
        data = _merge(data, require_mapping(load_yaml_file(path, MAX_WRITTEN_BYTES), path))
        source = str(path)
    return _parse(data, source)


def _parse(data: dict[Any, Any], source: str) -> MttrModel:
    unknown = set(data) - {"version", "spares", "actions", "parts", "models"}
    if unknown:
        raise InputError(f"{source}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    actions: dict[str, RepairAction] = {}
    for name, raw in (data.get("actions") or {}).items():
        if not isinstance(raw, dict):
            raise InputError(f"{source}: actions.{name} must be a mapping")
        # NaN, infinity and negative hours are refused in one line (the shared number check)
        hours = {step: float(number(raw.get(step, 0.0), f"{source}: actions.{name}.{step} (hours)", 0, 10_000,
                                    max_open=True))
                 for step in STEPS}
        scope = raw.get("out_of_service")
        if scope not in SCOPES:
            raise InputError(f"{source}: actions.{name}.out_of_service must be one of {', '.join(SCOPES)}, got {scope!r}")
        unknown = set(raw) - {*STEPS, "action", "out_of_service", "source"}
        if unknown:
            raise InputError(f"{source}: actions.{name}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        actions[name] = RepairAction(name, str(raw.get("action", name)), scope, hours, str(raw.get("source", "")))
    parts = dict(data.get("parts") or {})
    models = {m: dict(v or {}) for m, v in (data.get("models") or {}).items()}
    for where, mapping in [("parts", parts), *((f"models.{m}", v) for m, v in models.items())]:
        for kind, action in mapping.items():
            if action not in actions:
                raise InputError(f"{source}: {where}.{kind}: unknown action {action!r} (known: {', '.join(sorted(actions))})")
    spares: dict[str, dict[str, int]] = {}
    for model, raw in (data.get("spares") or {}).items():
        if not isinstance(raw, dict) or not all(isinstance(count := raw.get(k), int) and count >= 0 for k in ("train_gpus", "spare_gpus")):
            raise InputError(f"{source}: spares.{model} needs whole numbers train_gpus and spare_gpus")
        spares[model] = dict(raw)
    return MttrModel(actions, parts, models, spares, source)
