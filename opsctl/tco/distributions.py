"""What a scenario may write where a number goes: the number, a range `{low, high}`, or a named
distribution with its parameters (docs/tco.md, Ranges and distributions).

- `{low, high}` or `{dist: uniform, low, high}`: every value in between equally likely.
- `{dist: triangular, low, mode, high}`: most likely at `mode`.
- `{dist: lognormal, low, high}`: a positive quantity whose central `level` interval (default
  0.9) is [low, high] — for a figure known to its order of magnitude.
- `{dist: poisson_mtbi, failures, gpu_days, prior}`: an MTBI measured as `failures` over `gpu_days`
  of exposure: exposure / λ, with λ drawn from the gamma posterior of a Poisson count,
  Gamma(failures + prior, 1), prior ½ by default (Jeffreys'). `failures` may be 0: no failure
  over the exposure is evidence too (the ledger's measure, `--from-ledger`, which gives each of
  its k part kinds prior ½ / k, so that their total rate has Jeffreys' posterior).
- `{dist: mean_of, samples: [...]}`: the mean of measured values, drawn by the Bayesian bootstrap
  (Rubin 1981: Dirichlet(1, …, 1) weights on the samples).
- `{dist: lognormal_mean, samples: [...], prior_sigma, prior_weight}`: the mean of a lognormal
  population from a few measured values (the ledger's times to restore): the normal model on
  their logarithms with a flat prior on μ and a scaled-inverse-χ² prior on σ² worth `prior_weight`
  observations at `prior_sigma` (default 0.42 — a 1–4 h repair range read as a 90% range — and
  2), so one or two repairs give a wide interval rather than a point (Gelman et al., Bayesian Data
  Analysis, 3rd ed., §3.3, the semi-conjugate normal model); each draw is e^(μ + σ²/2).
Any of them may carry `value`: the point figure priced as today (default: the median).

Draws come from a numpy Generator the caller seeds; numpy is imported only when drawing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.input_checks import shown as _short

if TYPE_CHECKING:
    from types import ModuleType

    import numpy
    from numpy.typing import NDArray

KINDS = ("uniform", "triangular", "lognormal", "poisson_mtbi", "mean_of", "lognormal_mean")
PARAMETERS = {"uniform": ("low", "high"), "triangular": ("low", "mode", "high"), "lognormal": ("low", "high", "level"),
              "poisson_mtbi": ("failures", "gpu_days", "prior"), "mean_of": ("samples",),
              "lognormal_mean": ("samples", "prior_sigma", "prior_weight")}
JEFFREYS = 0.5  # the prior shape of a Poisson rate under Jeffreys' prior
# The spread of repair times assumed before any is measured: a published repair range of 1–4 h
# (compute tray, switch tray: docs/sources.md, Reliability) read as a central 90% range of a lognormal.
PRIOR_SIGMA = 0.42
PRIOR_WEIGHT = 2.0  # ... worth two repairs
MAX_SIGMA = 1.5  # a drawn σ beyond it (a 95th percentile 12× the median) is capped: no published repair range is wider
MIN_HOURS = 1 / 60  # a restore logged as 0 h is taken as one minute (its logarithm)
OPTIONAL = {"level": 0.9, "prior": JEFFREYS, "prior_sigma": PRIOR_SIGMA, "prior_weight": PRIOR_WEIGHT}
MAX_SAMPLES = 100_000  # a mean_of's measured values: a fleet's repairs, not a data set
_EMPIRICAL_DRAWS = 20_000  # quantiles of the distributions with no closed form, from a fixed-seed sample


def is_distribution(value: object) -> bool:
    return isinstance(value, dict)


@dataclass(frozen=True)
class Distribution:
    kind: str
    parameters: dict[str, Any]  # name -> number; "samples" -> list of numbers
    value: float | None  # the point figure; None: the median

    @property
    def point(self) -> float:
        return self.median() if self.value is None else self.value

    def describe(self) -> dict[str, Any]:
        shown = {k: (f"{len(v)} samples" if k == "samples" else v) for k, v in self.parameters.items()}
        return {"dist": self.kind, **shown, "point": self.point}

    def draw(self, generator: numpy.random.Generator, count: int) -> NDArray[numpy.float64]:
        """`count` draws as a numpy array."""
        import numpy

        p = self.parameters
        if self.kind == "uniform":
            return generator.uniform(p["low"], p["high"], count) if p["high"] > p["low"] else numpy.full(count, float(p["low"]))
        if self.kind == "triangular":
            if p["high"] == p["low"]:
                return numpy.full(count, float(p["low"]))
            return generator.triangular(p["low"], p["mode"], p["high"], count)
        if self.kind == "lognormal":
            mu, sigma = self._log_normal()
            return numpy.exp(mu + sigma * generator.standard_normal(count))
        if self.kind == "poisson_mtbi":
            # a rate below 1e-200 is no failure in any lifetime; the floor keeps exposure / λ finite
            return p["gpu_days"] / numpy.maximum(generator.gamma(p["failures"] + p["prior"], 1.0, count), 1e-200)
        samples = numpy.asarray(p["samples"], dtype=float)
        if self.kind == "lognormal_mean":
            return _lognormal_means(numpy, generator, samples, p["prior_sigma"], p["prior_weight"], count)
        return generator.dirichlet(numpy.ones(len(samples)), count) @ samples

    def quantile(self, q: float) -> float:
        p = self.parameters
        if self.kind == "uniform":
            return p["low"] + (p["high"] - p["low"]) * q
        if self.kind == "triangular":
            low, mode, high = p["low"], p["mode"], p["high"]
            if high == low:
                return low
            split = (mode - low) / (high - low)
            if q <= split:
                return low + math.sqrt(q * (high - low) * (mode - low))
            return high - math.sqrt((1 - q) * (high - low) * (high - mode))
        if self.kind == "lognormal":
            mu, sigma = self._log_normal()
            return math.exp(mu + sigma * NormalDist().inv_cdf(min(max(q, 1e-12), 1 - 1e-12)))
        import numpy

        sample = self.draw(numpy.random.default_rng(0), _EMPIRICAL_DRAWS)
        return float(numpy.quantile(sample, q))

    def median(self) -> float:
        return self.quantile(0.5)

    def ends(self, level: float) -> tuple[float, float]:
        """The input's low and high for the tornado: the stated ends of a bounded range; the
        central `level` interval of the others."""
        if self.kind in ("uniform", "triangular"):
            return self.parameters["low"], self.parameters["high"]
        if self.kind == "lognormal" and self.parameters["level"] == level:
            return self.parameters["low"], self.parameters["high"]
        return self.quantile((1 - level) / 2), self.quantile((1 + level) / 2)

    def _log_normal(self) -> tuple[float, float]:
        p = self.parameters
        z = NormalDist().inv_cdf((1 + p["level"]) / 2)
        mu = (math.log(p["low"]) + math.log(p["high"])) / 2
        return mu, (math.log(p["high"]) - math.log(p["low"])) / (2 * z)


def _lognormal_means(numpy: ModuleType, generator: numpy.random.Generator, samples: NDArray[numpy.float64],
                     prior_sigma: float, prior_weight: float, count: int) -> NDArray[numpy.float64]:
    """Draws of e^(μ + σ²/2) from the posterior of a lognormal's (μ, σ²) given `samples`."""
    logs = numpy.log(numpy.maximum(samples, MIN_HOURS))
    n = logs.size
    spread = float(((logs - logs.mean()) ** 2).sum())
    freedom = prior_weight + n - 1
    scale = (prior_weight * prior_sigma ** 2 + spread) / freedom
    variance = numpy.minimum(freedom * scale / generator.chisquare(freedom, count), MAX_SIGMA ** 2)
    centre = logs.mean() + numpy.sqrt(variance / n) * generator.standard_normal(count)
    return numpy.exp(centre + variance / 2)


