"""The TCO scenario file's schema (docs/tco.md, The scenario file): one msgspec Struct per block,
with each key's type, bounds and meaning. opsctl/tco/scenario.py reads a scenario through it and
checks what a schema cannot say (which keys go together); docs/schemas/tco-scenario.schema.json is
written from it (tools/write_schemas.py). Imported only when a scenario is read: msgspec stays out
of `opsctl --help`.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Literal

import msgspec

from opsctl.errors import InputError
from opsctl.input_schema import message
from opsctl.tco.distributions import KINDS
from opsctl.tco.scenario import GOODPUT_MODELS, MAX_GPUS, MAX_SPARE_UNITS
from opsctl.tco.skus import PRECISIONS, SKUS

_FLOAT_MAX = sys.float_info.max  # a bound every finite float meets and infinity does not
_INT_MAX = 2**63 - 1  # msgspec bounds integers within int64; far above any figure of a scenario


class Range(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A number known as a range or a distribution (docs/tco.md, Ranges and distributions):
    {low, high}; {dist: triangular, low, mode, high}; {dist: lognormal, low, high, level};
    {dist: poisson_mtbi, failures, gpu_days, prior}; {dist: mean_of, samples};
    {dist: lognormal_mean, samples, prior_sigma, prior_weight}; each may carry `value`, the point figure."""

    dist: Literal[KINDS] = "uniform"  # type: ignore[valid-type]  # the kinds distributions.py draws
    low: float | None = None
    high: float | None = None
    mode: float | None = None
    level: float | None = None
    failures: float | None = None
    gpu_days: float | None = None
    prior: float | None = None
    samples: list[float] | None = None
    prior_sigma: float | None = None
    prior_weight: float | None = None
    value: float | None = None


# A number of the scenario: an integer or a float (or text such as 300e9) within its bounds, or a range.
Positive = Annotated[int, msgspec.Meta(gt=0, le=_INT_MAX)] | Annotated[float, msgspec.Meta(gt=0, le=_FLOAT_MAX)] | Range
NonNegative = Annotated[int, msgspec.Meta(ge=0, le=_INT_MAX)] | Annotated[float, msgspec.Meta(ge=0, le=_FLOAT_MAX)] | Range
AtLeastOne = Annotated[int, msgspec.Meta(ge=1, le=_INT_MAX)] | Annotated[float, msgspec.Meta(ge=1, le=_FLOAT_MAX)] | Range
UpToOne = Annotated[int, msgspec.Meta(gt=0, le=1)] | Annotated[float, msgspec.Meta(gt=0, le=1)] | Range
Whole = Annotated[int, msgspec.Meta(ge=0, le=_INT_MAX)] | Range
WholeAboveZero = Annotated[int, msgspec.Meta(ge=1, le=_INT_MAX)] | Range


def _doc(description: str) -> msgspec.Meta:
    return msgspec.Meta(description=description)


