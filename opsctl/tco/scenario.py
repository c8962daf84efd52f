"""Reading and checking a TCO scenario file (YAML or JSON): the blocks `cluster`, `workload` and
optional `reliability`, plus the keys opsctl adds (docs/tco.md, The scenario file, lists them all).

Every mistake is one line naming the file and the key: an unknown key, a missing throughput, an
unknown sku, a price that is zero or negative. Numbers written as `300e9` (which YAML reads as a
string) are accepted as numbers.
"""

import copy
import dataclasses
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from opsctl.errors import InputError
from opsctl.input_checks import shown as _shown  # a 400-digit integer is not one line's worth
from opsctl.tco.derivation import Given
from opsctl.tco.skus import PRECISIONS, SKUS
from opsctl.yaml_input import load_yaml_file, require_mapping

TOP_KEYS = ("name", "description", "sources", "cluster", "workload", "reliability")
CLUSTER_KEYS = ("gpu", "gpus", "gpu_hour_cost", "capex", "opex", "watts_per_gpu", "pue")
CAPEX_KEYS = ("unit_price", "unit_gpus", "depreciation_years", "cost_of_capital", "capital_per_month")
OPEX_KEYS = ("hosting_per_month", "it_kw_per_unit", "power_price_per_kwh", "pue", "colocation_per_kw_month",
             "software_per_month")
WORKLOAD_KEYS = ("tokens_per_second_per_gpu", "mfu", "model", "tokens", "precision")
MODEL_KEYS = ("params", "layers", "hidden", "seq_len")
RELIABILITY_KEYS = ("mtbi_gpu_days", "restart_minutes", "checkpoint_write_minutes", "checkpoint_interval_minutes",
                    "blast_radius_gpus", "repair_hours", "spare_gpus", "spare_racks", "spare_servers",
                    "charge_spares", "failure_mix", "goodput_model")
FAILURE_CLASS_KEYS = ("share", "mtbi_gpu_days", "part", "action", "blast_radius_gpus", "repair_hours", "repair_step_hours",
                      "name")
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


@dataclass(frozen=True)
class Scenario:
    source: str
    name: str
    description: str
    sku: object  # skus.Sku
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


def load_scenario(path):
    path = Path(path)
    return scenario_from_data(load_yaml_file(path), str(path))


def scenario_from_data(data, source):
    data = require_mapping(data, source)
    _check_keys(data, TOP_KEYS, source, "")
    sources = data.get("sources") or {}
    if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
        raise InputError(f"{source}: sources must map dotted keys to source strings")
    for key in sources:
        if not isinstance(key, str) or _lookup(data, key) is _MISSING:
            raise InputError(f"{source}: sources.{key}: no such key in the scenario")
    reader = _Reader(data, source)

    cluster = reader.block("cluster", CLUSTER_KEYS, required=True)
    sku_name = cluster.choice("gpu", tuple(SKUS), what="sku")
    sku = SKUS[sku_name]
    gpus = cluster.integer("gpus", minimum=1, maximum=MAX_GPUS)
    gpu_hour_cost = cluster.number("gpu_hour_cost", required=False)
    capex = cluster.block("capex", CAPEX_KEYS)
    opex = cluster.block("opex", OPEX_KEYS)
    if gpu_hour_cost is not None and (capex or opex):
        raise InputError(f"{source}: cluster: give gpu_hour_cost or a capex/opex block, not both")
    if gpu_hour_cost is None and not (capex and opex):
        raise InputError(f"{source}: cluster.gpu_hour_cost missing: give $ per GPU-hour, or both a capex and an opex block")
    capex_values = _capex(capex) if capex else None
    opex_values = _opex(opex) if opex else None
    watts = cluster.number("watts_per_gpu", required=False) or _sku_default(sku.watts_per_gpu, sku, "watts_per_gpu", source)
    pue = cluster.number("pue", required=False, minimum=1.0) or _sku_default(sku.pue, sku, "pue", source)

    workload = reader.block("workload", WORKLOAD_KEYS, required=True)
    precision = workload.choice("precision", PRECISIONS, what="precision")
    tps = workload.number("tokens_per_second_per_gpu", required=False)
    mfu = workload.number("mfu", required=False, maximum=1.0)
    model_block = workload.block("model", MODEL_KEYS)
    model = None
    if model_block:
        model = ModelShape(model_block.number("params").value, model_block.integer("layers", minimum=1).value,
                           model_block.integer("hidden", minimum=1).value, model_block.integer("seq_len", minimum=1).value)
    if tps is None and mfu is None:
        raise InputError(f"{source}: workload.tokens_per_second_per_gpu missing: give it, or mfu with model")
    if tps is not None and mfu is not None:
        raise InputError(f"{source}: workload: give tokens_per_second_per_gpu or mfu, not both")
    if mfu is not None and model is None:
        raise InputError(f"{source}: workload.model missing: mfu needs the model (params, layers, hidden, seq_len)")
    tokens = workload.number("tokens", required=False)

    reliability = _reliability(reader.block("reliability", RELIABILITY_KEYS), sku, source)
    return Scenario(
        source=source, name=str(data.get("name") or Path(source).stem), description=str(data.get("description") or ""),
        sku=sku, gpus=gpus.value, gpu_hour_cost=gpu_hour_cost, capex=capex_values, opex=opex_values,
        watts_per_gpu=watts, pue=pue, precision=precision, tokens_per_second_per_gpu=tps, mfu=mfu, model=model,
        tokens=tokens, reliability=reliability, raw=copy.deepcopy(data),
    )