def parse(raw: dict[str, Any], where: str) -> Distribution:
    """A Distribution from a scenario's mapping; `where` ('file: key') names it in every error."""
    kind = raw.get("dist", "uniform")
    if not isinstance(kind, str) or kind not in KINDS:
        raise InputError(f"{where}: unknown distribution {_short(kind)} (known: {', '.join(KINDS)}; or a number, "
                         f"or {{low, high}})")
    allowed = {"dist", "value", *PARAMETERS[kind]}
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        raise InputError(f"{where}: unknown key(s) in a {kind} range: {', '.join(unknown)} "
                         f"(known: {', '.join(PARAMETERS[kind])}, value)")
    missing = [k for k in PARAMETERS[kind] if k not in raw and k not in OPTIONAL]
    if missing:
        raise InputError(f"{where}: a {kind} range needs {', '.join(PARAMETERS[kind])}; {', '.join(missing)} missing")
    parameters: dict[str, Any] = {k: _finite(raw[k], f"{where}.{k}") for k in PARAMETERS[kind] if k in raw and k != "samples"}
    if "samples" in PARAMETERS[kind]:
        parameters["samples"] = _samples(raw["samples"], where)
    value = _finite(raw["value"], f"{where}.value") if raw.get("value") is not None else None
    _check(kind, parameters, value, where)
    return Distribution(kind, parameters, value)


