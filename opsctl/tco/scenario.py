"""Reading and checking a TCO scenario file (YAML or JSON): the blocks `cluster`, `workload` and
optional `reliability`, plus the keys opsctl adds (docs/tco.md, The scenario file, lists them all).

The file's shape is opsctl/tco/scenario_schema.py, one msgspec Struct per block
(docs/schemas/tco-scenario.schema.json is written from it, so an editor checks the YAML as it is
typed): the keys, their types and bounds.
What a schema cannot say is checked after it, each still one line naming the file and the key:
which keys go together (gpu_hour_cost or capex/opex, tokens_per_second_per_gpu or mfu with the
model), the shares of a failure mix adding up, a source naming a key the scenario has.

Numbers written as `300e9` (which YAML reads as a string) are accepted as numbers. Any number
may also be a range or a distribution (opsctl/tco/distributions.py): opsctl/tco/uncertain.py
reads those and gives this reader the scenario at a point of them.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.tco.derivation import Given
from opsctl.tco.elementwise import anywhere, fsum, largest, maximum, shown
from opsctl.tco.skus import SKUS, Sku
from opsctl.yaml_input import MAX_WRITTEN_BYTES, load_yaml_file, require_mapping

if TYPE_CHECKING:  # the schema imports msgspec: only when a scenario is read, not for `opsctl --help`
    from collections.abc import Mapping

    from opsctl.tco.scenario_schema import Capex, Opex, Range, ReliabilityBlock

GOODPUT_MODELS = ("ettr", "daly")
# Bounds on counts, so a typo cannot make pricing run for ever (P(all spare units busy) sums a term
# per spare unit): far above any fleet, and said in the error.
MAX_GPUS = 100_000_000
MAX_SPARE_UNITS = 100_000
_NUMBER_TEXT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True)
class ModelShape:
    """The transformer whose FLOPs per token Megatron's count needs."""

    params: float
    layers: int
    hidden: int
    seq_len: int


@dataclass(frozen=True)
class FailureClass:
    """A share of the interruptions and what each one takes out: given directly, or named as an
    MTTR part kind or repair action (resolved against the MTTR model when the run is priced)."""

    name: str
    share: float
    part: str | None = None
    action: str | None = None
    blast_radius_gpus: int | None = None
    repair_hours: float | None = None
    repair_step_hours: float | None = None  # with a part or action: its repair step (repair_h) instead of the MTTR model's
    mtbi_gpu_days: float | None = None  # the class's own MTBI (the ledger's per part kind) instead of a share


@dataclass(frozen=True)
class Reliability:
    mtbi_gpu_days: Given
    restart_minutes: Given
    checkpoint_write_minutes: Given
    checkpoint_interval_minutes: Given  # a number, or "optimal"
    failures: tuple  # FailureClass, shares summing to 1
    spare_gpus: Given | None  # hot spares in each NVLink domain; None: the MTTR model's
    spare_units: Given  # whole spare racks (NVL72) or servers (HGX)
    charge_spares: bool
    goodput_model: str

    @property
    def optimal_interval(self) -> bool:
        """Whether the checkpoint interval is Daly's optimum (else a number, or draws)."""
        return isinstance(self.checkpoint_interval_minutes.value, str)  # "optimal"


@dataclass(frozen=True)
class Scenario:
    source: str
    name: str
    description: str
    sku: Sku
    gpus: int
    gpu_hour_cost: Given | None
    capex: dict | None  # key -> Given
    opex: dict | None
    watts_per_gpu: Given
    pue: Given
    precision: str
    tokens_per_second_per_gpu: Given | None
    mfu: Given | None
    model: ModelShape | None
    tokens: Given | None
    reliability: Reliability | None
    raw: dict  # the parsed file, for sweeps that change one key


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    return scenario_from_data(load_yaml_file(path, MAX_WRITTEN_BYTES), str(path))