def _capex(block):
    values = {"capital_per_month": block.number("capital_per_month", required=False),
              "unit_price": block.number("unit_price", required=False),
              "depreciation_years": block.number("depreciation_years", required=False),
              "cost_of_capital": block.number("cost_of_capital", required=False, allow_zero=True, maximum=1.0),
              "unit_gpus": block.integer("unit_gpus", required=False, minimum=1)}
    if values["capital_per_month"] is None:
        for key in ("unit_price", "depreciation_years", "cost_of_capital"):
            if values[key] is None:
                raise InputError(f"{block.source}: {block.path}.{key} missing: give capital_per_month, or unit_price, "
                                 f"depreciation_years and cost_of_capital")
    elif values["unit_price"] is not None:
        raise InputError(f"{block.source}: {block.path}: give capital_per_month or unit_price, not both")
    return values


def _opex(block):
    values = {key: block.number(key, required=False, allow_zero=key == "software_per_month",
                                minimum=1.0 if key == "pue" else None)
              for key in OPEX_KEYS}
    if values["hosting_per_month"] is None:
        for key in ("it_kw_per_unit", "power_price_per_kwh", "colocation_per_kw_month"):
            if values[key] is None:
                raise InputError(f"{block.source}: {block.path}.{key} missing: give hosting_per_month, or it_kw_per_unit, "
                                 f"power_price_per_kwh and colocation_per_kw_month")
    return values


def _reliability(block, sku, source):
    if block is None:
        return None
    interval = block.raw.get("checkpoint_interval_minutes", "optimal")
    own_rates = isinstance(block.raw.get("failure_mix"), list) and any(
        isinstance(c, dict) and "mtbi_gpu_days" in c for c in block.raw["failure_mix"])
    required = (["restart_minutes"] if own_rates else ["mtbi_gpu_days", "restart_minutes"]) + \
        (["checkpoint_write_minutes"] if interval == "optimal" else [])
    missing = [key for key in required if block.raw.get(key) is None]
    if missing:
        raise InputError(f"{source}: reliability: {', '.join(missing)} missing (a reliability block needs "
                         f"mtbi_gpu_days, restart_minutes and, with the optimal checkpoint interval (the default), "
                         f"checkpoint_write_minutes; docs/tco.md)")
    if interval == "optimal":
        interval = Given("optimal", block.given_source("checkpoint_interval_minutes"))
    else:
        interval = block.number("checkpoint_interval_minutes")
    write = block.number("checkpoint_write_minutes", required=False, allow_zero=True) or Given(0.0, "default: non-blocking writes")
    if interval.value == "optimal" and write.value == 0:
        raise InputError(f"{source}: reliability.checkpoint_write_minutes must be > 0 when checkpoint_interval_minutes "
                         f"is optimal (with free writes the optimum is to checkpoint continuously)")
    spare_key = "spare_racks" if sku.domain.unit == "rack" else "spare_servers"
    other = "spare_servers" if spare_key == "spare_racks" else "spare_racks"
    if other in block.raw:
        raise InputError(f"{source}: reliability.{other}: a {sku.name} job keeps spare {sku.domain.unit}s; use {spare_key}")
    spare_units = block.integer(spare_key, required=False, minimum=0, maximum=MAX_SPARE_UNITS) or Given(0, "default: no spare units")
    spare_gpus = block.integer("spare_gpus", required=False, minimum=0)
    if spare_gpus is not None and spare_gpus.value >= sku.domain.gpus:
        raise InputError(f"{source}: reliability.spare_gpus must be fewer than the {sku.domain.gpus} GPUs of a {sku.domain.unit}")
    charge = block.raw.get("charge_spares", True)
    if not isinstance(charge, bool):
        raise InputError(f"{source}: reliability.charge_spares must be true or false, got {charge!r}")
    model = block.raw.get("goodput_model", "ettr")
    if model not in GOODPUT_MODELS:
        raise InputError(f"{source}: reliability.goodput_model must be one of {', '.join(GOODPUT_MODELS)}, got {model!r}")
    mtbi, failures = _interruption_rate(block, _failure_classes(block, source), source)
    result = Reliability(
        mtbi_gpu_days=mtbi,
        restart_minutes=block.number("restart_minutes", allow_zero=True),
        checkpoint_write_minutes=write,
        checkpoint_interval_minutes=interval,
        failures=failures,
        spare_gpus=spare_gpus,
        spare_units=spare_units,
        charge_spares=charge,
        goodput_model=model,
    )
    return result


