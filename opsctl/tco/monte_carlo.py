"""Propagating a scenario's ranges to every figure: Monte Carlo over the pure pricing model.

Each draw prices the scenario with every uncertain input at one drawn value, by the same formulas
as the point figures (pricing.priced), all draws at once: each uncertain input is a numpy array of
its draws through the formulas (opsctl/tco/elementwise.py), the scenario checked once over them,
and each draw comes out to the last bit as `price` prices the scenario at that draw. Each input draws from its own numpy
Generator, seeded by (--seed, the input's name): the draws are reproducible, and two scenarios
priced with the same seed are paired — draw i puts a key they share at the same quantile in both
(common random numbers), so `compare` reads the share of draws in which one is cheaper.

A draw in which the job cannot make progress (goodput 0) has an unbounded effective price; it
counts as +infinity in the quantiles (an interval end there is null in JSON) and in `compare`.
"""

from __future__ import annotations

import math
import zlib
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.tco.pricing import NEEDS_PROGRESS, Priced, price, priced

if TYPE_CHECKING:
    from typing import TypeAlias

    import numpy
    from numpy.typing import NDArray

    from opsctl.mttr import MttrModel
    from opsctl.tco.uncertain import UncertainScenario

    Draws: TypeAlias = NDArray[numpy.float64]  # one figure (or input) over the draws
    Table: TypeAlias = dict[str, Draws]  # figure -> its values over the draws

FIGURES = ("gpu_hour_cost", "tokens_per_second_per_gpu", "mfu", "cost_per_million_tokens", "joules_per_token",
           "total_cost", "household_years", "goodput", "checkpoint_interval_minutes", "spare_charge_factor",
           "effective_cost_per_million_tokens", "effective_total_cost", "effective_joules_per_token", "training_days")
DEFAULT_DRAWS = 2000  # the 90% interval's ends to within about a percentile; `tco run` in about a second
MAX_DRAWS = 100_000
DEFAULT_LEVEL = 0.9
METHOD = ("Monte Carlo over the scenario's ranges: each draw prices the model at one value of every uncertain input; "
          "median and the central interval at the level are quantiles of the draws; inputs seeded by (seed, name), "
          "so scenarios priced with one seed are paired draw by draw")


def check_options(draws: int, level: float, seed: int) -> None:
    if not 1 <= draws <= MAX_DRAWS:
        raise InputError(f"--draws {draws}: must be from 1 to {MAX_DRAWS:,}")
    if not (math.isfinite(level) and 0 < level < 1):
        raise InputError(f"--level {level}: must be a number between 0 and 1 (exclusive), e.g. 0.9")
    if seed < 0:
        raise InputError(f"--seed {seed}: must be 0 or more")


def draw_inputs(uncertain: UncertainScenario, draws: int, seed: int) -> Table:
    """{input name: numpy array of its `draws` values}."""
    import numpy

    values: Table = {}
    for item in uncertain.inputs:
        generator = numpy.random.default_rng([seed, zlib.crc32(item.name.encode())])
        drawn = item.distribution.draw(generator, draws)
        values[item.name] = numpy.rint(drawn) if item.whole else drawn
    return values


def figures_over_draws(uncertain: UncertainScenario, mttr_model: MttrModel | None, draws: int, seed: int) -> Table:
    """{figure: numpy array over the draws}: NaN where the figure does not exist (no tokens, no
    model shape), +inf where the job made no progress in that draw. Every draw at once: the
    scenario is checked once over the draws and priced by `pricing.priced` with arrays for its
    uncertain inputs, each draw the number `price` gives for the scenario at that draw."""
    import numpy

    with numpy.errstate(all="ignore"):  # as Python floats do: overflow to ±inf, silently
        result = priced(uncertain.scenario_over(draw_inputs(uncertain, draws, seed)), mttr_model)
        stalled = numpy.broadcast_to(result.goodput == 0, draws)
        progress = numpy.broadcast_to(result.progress, draws)
        table = {key: numpy.full(draws, math.nan) for key in FIGURES}
        for key, value in _document_values(result).items():
            value = numpy.broadcast_to(numpy.asarray(value, dtype=float), draws)
            if key in NEEDS_PROGRESS:  # not priced without progress (null in the document): unbounded where stalled
                table[key] = numpy.where(numpy.isfinite(value) & progress, value, numpy.where(stalled, math.inf, math.nan))
            else:
                table[key] = numpy.where(numpy.isfinite(value), value, math.nan)
    return table


def _document_values(result: Priced) -> dict[str, Any]:
    """The values the priced document gives each of FIGURES (those it has), as numbers or draws."""
    values = {key: figure.value for key, figure in result.figures.items() if figure is not None and key in FIGURES}
    reliability = result.reliability
    values.update(goodput=result.goodput, spare_charge_factor=1.0 if reliability is None else reliability.place.charge_factor)
    if reliability is not None:
        values["checkpoint_interval_minutes"] = reliability.interval
    return values


def summary(values: Draws, level: float) -> tuple[float | None, list[float | None] | None]:
    """(median, [low, high]) of one figure's draws; None where it has none, or at +infinity."""
    import numpy

    present = values[~numpy.isnan(values)]
    if present.size == 0:
        return None, None
    tails = (1 - level) / 2
    low, median, high = numpy.quantile(present, [tails, 0.5, 1 - tails], method="inverted_cdf")
    return _number(median), [_number(low), _number(high)]


def with_intervals(document: dict[str, Any], uncertain: UncertainScenario, table: Table, level: float, draws: int,
                   seed: int) -> dict[str, Any]:
    """The point document with `<figure>_median` and `<figure>_interval` beside each figure, and
    an `uncertainty` block saying what varied and how."""
    import numpy

    result = dict(document)
    for key in FIGURES:
        if key in result:
            result[f"{key}_median"], result[f"{key}_interval"] = summary(table[key], level)
    stalled = int(numpy.isinf(table["effective_cost_per_million_tokens"]).sum())
    result["uncertainty"] = {
        "draws": draws, "seed": seed, "level": level, "method": METHOD,
        "draws_without_progress": stalled,
        "inputs": {item.name: item.distribution.describe() for item in uncertain.inputs},
    }
    return result


def price_with_uncertainty(uncertain: UncertainScenario, mttr_model: MttrModel | None, draws: int, seed: int,
                           level: float) -> tuple[dict[str, Any], Table | None]:
    """(document, figures over the draws or None). With no range in the scenario it is exactly
    the point document `pricing.price` gives, and nothing is drawn."""
    document = price(uncertain.point, mttr_model)
    if not uncertain.inputs:
        return document, None
    table = figures_over_draws(uncertain, mttr_model, draws, seed)
    return with_intervals(document, uncertain, table, level, draws, seed), table


def paired_edge(baseline: Draws, other: Draws, level: float) -> dict[str, Any]:
    """How `other` compares with `baseline` over paired draws of their effective $/M tokens:
    the edge (1 − other / baseline) as median and interval, and the share of draws in which
    `other` is cheaper."""
    import numpy

    with numpy.errstate(invalid="ignore", divide="ignore"):
        edge = 1 - other / baseline
    edge[numpy.isinf(baseline) & numpy.isfinite(other)] = 1.0  # the baseline cannot train, the other can
    median, interval = summary(edge, level)
    return {"edge_median": median, "edge_interval": interval,
            "cheaper_share": float(numpy.mean(other < baseline)), "draws": int(other.size)}


def _number(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None
