"""Pricing one training run: $ per GPU-hour and per million tokens, energy per token, and — with
a `reliability` block — goodput and the effective $ per million tokens once interruptions,
restarts, repairs, checkpoints and spares are paid for.

The result is the `opsctl tco run` document (docs/tco.md, The output); `derivations` says, for
every figure, the formula, the inputs it used and their sources.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opsctl.mttr import load_mttr_model
from opsctl.tco import checkpointing, energy, goodput, spares
from opsctl.tco.derivation import Figure
from opsctl.tco.gpu_hour_cost import gpu_hour_cost
from opsctl.tco.throughput import throughput

if TYPE_CHECKING:
    from opsctl.mttr import MttrModel
    from opsctl.tco.scenario import Reliability, Scenario

COST_SOURCE = "docs/sources.md, Ownership cost: cost per M tokens = gpu_hour_cost / (tokens_per_second_per_gpu × 3600) × 1e6"


@dataclass(frozen=True)
class PricedReliability:
    """What a reliability block adds to the priced document: its keys, its figures (in the order
    the derivations list them; None: a figure without a bound) and its warnings."""

    document: dict[str, Any]
    figures: dict[str, Figure | None]
    warnings: list[str]


def price(scenario: Scenario, mttr_model: MttrModel | None = None) -> dict[str, Any]:
    """The output document of `opsctl tco run` for a loaded Scenario."""
    cost = gpu_hour_cost(scenario)
    tps, mfu = throughput(scenario)
    per_million = Figure(cost.value / (tps.value * 3600) * 1e6, "$/M tokens",
                         "gpu_hour_cost / (tokens_per_second_per_gpu · 3600) · 1e6", COST_SOURCE,
                         {"gpu_hour_cost": cost.value, "tokens_per_second_per_gpu": tps.value})
    joules = energy.joules_per_token(scenario.watts_per_gpu, scenario.pue, tps.value)
    figures: dict[str, Figure | None] = {"gpu_hour_cost": cost, "tokens_per_second_per_gpu": tps, "mfu": mfu,
                                         "cost_per_million_tokens": per_million, "joules_per_token": joules}
    tokens = scenario.tokens.value if scenario.tokens else None
    tokens_source = scenario.tokens.source if scenario.tokens else ""
    if tokens is not None:
        figures["total_cost"] = Figure(tokens / 1e6 * per_million.value, "$", "tokens / 1e6 · cost_per_million_tokens",
                                       tokens_source, {"tokens": tokens, "cost_per_million_tokens": per_million.value})
        figures["household_years"] = energy.household_years(tokens, joules.value)

    document: dict[str, Any] = {
        "scenario": scenario.source, "name": scenario.name, "description": scenario.description,
        "gpu": scenario.sku.name, "gpus": scenario.gpus, "precision": scenario.precision, "tokens": tokens,
    }
    warnings: list[str] = []
    if scenario.reliability is None:
        document.update(goodput=1.0, goodput_model=None, checkpoint_interval_minutes=None, spare_charge_factor=1.0,
                        reliability=None, spares=None)
        figures["effective_cost_per_million_tokens"] = Figure(
            per_million.value, "$/M tokens", "cost_per_million_tokens (no reliability block: no interruptions priced)",
            COST_SOURCE, {"cost_per_million_tokens": per_million.value})
    else:
        priced = _reliability(scenario, scenario.reliability, mttr_model or load_mttr_model(), per_million.value)
        document.update(priced.document)
        figures.update(priced.figures)
        warnings += priced.warnings
    effective_figure = figures["effective_cost_per_million_tokens"]
    effective = effective_figure.value if effective_figure else None
    share = document["goodput"]
    if tokens is not None and effective is not None:
        figures["effective_total_cost"] = Figure(tokens / 1e6 * effective, "$", "tokens / 1e6 · effective_cost_per_million_tokens",
                                                 tokens_source, {"tokens": tokens})
        figures["training_days"] = Figure(tokens / (tps.value * scenario.gpus * share) / 86400, "days",
                                          "tokens / (tokens_per_second_per_gpu · gpus · goodput) / 86,400 s",
                                          tokens_source,
                                          {"tokens": tokens, "tokens_per_second_per_gpu": tps.value, "gpus": scenario.gpus,
                                           "goodput": share})
    if share > 0 and effective is not None:
        figures["effective_joules_per_token"] = Figure(
            joules.value / share, "J/token", "joules_per_token / goodput (the job's GPUs draw power through lost work, "
            "restarts and waits: an upper bound)", joules.source, {"joules_per_token": joules.value, "goodput": share})
    for key in ("gpu_hour_cost", "tokens_per_second_per_gpu", "mfu", "cost_per_million_tokens", "joules_per_token",
                "total_cost", "household_years", "effective_cost_per_million_tokens", "effective_total_cost",
                "effective_joules_per_token", "training_days"):
        figure = figures.get(key)
        document[key] = figure.value if figure else None
    # A throughput so near zero that no cost or energy per token is a number (5e-324 tokens/s)
    # prices nothing: the figures are null, and this says why rather than leaving them blank.
    unpriced = [key for key in ("cost_per_million_tokens", "joules_per_token")
                if not math.isfinite(figures[key].value)]  # type: ignore[union-attr]  # both set above
    if unpriced:
        warnings.insert(0, f"tokens_per_second_per_gpu {tps.value:g} is too small to price: {' and '.join(unpriced)} "
                           "exceed any number (null here); check workload.tokens_per_second_per_gpu")
    document["warnings"] = warnings
    document["derivations"] = {key: figure.to_dict() for key, figure in figures.items() if figure is not None}
    return _finite(document)


def _finite(node: Any) -> Any:
    """The document with every infinite or NaN number as null: JSON has no infinity, and only times
    at the edge of the float range (a repair of 1e308 hours) produce one."""
    if isinstance(node, dict):
        return {key: _finite(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_finite(value) for value in node]
    if isinstance(node, float) and not math.isfinite(node):
        return None
    return node


def _reliability(scenario: Scenario, given: Reliability, mttr_model: MttrModel, per_million: float) -> PricedReliability:
    """The goodput, checkpoint interval and effective price of a scenario with a reliability block."""
    figures: dict[str, Figure | None] = {}
    warnings: list[str] = []
    place = spares.layout(scenario, mttr_model)
    mtbi = given.mtbi_gpu_days.value * (spares.MINUTES_PER_DAY / place.training_gpus)  # the job's, in minutes
    # kept inside the float range (MTBIs beyond it price as no interruptions, or as no progress)
    mtbi = min(max(mtbi, sys.float_info.min), sys.float_info.max)
    failures = [spares.resolve(c, scenario, mttr_model) for c in given.failures]
    failures, all_busy = spares.cover(failures, place, 60.0 / mtbi)
    restart = given.restart_minutes.value
    downtime = restart + sum(f.share * f.wait_minutes for f in failures)
    write = given.checkpoint_write_minutes.value
    young = checkpointing.young_interval(write, mtbi) if write > 0 else None
    daly_optimum = checkpointing.daly_interval(write, mtbi) if write > 0 else None
    if given.checkpoint_interval_minutes.value == "optimal":
        assert daly_optimum is not None  # the scenario reader refuses the optimal interval with free writes
        interval = daly_optimum
        figures["checkpoint_interval_minutes"] = Figure(
            interval, "minutes", "Daly's higher-order optimum with δ = checkpoint_write_minutes, M = job MTBI",
            checkpointing.DALY_SOURCE, {"checkpoint_write_minutes": write, "job_mtbi_minutes": mtbi})
    else:
        interval = given.checkpoint_interval_minutes.value
        figures["checkpoint_interval_minutes"] = Figure(interval, "minutes", "given",
                                                        given.checkpoint_interval_minutes.source, {})
    inputs = {"job_mtbi_minutes": mtbi, "downtime_per_interruption_minutes": downtime,
              "checkpoint_write_minutes": write, "checkpoint_interval_minutes": interval}
    ettr_value = goodput.ettr(mtbi, downtime, write, interval)
    daly_value = goodput.daly_goodput(mtbi, downtime, write, interval)
    models = {"ettr": Figure(ettr_value, "fraction", goodput.ETTR_FORMULA + " (u0 = downtime per interruption)",
                             goodput.ETTR_SOURCE, inputs),
              "daly": Figure(daly_value, "fraction", goodput.DALY_FORMULA + " (R = downtime per interruption)",
                             goodput.DALY_SOURCE, inputs)}
    chosen = models[given.goodput_model]
    share = max(chosen.value, 0.0)
    effective = per_million * place.charge_factor / share if share > 0 else math.inf
    figures["goodput"] = chosen
    if math.isfinite(effective):
        figures["effective_cost_per_million_tokens"] = Figure(
            effective, "$/M tokens", "cost_per_million_tokens · spare_charge_factor / goodput",
            f"{chosen.source}; spares: {place.spare_source}",
            {"cost_per_million_tokens": per_million, "spare_charge_factor": place.charge_factor, "goodput": share})
    else:
        figures["effective_cost_per_million_tokens"] = None
        breakdown = (" (ETTR's first-order approximation breaks down here; goodput_model: daly may still price it)"
                     if given.goodput_model == "ettr" else "")
        warnings.append(f"{given.goodput_model} goodput is {chosen.value:.3g}: an interruption every {mtbi:.3g} min, "
                        f"{downtime:.3g} min lost to each and a checkpoint every {interval:.3g} min leave no time to "
                        f"train; the effective cost is unbounded{breakdown}")
    return PricedReliability({
        "goodput": share,
        "goodput_model": given.goodput_model,
        "checkpoint_interval_minutes": interval,
        "spare_charge_factor": place.charge_factor,
        "reliability": {
            "mtbi_gpu_days": given.mtbi_gpu_days.value,
            "job_mtbi_minutes": mtbi,
            "restart_minutes": restart,
            "checkpoint_write_minutes": write,
            "downtime_per_interruption_minutes": downtime,
            "all_spare_units_busy_probability": all_busy if any(f.covered_by in ("spare unit", "repair") for f in failures) else 0.0,
            "young_interval_minutes": young,
            "daly_interval_minutes": daly_optimum,
            "goodput_models": {name: figure.value for name, figure in models.items()},
            "failures": [f.to_dict() for f in failures],
            "sources": {"mtbi_gpu_days": given.mtbi_gpu_days.source, "restart_minutes": given.restart_minutes.source,
                        "checkpoint_write_minutes": given.checkpoint_write_minutes.source},
        },
        "spares": {"training_gpus": place.training_gpus, "domain": scenario.sku.domain.unit,
                   "train_gpus_per_domain": place.train_gpus_per_domain,
                   "spare_gpus_per_domain": place.spare_gpus_per_domain, "domains": place.domains,
                   "spare_units": place.spare_units, "installed_gpus": place.installed_gpus,
                   "charged": place.charged, "spare_charge_factor": place.charge_factor, "source": place.spare_source},
    }, figures, warnings)