def scenario_from_data(data: Any, source: str, draws: Mapping[str, Any] | None = None) -> Scenario:
    """The Scenario of parsed scenario data (its numbers points, not ranges); one InputError if not.

    `draws` ({dotted key: numpy array}, opsctl/tco/uncertain.py) puts an array of draws in place of
    the number at each of its keys, for the Monte Carlo to price every draw at once: the data are
    checked as they are, the draws are not (the caller has checked them at their extremes)."""
    from opsctl.tco.scenario_schema import read_scenario

    data = require_mapping(data, source)
    checked = read_scenario(data, source)
    for key in checked.sources or {}:
        if _lookup(data, key) is _MISSING:
            raise InputError(f"{source}: sources.{key}: no such key in the scenario")
    read = _Given(source, checked.sources or {}, draws or {})
    cluster, workload = checked.cluster, checked.workload
    sku = SKUS[cluster.gpu]
    gpu_hour_cost = read("cluster.gpu_hour_cost", cluster.gpu_hour_cost)
    if gpu_hour_cost is not None and (cluster.capex or cluster.opex):
        raise InputError(f"{source}: cluster: give gpu_hour_cost or a capex/opex block, not both")
    if gpu_hour_cost is None and not (cluster.capex and cluster.opex):
        raise InputError(f"{source}: cluster.gpu_hour_cost missing: give $ per GPU-hour, or both a capex and an opex block")
    capex = _capex(cluster.capex, read) if cluster.capex else None
    opex = _opex(cluster.opex, read) if cluster.opex else None
    watts = read("cluster.watts_per_gpu", cluster.watts_per_gpu) or _sku_default(sku.watts_per_gpu, sku, "watts_per_gpu", source)
    pue = read("cluster.pue", cluster.pue) or _sku_default(sku.pue, sku, "pue", source)

    tps = read("workload.tokens_per_second_per_gpu", workload.tokens_per_second_per_gpu)
    mfu = read("workload.mfu", workload.mfu)
    model = None
    if workload.model:
        shape = workload.model
        model = ModelShape(read.number("workload.model.params", shape.params), read.number("workload.model.layers", shape.layers),
                           read.number("workload.model.hidden", shape.hidden), read.number("workload.model.seq_len", shape.seq_len))
    if tps is None and mfu is None:
        raise InputError(f"{source}: workload.tokens_per_second_per_gpu missing: give it, or mfu with model")
    if tps is not None and mfu is not None:
        raise InputError(f"{source}: workload: give tokens_per_second_per_gpu or mfu, not both")
    if mfu is not None and model is None:
        raise InputError(f"{source}: workload.model missing: mfu needs the model (params, layers, hidden, seq_len)")

    scenario = Scenario(
        source=source, name=str(checked.name or Path(source).stem), description=str(checked.description or ""),
        sku=sku, gpus=read.number("cluster.gpus", cluster.gpus), gpu_hour_cost=gpu_hour_cost, capex=capex, opex=opex,
        watts_per_gpu=watts, pue=pue, precision=workload.precision, tokens_per_second_per_gpu=tps, mfu=mfu, model=model,
        tokens=read("workload.tokens", workload.tokens),
        reliability=_reliability(checked.reliability, sku, read) if checked.reliability else None, raw=copy.deepcopy(data),
    )
    assert read.drawn == set(read.draws), f"draws for keys the reader does not read: {set(read.draws) - read.drawn}"
    return scenario


class _Given:
    """Gives each number of the scenario with where it came from: its `sources` entry, else the
    file and the key."""

    def __init__(self, source: str, sources: dict[str, str], draws: Mapping[str, Any]) -> None:
        self.source, self.sources, self.draws = source, sources, draws
        self.drawn: set[str] = set()  # the keys of `draws` read so far

    def where(self, path: str) -> str:
        return self.sources.get(path) or f"{self.source}: {path}"

    def __call__(self, path: str, value: float | Range | None) -> Given | None:
        return None if value is None else Given(self.number(path, value), self.where(path))

    def number(self, path: str, value: Any) -> Any:
        """A number of the scenario (or None, not given; its draws where there are draws); a range
        here is for opsctl/tco/uncertain.py to have read first."""
        if value is not None and not isinstance(value, (int, float)):  # what the schema leaves: a number, a Range
            raise InputError(f"{self.source}: {path}: a range where this reader takes a number (opsctl tco run prices ranges)")
        if value is None or path not in self.draws:
            return value
        self.drawn.add(path)
        return self.draws[path]


def _capex(block: Capex, read: _Given) -> dict[str, Given | None]:
    values = {key: read(f"cluster.capex.{key}", getattr(block, key))
              for key in ("capital_per_month", "unit_price", "depreciation_years", "cost_of_capital", "unit_gpus")}
    if values["capital_per_month"] is None:
        for key in ("unit_price", "depreciation_years", "cost_of_capital"):
            if values[key] is None:
                raise InputError(f"{read.source}: cluster.capex.{key} missing: give capital_per_month, or unit_price, "
                                 f"depreciation_years and cost_of_capital")
    elif values["unit_price"] is not None:
        raise InputError(f"{read.source}: cluster.capex: give capital_per_month or unit_price, not both")
    return values


def _opex(block: Opex, read: _Given) -> dict[str, Given | None]:
    values = {key: read(f"cluster.opex.{key}", getattr(block, key)) for key in type(block).__struct_fields__}
    if values["hosting_per_month"] is None:
        for key in ("it_kw_per_unit", "power_price_per_kwh", "colocation_per_kw_month"):
            if values[key] is None:
                raise InputError(f"{read.source}: cluster.opex.{key} missing: give hosting_per_month, or it_kw_per_unit, "
                                 f"power_price_per_kwh and colocation_per_kw_month")
    return values