def _failure_classes(block, source):
    mix = block.raw.get("failure_mix")
    blast = block.integer("blast_radius_gpus", required=False, minimum=0)
    repair = block.number("repair_hours", required=False, allow_zero=True)
    if mix is None:
        if (blast is None) != (repair is None):
            missing = "repair_hours" if repair is None else "blast_radius_gpus"
            raise InputError(f"{source}: reliability.{missing} missing: blast_radius_gpus and repair_hours go together")
        if blast is None:
            return (FailureClass("gpu failure", 1.0, part="gpu"),)  # the MTTR model's repair of a GPU
        return (FailureClass("interruption", 1.0, blast_radius_gpus=blast.value, repair_hours=repair.value),)
    if blast is not None or repair is not None:
        raise InputError(f"{source}: reliability: give blast_radius_gpus/repair_hours or failure_mix, not both")
    if not isinstance(mix, list) or not mix:
        raise InputError(f"{source}: reliability.failure_mix must be a list of failure classes")
    classes = []
    for index, raw in enumerate(mix):
        entry = _Reader.sub(raw, source, f"reliability.failure_mix[{index}]", FAILURE_CLASS_KEYS)
        own = entry.number("mtbi_gpu_days", required=False)
        share = entry.number("share", required=own is None, maximum=1.0)
        if own is not None and share is not None:
            raise InputError(f"{source}: {entry.path}: give share or mtbi_gpu_days (the class's own MTBI), not both")
        named = [key for key in ("part", "action") if key in raw]
        direct = entry.integer("blast_radius_gpus", required=False, minimum=0)
        hours = entry.number("repair_hours", required=False, allow_zero=True)  # with a part or action: the whole restore
        if len(named) + (direct is not None) != 1 or (direct is not None and hours is None):
            raise InputError(f"{source}: {entry.path}: name a part or an action, or give blast_radius_gpus with repair_hours")
        for key in named:
            if not isinstance(raw[key], str):
                raise InputError(f"{source}: {entry.path}.{key} must be a name, got {_shown(raw[key])}")
        step = entry.number("repair_step_hours", required=False, allow_zero=True)
        if step is not None and not named:
            raise InputError(f"{source}: {entry.path}.repair_step_hours goes with a part or an action (it replaces "
                             f"the repair step of the MTTR model's action); with blast_radius_gpus give repair_hours")
        if step is not None and hours is not None:
            raise InputError(f"{source}: {entry.path}: give repair_hours (the whole time to restore) or "
                             f"repair_step_hours (the action's repair step), not both")
        if not isinstance(raw.get("name", ""), str):
            raise InputError(f"{source}: {entry.path}.name must be text, got {_shown(raw['name'])}")
        classes.append(FailureClass(str(raw.get("name") or raw.get("part") or raw.get("action") or f"class {index}"),
                                    share.value if share else 0.0, part=raw.get("part"), action=raw.get("action"),
                                    blast_radius_gpus=direct.value if direct else None,
                                    repair_hours=hours.value if hours else None,
                                    repair_step_hours=step.value if step else None,
                                    mtbi_gpu_days=own.value if own else None))
    total = sum(c.share for c in classes)
    if any(c.mtbi_gpu_days is not None for c in classes):
        if total > 1.0 + 1e-6:  # the classes with a share are part of reliability.mtbi_gpu_days's interruptions
            raise InputError(f"{source}: reliability.failure_mix shares must add up to at most 1 beside classes with "
                             f"their own mtbi_gpu_days, they add up to {total:g}")
    elif not math.isclose(total, 1.0, abs_tol=1e-6):
        raise InputError(f"{source}: reliability.failure_mix shares must add up to 1, they add up to {total:g}")
    return tuple(classes)