def _check(kind: str, p: dict[str, Any], value: float | None, where: str) -> None:
    if kind in ("uniform", "triangular", "lognormal") and p["low"] > p["high"]:
        raise InputError(f"{where}: low {p['low']:g} is above high {p['high']:g}")
    if kind == "triangular" and not p["low"] <= p["mode"] <= p["high"]:
        raise InputError(f"{where}: mode {p['mode']:g} must lie between low {p['low']:g} and high {p['high']:g}")
    if kind == "lognormal":
        p.setdefault("level", 0.9)
        if p["low"] <= 0:
            raise InputError(f"{where}: a lognormal range needs low > 0, got {p['low']:g}")
        if not 0 < p["level"] < 1:
            raise InputError(f"{where}.level must be between 0 and 1 (exclusive), got {p['level']:g}")
        if p["low"] == p["high"]:
            raise InputError(f"{where}: a lognormal range needs low < high (a single value is a number)")
    if kind == "poisson_mtbi":
        if p["failures"] < 0 or p["failures"] != int(p["failures"]):
            raise InputError(f"{where}.failures must be a whole number >= 0, got {p['failures']:g}")
        if p["gpu_days"] <= 0:
            raise InputError(f"{where}.gpu_days must be > 0, got {p['gpu_days']:g}")
        p.setdefault("prior", JEFFREYS)
        if not 0 < p["prior"] <= 1:
            raise InputError(f"{where}.prior must be above 0 and at most 1, got {p['prior']:g}")
    if kind == "lognormal_mean":
        p.setdefault("prior_sigma", PRIOR_SIGMA)
        p.setdefault("prior_weight", PRIOR_WEIGHT)
        if not 0 < p["prior_sigma"] <= MAX_SIGMA:
            raise InputError(f"{where}.prior_sigma must be above 0 and at most {MAX_SIGMA:g}, got {p['prior_sigma']:g}")
        if not 1 <= p["prior_weight"] <= MAX_SAMPLES:
            raise InputError(f"{where}.prior_weight must be from 1 to {MAX_SAMPLES:,}, got {p['prior_weight']:g}")
    if value is not None and kind in ("uniform", "triangular") and not p["low"] <= value <= p["high"]:
        raise InputError(f"{where}.value {value:g} lies outside [{p['low']:g}, {p['high']:g}]")


def _finite(value: object, where: str) -> float:
    from opsctl.tco.scenario import as_number  # the scenario's reading of a number (300e9, no NaN, no bool)

    number = as_number(value)
    if number is None:
        raise InputError(f"{where} must be a finite number, got {_short(value)}")
    return float(number)


def _samples(raw: object, where: str) -> list[float]:
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{where}.samples must be a list of numbers")
    if len(raw) > MAX_SAMPLES:
        raise InputError(f"{where}.samples: {len(raw):,} values, at most {MAX_SAMPLES:,}")
    values = [_finite(v, f"{where}.samples[{i}]") for i, v in enumerate(raw)]
    if min(values) < 0:
        raise InputError(f"{where}.samples must be >= 0, got {min(values):g}")
    return values
