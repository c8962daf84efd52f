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
from opsctl.tco.elementwise import Value, isfinite, maximum, minimum, where
from opsctl.tco.gpu_hour_cost import gpu_hour_cost
from opsctl.tco.throughput import throughput

if TYPE_CHECKING:
    from opsctl.mttr import MttrModel
    from opsctl.tco.scenario import Reliability, Scenario

COST_SOURCE = "docs/sources.md, Ownership cost: cost per M tokens = gpu_hour_cost / (tokens_per_second_per_gpu × 3600) × 1e6"


# The figures whose price needs the job to make progress: with a reliability block and no progress
# (or a price beyond any number) they are not priced (null), rather than priced at infinity.
NEEDS_PROGRESS = ("effective_cost_per_million_tokens", "effective_total_cost", "effective_joules_per_token",
                  "training_days")
PRICED_FIGURES = ("gpu_hour_cost", "tokens_per_second_per_gpu", "mfu", "cost_per_million_tokens", "joules_per_token",
                  "total_cost", "household_years", "effective_cost_per_million_tokens", "effective_total_cost",
                  "effective_joules_per_token", "training_days")  # in the order the document lists them


@dataclass(frozen=True)
class PricedReliability:
    """What a reliability block adds to the priced scenario: its figures and the numbers behind them."""

    given: Reliability
    domain: str  # the NVLink domain's unit: rack, server
    place: spares.Layout
    mtbi: Value  # the job's, in minutes
    failures: list[spares.Failure]
    all_busy: Value
    downtime: Value
    write: Value
    interval: Value
    models: dict[str, Figure]  # goodput by each model
    share: Value  # the goodput priced: the chosen model's, at least 0
    effective: Value  # $/M tokens; +inf without progress

    def document(self) -> dict[str, Any]:
        """The keys it adds to the priced document (of one scenario: numbers, not draws)."""
        given, place = self.given, self.place
        write = self.write
        return {
            "goodput": self.share,
            "goodput_model": given.goodput_model,
            "checkpoint_interval_minutes": self.interval,
            "spare_charge_factor": place.charge_factor,
            "reliability": {
                "mtbi_gpu_days": given.mtbi_gpu_days.value,
                "job_mtbi_minutes": self.mtbi,
                "restart_minutes": given.restart_minutes.value,
                "checkpoint_write_minutes": write,
                "downtime_per_interruption_minutes": self.downtime,
                "all_spare_units_busy_probability": self.all_busy if any(f.covered_by in ("spare unit", "repair")
                                                                         for f in self.failures) else 0.0,
                "young_interval_minutes": checkpointing.young_interval(write, self.mtbi) if write > 0 else None,
                "daly_interval_minutes": checkpointing.daly_interval(write, self.mtbi) if write > 0 else None,
                "goodput_models": {name: figure.value for name, figure in self.models.items()},
                "failures": [f.to_dict() for f in self.failures],
                "sources": {"mtbi_gpu_days": given.mtbi_gpu_days.source, "restart_minutes": given.restart_minutes.source,
                            "checkpoint_write_minutes": given.checkpoint_write_minutes.source},
            },
            "spares": {"training_gpus": place.training_gpus, "domain": self.domain,
                       "train_gpus_per_domain": place.train_gpus_per_domain,
                       "spare_gpus_per_domain": place.spare_gpus_per_domain, "domains": place.domains,
                       "spare_units": place.spare_units, "installed_gpus": place.installed_gpus,
                       "charged": place.charged, "spare_charge_factor": place.charge_factor, "source": place.spare_source},
        }

    def warnings(self) -> list[str]:
        """Why the effective price is unbounded, if it is (of one scenario)."""
        if math.isfinite(self.effective):
            return []
        model = self.given.goodput_model
        breakdown = (" (ETTR's first-order approximation breaks down here; goodput_model: daly may still price it)"
                     if model == "ettr" else "")
        return [f"{model} goodput is {self.models[model].value:.3g}: an interruption every {self.mtbi:.3g} min, "
                f"{self.downtime:.3g} min lost to each and a checkpoint every {self.interval:.3g} min leave no time to "
                f"train; the effective cost is unbounded{breakdown}"]