def _interruption_rate(block, classes, source):
    """The MTBI the job sees and each class's share of its interruptions.

    A class may give its own mtbi_gpu_days instead of a share (the ledger measures one per part
    kind): the interruption rates then add up — 1 / mtbi_gpu_days for such a class, share /
    reliability.mtbi_gpu_days for a class with a share — and each class's share is its part of
    the sum. Without such a class it is the scenario's MTBI and shares, as written."""
    if all(c.mtbi_gpu_days is None for c in classes):
        return block.number("mtbi_gpu_days"), classes
    overall = block.number("mtbi_gpu_days", required=False)
    shared = [c.name for c in classes if c.mtbi_gpu_days is None]
    if shared and overall is None:
        raise InputError(f"{source}: reliability.mtbi_gpu_days missing: the failure_mix classes with a share "
                         f"({', '.join(shared)}) are shares of its interruptions")
    if not shared and overall is not None:
        raise InputError(f"{source}: reliability.mtbi_gpu_days: every failure_mix class gives its own mtbi_gpu_days, "
                         f"which together make the MTBI; drop it")
    rates = [c.share / overall.value if c.mtbi_gpu_days is None else 1.0 / max(c.mtbi_gpu_days, sys.float_info.min)
             for c in classes]
    top = max(rates)
    weights = [r / top for r in rates]  # ≤ 1 each: their sum cannot overflow where the rates' might
    total = math.fsum(weights)
    how = "1 / Σ (1 / mtbi_gpu_days of each failure_mix class" + (
        f"; share / {overall.value:g} for a class with a share ({overall.source})" if shared else "") + ")"
    return (Given(1.0 / top / total, how),
            tuple(dataclasses.replace(c, share=w / total) for c, w in zip(classes, weights)))


def _sku_default(value, sku, key, source):
    if value is None:
        raise InputError(f"{source}: cluster.{key} missing: no published figure for {sku.name}, give it")
    return Given(value, sku.power_source)


# --- reading values ---------------------------------------------------------------------------
_MISSING = object()


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _lookup(data, path):
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


def _source_of(data, source, path):
    return (data.get("sources") or {}).get(path) or f"{source}: {path}"


def _check_keys(mapping, allowed, source, path):
    unknown = sorted(str(k) for k in mapping if k not in allowed)
    if unknown:
        where = f" in {path}" if path else ""
        raise InputError(f"{source}: unknown key(s){where}: {', '.join(unknown)} (known: {', '.join(allowed)})")


class _Reader:
    """Reads one block of the scenario, naming the file and the dotted key in every error."""

    def __init__(self, raw, source, path="", allowed=None, root=None):
        self.raw, self.source, self.path = raw, source, path
        self.root = raw if root is None else root
        if allowed is not None:
            _check_keys(raw, allowed, source, path)

    @classmethod
    def sub(cls, raw, source, path, allowed, root=None):
        if not isinstance(raw, dict):
            raise InputError(f"{source}: {path} must be a mapping of keys")
        return cls(raw, source, path, allowed, root)

    def key(self, name):
        return f"{self.path}.{name}" if self.path else name

    def given_source(self, name):
        return _source_of(self.root, self.source, self.key(name))

    def block(self, name, allowed, required=False):
        if name not in self.raw or self.raw[name] is None:
            if required:
                raise InputError(f"{self.source}: {self.key(name)} missing: the scenario needs a {name} block")
            return None
        return _Reader.sub(self.raw[name], self.source, self.key(name), allowed, self.root)

    def number(self, name, required=True, allow_zero=False, minimum=None, maximum=None):
        value = self.raw.get(name, _MISSING)
        if value is _MISSING or value is None:
            if required:
                raise InputError(f"{self.source}: {self.key(name)} missing")
            return None
        number = as_number(value)
        if number is None:
            beyond = " within the float range (below 1.8e308)" if isinstance(value, int) and not isinstance(value, bool) else ""
            raise InputError(f"{self.source}: {self.key(name)} must be a finite number{beyond}, got {_shown(value)}")
        low = ">= 0" if allow_zero else "> 0"
        if number < 0 or (number == 0 and not allow_zero):
            raise InputError(f"{self.source}: {self.key(name)} must be {low}, got {_shown(value)}")
        if minimum is not None and number < minimum:
            raise InputError(f"{self.source}: {self.key(name)} must be >= {minimum:g}, got {_shown(value)}")
        if maximum is not None and number > maximum:
            raise InputError(f"{self.source}: {self.key(name)} must be <= {maximum:,}, got {_shown(value)}")
        return Given(number, self.given_source(name))

    def integer(self, name, required=True, minimum=0, maximum=None):
        given = self.number(name, required=required, allow_zero=minimum == 0, minimum=minimum, maximum=maximum)
        if given is None:
            return None
        if given.value != int(given.value):
            raise InputError(f"{self.source}: {self.key(name)} must be a whole number, got {_shown(self.raw[name])}")
        return Given(int(given.value), given.source)

    def choice(self, name, allowed, what):
        value = self.raw.get(name)
        if value is None:
            raise InputError(f"{self.source}: {self.key(name)} missing: the {what} ({', '.join(allowed)})")
        if value not in allowed:
            raise InputError(f"{self.source}: {self.key(name)}: unknown {what} {value!r} (known: {', '.join(allowed)})")
        return value


def as_number(value):
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




def set_key(data, path, value):
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