def _reliability(block: ReliabilityBlock, sku: Sku, read: _Given) -> Reliability:
    source = read.source
    interval = block.checkpoint_interval_minutes if block.checkpoint_interval_minutes is not None else "optimal"
    own_rates = any(c.mtbi_gpu_days is not None for c in block.failure_mix or [])
    required = (["restart_minutes"] if own_rates else ["mtbi_gpu_days", "restart_minutes"]) + \
        (["checkpoint_write_minutes"] if interval == "optimal" else [])
    missing = [key for key in required if getattr(block, key) is None]
    if missing:
        raise InputError(f"{source}: reliability: {', '.join(missing)} missing (a reliability block needs "
                         f"mtbi_gpu_days, restart_minutes and, with the optimal checkpoint interval (the default), "
                         f"checkpoint_write_minutes; docs/tco.md)")
    interval_given = Given("optimal", read.where("reliability.checkpoint_interval_minutes")) if interval == "optimal" \
        else read("reliability.checkpoint_interval_minutes", interval)
    assert interval_given is not None  # a value was given, so a Given
    write = read("reliability.checkpoint_write_minutes", block.checkpoint_write_minutes) or Given(0.0, "default: non-blocking writes")
    if interval == "optimal" and anywhere(write.value == 0):
        raise InputError(f"{source}: reliability.checkpoint_write_minutes must be > 0 when checkpoint_interval_minutes "
                         f"is optimal (with free writes the optimum is to checkpoint continuously)")
    spare_key = "spare_racks" if sku.domain.unit == "rack" else "spare_servers"
    other = "spare_servers" if spare_key == "spare_racks" else "spare_racks"
    if getattr(block, other) is not None:
        raise InputError(f"{source}: reliability.{other}: a {sku.name} job keeps spare {sku.domain.unit}s; use {spare_key}")
    spare_units = read(f"reliability.{spare_key}", getattr(block, spare_key)) or Given(0, "default: no spare units")
    spare_gpus = read("reliability.spare_gpus", block.spare_gpus)
    if spare_gpus is not None and anywhere(spare_gpus.value >= sku.domain.gpus):
        raise InputError(f"{source}: reliability.spare_gpus must be fewer than the {sku.domain.gpus} GPUs of a {sku.domain.unit}")
    mtbi, failures = _interruption_rate(block, _failure_classes(block, read), read)
    restart = read("reliability.restart_minutes", block.restart_minutes)
    assert restart is not None  # required above
    return Reliability(
        mtbi_gpu_days=mtbi,
        restart_minutes=restart,
        checkpoint_write_minutes=write,
        checkpoint_interval_minutes=interval_given,
        failures=failures,
        spare_gpus=spare_gpus,
        spare_units=spare_units,
        charge_spares=block.charge_spares,
        goodput_model=block.goodput_model,
    )


def _failure_classes(block: ReliabilityBlock, read: _Given) -> tuple[FailureClass, ...]:
    source = read.source
    blast = read("reliability.blast_radius_gpus", block.blast_radius_gpus)
    repair = read("reliability.repair_hours", block.repair_hours)
    if block.failure_mix is None:
        if (blast is None) != (repair is None):
            missing = "repair_hours" if repair is None else "blast_radius_gpus"
            raise InputError(f"{source}: reliability.{missing} missing: blast_radius_gpus and repair_hours go together")
        if blast is None or repair is None:
            return (FailureClass("gpu failure", 1.0, part="gpu"),)  # the MTTR model's repair of a GPU
        return (FailureClass("interruption", 1.0, blast_radius_gpus=blast.value, repair_hours=repair.value),)
    if blast is not None or repair is not None:
        raise InputError(f"{source}: reliability: give blast_radius_gpus/repair_hours or failure_mix, not both")
    classes = []
    for index, entry in enumerate(block.failure_mix):
        path = f"reliability.failure_mix[{index}]"
        own = read.number(f"{path}.mtbi_gpu_days", entry.mtbi_gpu_days)
        if own is None and entry.share is None:
            raise InputError(f"{source}: {path}.share missing")
        if own is not None and entry.share is not None:
            raise InputError(f"{source}: {path}: give share or mtbi_gpu_days (the class's own MTBI), not both")
        named = [key for key in ("part", "action") if getattr(entry, key) is not None]
        direct = read.number(f"{path}.blast_radius_gpus", entry.blast_radius_gpus)
        hours = read.number(f"{path}.repair_hours", entry.repair_hours)  # with a part or action: the whole restore
        if len(named) + (direct is not None) != 1 or (direct is not None and hours is None):
            raise InputError(f"{source}: {path}: name a part or an action, or give blast_radius_gpus with repair_hours")
        step = read.number(f"{path}.repair_step_hours", entry.repair_step_hours)
        if step is not None and not named:
            raise InputError(f"{source}: {path}.repair_step_hours goes with a part or an action (it replaces "
                             f"the repair step of the MTTR model's action); with blast_radius_gpus give repair_hours")
        if step is not None and hours is not None:
            raise InputError(f"{source}: {path}: give repair_hours (the whole time to restore) or "
                             f"repair_step_hours (the action's repair step), not both")
        classes.append(FailureClass(str(entry.name or entry.part or entry.action or f"class {index}"),
                                    entry.share if entry.share is not None else 0.0, part=entry.part, action=entry.action,
                                    blast_radius_gpus=direct, repair_hours=hours, repair_step_hours=step, mtbi_gpu_days=own))
    total = sum(c.share for c in classes)
    if any(c.mtbi_gpu_days is not None for c in classes):
        if total > 1.0 + 1e-6:  # the classes with a share are part of reliability.mtbi_gpu_days's interruptions
            raise InputError(f"{source}: reliability.failure_mix shares must add up to at most 1 beside classes with "
                             f"their own mtbi_gpu_days, they add up to {total:g}")
    elif not math.isclose(total, 1.0, abs_tol=1e-6):
        raise InputError(f"{source}: reliability.failure_mix shares must add up to 1, they add up to {total:g}")
    return tuple(classes)