class Capex(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """What the GPUs cost to own: capital_per_month, or unit_price, depreciation_years and cost_of_capital."""

    unit_price: Annotated[Positive, _doc("$ per unit (a server or a rack)")] | None = None
    unit_gpus: Annotated[WholeAboveZero, _doc("GPUs per unit (default: the SKU's NVLink domain)")] | None = None
    depreciation_years: Annotated[Positive, _doc("years over which a unit is written off")] | None = None
    cost_of_capital: Annotated[Annotated[int, msgspec.Meta(ge=0, le=1)] | Annotated[float, msgspec.Meta(ge=0, le=1)] | Range,
                               _doc("yearly cost of capital, a fraction")] | None = None
    capital_per_month: Annotated[Positive, _doc("$ per unit and month, instead of the three above")] | None = None


class Opex(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """What running the GPUs costs: hosting_per_month, or power and colocation."""

    hosting_per_month: Annotated[Positive, _doc("$ per unit and month, all-in")] | None = None
    it_kw_per_unit: Annotated[Positive, _doc("IT power of a unit, kW")] | None = None
    power_price_per_kwh: Annotated[Positive, _doc("$ per kWh")] | None = None
    pue: Annotated[AtLeastOne, _doc("power usage effectiveness of the hall, 1 or more")] | None = None
    colocation_per_kw_month: Annotated[Positive, _doc("$ per kW of IT power and month")] | None = None
    software_per_month: Annotated[NonNegative, _doc("$ per unit and month for software")] | None = None


class Cluster(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The GPUs and what they cost: gpu_hour_cost, or a capex and an opex block."""

    gpu: Annotated[Literal[tuple(SKUS)], _doc("the GPU SKU")]  # type: ignore[valid-type]  # the SKUs skus.py knows
    gpus: Annotated[Annotated[int, msgspec.Meta(ge=1, le=MAX_GPUS)] | Range, _doc("GPUs in the job")]
    gpu_hour_cost: Annotated[Positive, _doc("$ per GPU-hour, all-in")] | None = None
    capex: Capex | None = None
    opex: Opex | None = None
    watts_per_gpu: Annotated[Positive, _doc("W per GPU, all of the server (default: the SKU's published figure)")] | None = None
    pue: Annotated[AtLeastOne, _doc("power usage effectiveness, 1 or more (default: the SKU's)")] | None = None


class ModelBlock(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The transformer whose FLOPs per token Megatron's count needs."""

    params: Annotated[Positive, _doc("parameters")]
    layers: Annotated[WholeAboveZero, _doc("transformer layers")]
    hidden: Annotated[WholeAboveZero, _doc("hidden size")]
    seq_len: Annotated[WholeAboveZero, _doc("sequence length, tokens")]


class Workload(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The training run: tokens_per_second_per_gpu, or mfu with the model."""

    precision: Annotated[Literal[PRECISIONS], _doc("the precision of the matrix maths")]  # type: ignore[valid-type]
    tokens_per_second_per_gpu: Annotated[Positive, _doc("measured training throughput")] | None = None
    mfu: Annotated[UpToOne, _doc("model FLOPs utilisation, above 0 and at most 1")] | None = None
    model: ModelBlock | None = None
    tokens: Annotated[Positive, _doc("tokens to train on")] | None = None


class FailureClassBlock(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A class of interruptions: its share (or its own mtbi_gpu_days) and what it takes out: a
    part or an MTTR action, or blast_radius_gpus with repair_hours."""

    share: Annotated[Annotated[int, msgspec.Meta(gt=0, le=1)] | Annotated[float, msgspec.Meta(gt=0, le=1)],
                     _doc("its share of the interruptions; the shares add up to 1")] | None = None
    mtbi_gpu_days: Annotated[Positive, _doc("the class's own MTBI, GPU-days, instead of a share")] | None = None
    part: Annotated[str, _doc("an MTTR part kind: its repair and blast radius")] | None = None
    action: Annotated[str, _doc("an MTTR repair action")] | None = None
    blast_radius_gpus: Annotated[Whole, _doc("GPUs each interruption takes out")] | None = None
    repair_hours: Annotated[NonNegative, _doc("hours to restore, the whole repair")] | None = None
    repair_step_hours: Annotated[NonNegative, _doc("with a part or action: its repair step instead of the MTTR model's")] | None = None
    name: str | None = None


class ReliabilityBlock(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """How often the job is interrupted, what each interruption costs, and the spares."""

    mtbi_gpu_days: Annotated[Positive, _doc("mean GPU-days between interruptions, per GPU")] | None = None
    restart_minutes: Annotated[NonNegative, _doc("minutes to restart the job after an interruption")] | None = None
    checkpoint_write_minutes: Annotated[NonNegative, _doc("minutes a checkpoint write stalls the job")] | None = None
    checkpoint_interval_minutes: Annotated[Positive | Literal["optimal"],
                                           _doc("minutes between checkpoints, or optimal (the default)")] | None = None
    blast_radius_gpus: Annotated[Whole, _doc("GPUs each interruption takes out")] | None = None
    repair_hours: Annotated[NonNegative, _doc("hours to restore")] | None = None
    spare_gpus: Annotated[Whole, _doc("hot spare GPUs in each NVLink domain")] | None = None
    spare_racks: Annotated[Annotated[int, msgspec.Meta(ge=0, le=MAX_SPARE_UNITS)] | Range,
                           _doc("whole spare racks (NVL72)")] | None = None
    spare_servers: Annotated[Annotated[int, msgspec.Meta(ge=0, le=MAX_SPARE_UNITS)] | Range,
                             _doc("whole spare servers (HGX)")] | None = None
    charge_spares: Annotated[bool, _doc("whether the spares are paid for")] = True
    failure_mix: Annotated[list[FailureClassBlock], msgspec.Meta(min_length=1, description="the classes of interruptions")] | None = None
    goodput_model: Annotated[Literal[GOODPUT_MODELS], _doc("ettr or daly")] = "ettr"  # type: ignore[valid-type]


class TcoScenario(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A TCO scenario (docs/tco.md, The scenario file)."""

    cluster: Cluster
    workload: Workload
    name: str | None = None
    description: str | None = None
    sources: Annotated[dict[str, str], _doc("dotted key (cluster.gpu_hour_cost) -> where its number comes from")] | None = None
    reliability: ReliabilityBlock | None = None


def read_scenario(data: Any, source: str) -> TcoScenario:
    """Scenario data checked against the schema; one InputError naming the file and the key if not.

    Not strict: a number YAML read as text (300e9) is a number, a whole float (64.0) an integer,
    as the scenario has always taken them."""
    try:
        return msgspec.convert(data, type=TcoScenario, strict=False)
    except msgspec.ValidationError as error:
        raise InputError(f"{source}: {message(error)}") from None