@dataclass(frozen=True)
class Priced:
    """Every figure of a priced scenario (None: not priced — no tokens, no model shape), each value a
    number, or an array over the draws where the scenario's uncertain inputs are draws."""

    figures: dict[str, Figure | None]
    reliability: PricedReliability | None

    @property
    def goodput(self) -> Value:
        return 1.0 if self.reliability is None else self.reliability.share

    @property
    def progress(self) -> Value:
        """Whether the NEEDS_PROGRESS figures are priced: always without a reliability block, else
        where the effective price is a number."""
        return True if self.reliability is None else isfinite(self.reliability.effective)


def priced(scenario: Scenario, mttr_model: MttrModel | None = None) -> Priced:
    """The figures of a loaded Scenario, by the formulas `price` documents: the scenario's numbers in,
    numbers out — or arrays of draws in (opsctl/tco/monte_carlo.py) and every draw priced at once."""
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
    reliability = None
    if scenario.reliability is None:
        figures["effective_cost_per_million_tokens"] = Figure(
            per_million.value, "$/M tokens", "cost_per_million_tokens (no reliability block: no interruptions priced)",
            COST_SOURCE, {"cost_per_million_tokens": per_million.value})
    else:
        reliability = _reliability(scenario, scenario.reliability, mttr_model or load_mttr_model(), per_million.value)
        figures.update(_reliability_figures(reliability, per_million.value))
    effective = figures["effective_cost_per_million_tokens"].value  # type: ignore[union-attr]  # set above
    share = 1.0 if reliability is None else reliability.share
    if tokens is not None:
        figures["effective_total_cost"] = Figure(tokens / 1e6 * effective, "$", "tokens / 1e6 · effective_cost_per_million_tokens",
                                                 tokens_source, {"tokens": tokens})
        figures["training_days"] = Figure(where(share > 0, _days, math.inf, tokens, tps.value, scenario.gpus, share), "days",
                                          "tokens / (tokens_per_second_per_gpu · gpus · goodput) / 86,400 s",
                                          tokens_source,
                                          {"tokens": tokens, "tokens_per_second_per_gpu": tps.value, "gpus": scenario.gpus,
                                           "goodput": share})
    figures["effective_joules_per_token"] = Figure(
        where(share > 0, _per_share, math.inf, joules.value, share), "J/token",
        "joules_per_token / goodput (the job's GPUs draw power through lost work, "
        "restarts and waits: an upper bound)", joules.source, {"joules_per_token": joules.value, "goodput": share})
    return Priced(figures, reliability)


def _days(tokens: Value, tps: Value, gpus: Value, share: Value) -> Value:
    return tokens / (tps * gpus * share) / 86400


def _per_share(value: Value, share: Value) -> Value:
    return value / share