def _interruption_rate(block: ReliabilityBlock, classes: tuple[FailureClass, ...],
                       read: _Given) -> tuple[Given, tuple[FailureClass, ...]]:
    """The MTBI the job sees and each class's share of its interruptions.

    A class may give its own mtbi_gpu_days instead of a share (the ledger measures one per part
    kind): the interruption rates then add up — 1 / mtbi_gpu_days for such a class, share /
    reliability.mtbi_gpu_days for a class with a share — and each class's share is its part of
    the sum. Without such a class it is the scenario's MTBI and shares, as written."""
    source = read.source
    overall = read("reliability.mtbi_gpu_days", block.mtbi_gpu_days)
    if all(c.mtbi_gpu_days is None for c in classes):
        assert overall is not None  # required by _reliability
        return overall, classes
    shared = [c.name for c in classes if c.mtbi_gpu_days is None]
    if shared and overall is None:
        raise InputError(f"{source}: reliability.mtbi_gpu_days missing: the failure_mix classes with a share "
                         f"({', '.join(shared)}) are shares of its interruptions")
    if not shared and overall is not None:
        raise InputError(f"{source}: reliability.mtbi_gpu_days: every failure_mix class gives its own mtbi_gpu_days, "
                         f"which together make the MTBI; drop it")
    rates = [c.share / overall.value if c.mtbi_gpu_days is None and overall is not None
             else 1.0 / maximum(c.mtbi_gpu_days, sys.float_info.min) for c in classes]
    top = largest(rates)
    weights = [r / top for r in rates]  # ≤ 1 each: their sum cannot overflow where the rates' might
    total = fsum(weights)
    how = "1 / Σ (1 / mtbi_gpu_days of each failure_mix class" + (
        f"; share / {shown(overall.value)} for a class with a share ({overall.source})" if shared and overall is not None else "") + ")"
    return (Given(1.0 / top / total, how),
            tuple(dataclasses.replace(c, share=w / total) for c, w in zip(classes, weights)))


def _sku_default(value: float | None, sku: Sku, key: str, source: str) -> Given:
    if value is None:
        raise InputError(f"{source}: cluster.{key} missing: no published figure for {sku.name}, give it")
    return Given(value, sku.power_source)


# --- reading values ---------------------------------------------------------------------------
_MISSING = object()
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _lookup(data: Any, path: str) -> Any:
    """The value at a dotted path, list entries by index: reliability.failure_mix[2].repair_step_hours."""
    node = data
    for key, index in _STEP.findall(path):
        if key and isinstance(node, dict) and key in node:
            node = node[key]
        elif index and isinstance(node, list) and int(index) < len(node):
            node = node[int(index)]
        else:
            return _MISSING
    return node


def as_number(value: Any) -> int | float | None:
    """The number a scenario value stands for, or None: not a number, a bool, NaN, ±infinity, or
    an integer beyond the float range (10**400 would overflow every formula downstream)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value.strip()):
        value = float(value)
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            return None
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def set_key(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of scenario data with the value at a dotted path replaced (sweeps vary one key)."""
    data = copy.deepcopy(data)
    node = data
    parts = path.split(".")
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value
    return data
