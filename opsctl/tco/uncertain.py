"""A scenario whose numbers may be ranges or distributions (opsctl/tco/distributions.py): the
point scenario priced as ever, the uncertain inputs, and the scenario at any values of them.

Any number the scenario file takes may be written as a range, inside the blocks and in each
failure_mix class. Its point figure (the range's `value`, else its median) makes the point
scenario, so a file of plain numbers is priced exactly as before. The ends of every range are
checked by the scenario reader itself, so `restart_minutes: {low: -5, high: 10}` is refused with
the reader's own line ("must be >= 0"), the end named.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.tco import distributions
from opsctl.tco.scenario import Scenario, scenario_from_data
from opsctl.yaml_input import MAX_WRITTEN_BYTES, load_yaml_file, require_mapping

if TYPE_CHECKING:
    from opsctl.tco.monte_carlo import Draws

KeyPath = tuple[str | int, ...]  # keys and list indexes from the top of the scenario

# Mappings that are blocks of the scenario (docs/tco.md); any other mapping where a value goes is a range.
_BLOCKS: dict[KeyPath, tuple[str, ...]] = {(): ("cluster", "workload", "reliability"), ("cluster",): ("capex", "opex"),
                                           ("workload",): ("model",)}
# Keys the scenario reader takes as whole numbers (scenario.py, `integer`): their draws are rounded.
WHOLE_KEYS = ("gpus", "unit_gpus", "layers", "hidden", "seq_len", "spare_racks", "spare_servers", "spare_gpus",
              "blast_radius_gpus")
_NOT_NUMBERS = ("name", "description", "sources", "gpu", "precision", "part", "action", "goodput_model",
                "charge_spares")  # keys that hold text or a flag: the scenario reader says what they take


@dataclass(frozen=True)
class Input:
    """One uncertain input: where it sits in the scenario and its distribution."""

    path: KeyPath
    name: str  # reliability.failure_mix[2].repair_hours
    distribution: distributions.Distribution
    whole: bool  # a key of whole numbers (gpus, spare racks): draws are rounded

    def fit(self, value: float) -> float:
        return round(value) if self.whole else float(value)


class UncertainScenario:
    def __init__(self, data: Any, source: str) -> None:
        data = require_mapping(data, source)
        self.source, self.data = source, data
        self.inputs = tuple(_input(path, raw, source) for path, raw in _ranges(data))
        self.point_data = _with(data, {i.path: i.fit(i.distribution.point) for i in self.inputs})
        self.point = scenario_from_data(self.point_data, source)
        for item in self.inputs:
            for end, value in zip(("low", "high"), item.distribution.ends(0.9)):
                self._at_end(item, end, item.fit(value))

    @property
    def name(self) -> str:
        return self.point.name

    def scenario_at(self, values: Mapping[str, float]) -> Scenario:
        """The scenario with each uncertain input at `values[name]` (the others at their point)."""
        data = _with(self.point_data, {i.path: i.fit(values[i.name]) for i in self.inputs if i.name in values})
        try:
            return scenario_from_data(data, self.source)
        except InputError as error:
            moved = ", ".join(f"{name} = {value:.6g}" for name, value in values.items())
            raise InputError(f"{error} (at {moved}, drawn from the scenario's ranges; bound the range: "
                             f"uniform or triangular)") from None

    def scenario_over(self, draws: Mapping[str, Draws]) -> Scenario:
        """The scenario with each uncertain input at its array of draws, for pricing every draw at once.

        Checked once, not per draw: what the scenario reader takes of a key is an interval (a
        bound each side, a whole number: the draws of a whole key are rounded), so the draws pass
        if their least and their greatest do, the other inputs at their points."""
        for item in self.inputs:
            values = draws[item.name]
            for value in dict.fromkeys((float(values.min()), float(values.max()))):
                self.scenario_at({item.name: value})
        return scenario_from_data(self.point_data, self.source, {i.name: draws[i.name] for i in self.inputs})

    def _at_end(self, item: Input, end: str, value: float) -> None:
        try:
            scenario_from_data(_with(self.point_data, {item.path: value}), self.source)
        except InputError as error:
            raise InputError(f"{error} (the {end} end of {item.name}'s {item.distribution.kind} range)") from None


def load_uncertain(path: str | os.PathLike[str]) -> UncertainScenario:
    return UncertainScenario(load_yaml_file(Path(path), MAX_WRITTEN_BYTES), str(path))


def _ranges(data: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, dict[str, Any]]]:
    """(path, mapping) of every range in the scenario data."""
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        here = path + (key,)
        if key in _NOT_NUMBERS:
            continue
        if isinstance(value, dict):
            if key in _BLOCKS.get(path, ()):
                yield from _ranges(value, here)
            else:
                yield here, value
        elif here == ("reliability", "failure_mix") and isinstance(value, list):
            for index, entry in enumerate(value):
                yield from _ranges(entry, here + (index,))


def _input(path: KeyPath, raw: dict[str, Any], source: str) -> Input:
    name = _name(path)
    if path[-1] == "share":
        raise InputError(f"{source}: {name}: a share cannot be a range (the failure_mix shares must add up to 1)")
    distribution = distributions.parse(raw, f"{source}: {name}")
    return Input(path, name, distribution, path[-1] in WHOLE_KEYS)


def _name(path: KeyPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _with(data: dict[str, Any], values: Mapping[KeyPath, Any]) -> dict[str, Any]:
    """A copy of the scenario data with the value at each path replaced."""
    data = copy.deepcopy(data)
    for path, value in values.items():
        node: Any = data  # mappings and failure_mix's list
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return data