def price(scenario: Scenario, mttr_model: MttrModel | None = None) -> dict[str, Any]:
    """The output document of `opsctl tco run` for a loaded Scenario."""
    result = priced(scenario, mttr_model)
    figures = dict(result.figures)
    if not result.progress:
        figures.update(dict.fromkeys(NEEDS_PROGRESS))
    document: dict[str, Any] = {
        "scenario": scenario.source, "name": scenario.name, "description": scenario.description,
        "gpu": scenario.sku.name, "gpus": scenario.gpus, "precision": scenario.precision,
        "tokens": scenario.tokens.value if scenario.tokens else None,
    }
    warnings: list[str] = []
    if result.reliability is None:
        document.update(goodput=1.0, goodput_model=None, checkpoint_interval_minutes=None, spare_charge_factor=1.0,
                        reliability=None, spares=None)
    else:
        document.update(result.reliability.document())
        warnings += result.reliability.warnings()
    for key in PRICED_FIGURES:
        figure = figures.get(key)
        document[key] = figure.value if figure else None
    # A throughput so near zero that no cost or energy per token is a number (5e-324 tokens/s)
    # prices nothing: the figures are null, and this says why rather than leaving them blank.
    unpriced = [key for key in ("cost_per_million_tokens", "joules_per_token")
                if not math.isfinite(figures[key].value)]  # type: ignore[union-attr]  # both set above
    if unpriced:
        tps = figures["tokens_per_second_per_gpu"].value  # type: ignore[union-attr]  # always set
        warnings.insert(0, f"tokens_per_second_per_gpu {tps:g} is too small to price: {' and '.join(unpriced)} "
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


def _reliability(scenario: Scenario, given: Reliability, mttr_model: MttrModel, per_million: Value) -> PricedReliability:
    """The goodput, checkpoint interval and effective price of a scenario with a reliability block."""
    place = spares.layout(scenario, mttr_model)
    mtbi = given.mtbi_gpu_days.value * (spares.MINUTES_PER_DAY / place.training_gpus)  # the job's, in minutes
    # kept inside the float range (MTBIs beyond it price as no interruptions, or as no progress)
    mtbi = minimum(maximum(mtbi, sys.float_info.min), sys.float_info.max)
    failures = [spares.resolve(c, scenario, mttr_model) for c in given.failures]
    failures, all_busy = spares.cover(failures, place, 60.0 / mtbi)
    restart = given.restart_minutes.value
    downtime = restart + sum(f.share * f.wait_minutes for f in failures)
    write = given.checkpoint_write_minutes.value
    if given.optimal_interval:
        interval = checkpointing.daly_interval(write, mtbi)  # the scenario reader refuses the optimal interval with free writes
    else:
        interval = given.checkpoint_interval_minutes.value
    inputs = {"job_mtbi_minutes": mtbi, "downtime_per_interruption_minutes": downtime,
              "checkpoint_write_minutes": write, "checkpoint_interval_minutes": interval}
    models = {"ettr": Figure(goodput.ettr(mtbi, downtime, write, interval), "fraction",
                             goodput.ETTR_FORMULA + " (u0 = downtime per interruption)", goodput.ETTR_SOURCE, inputs),
              "daly": Figure(goodput.daly_goodput(mtbi, downtime, write, interval), "fraction",
                             goodput.DALY_FORMULA + " (R = downtime per interruption)", goodput.DALY_SOURCE, inputs)}
    share = maximum(models[given.goodput_model].value, 0.0)
    effective = where(share > 0, _effective, math.inf, per_million, place.charge_factor, share)
    return PricedReliability(given, scenario.sku.domain.unit, place, mtbi, failures, all_busy, downtime, write, interval, models, share, effective)


def _effective(per_million: Value, charge_factor: Value, share: Value) -> Value:
    return per_million * charge_factor / share


def _reliability_figures(priced_: PricedReliability, per_million: Value) -> dict[str, Figure | None]:
    """The reliability block's figures, in the order the derivations list them."""
    given, chosen = priced_.given, priced_.models[priced_.given.goodput_model]
    if given.optimal_interval:
        interval = Figure(priced_.interval, "minutes", "Daly's higher-order optimum with δ = checkpoint_write_minutes, M = job MTBI",
                          checkpointing.DALY_SOURCE, {"checkpoint_write_minutes": priced_.write, "job_mtbi_minutes": priced_.mtbi})
    else:
        interval = Figure(priced_.interval, "minutes", "given", given.checkpoint_interval_minutes.source, {})
    return {"checkpoint_interval_minutes": interval, "goodput": chosen,
            "effective_cost_per_million_tokens": Figure(
                priced_.effective, "$/M tokens", "cost_per_million_tokens · spare_charge_factor / goodput",
                f"{chosen.source}; spares: {priced_.place.spare_source}",
                {"cost_per_million_tokens": per_million, "spare_charge_factor": priced_.place.charge_factor,
                 "goodput": priced_.share})}
