"""Goodput: the share of a job's wall-clock time that becomes kept training progress, once
interruptions, restarts, repair waits and checkpoint writes are paid for. Two published models:

Meta's expected effective training time ratio (Kokolis et al., "Revisiting Reliability in
Large-Scale Machine Learning Research Clusters", HPCA 2025, arXiv 2410.21680, section on
quantifying ETTR), with MTTF = 1 / (N_nodes · r_f) written here as the job's MTBI M:
    E[ETTR] ≈ (1 − (u0 + Δt/2) / M) / (1 + w / Δt)
u0: time from an interruption to training again; Δt: checkpoint interval; w: checkpoint write.
First order in 1/M: each interruption costs the restart and half an interval of lost work.

Daly's wall-clock model (Daly 2006, FGCS 22(3), the complete cost function his higher-order
optimum minimizes), for Poisson interruptions:
    T_wall = M · e^(R/M) · (e^((τ+δ)/M) − 1) · T_solve / τ,   goodput = T_solve / T_wall

Where they differ (both agree to first order when M is much longer than τ, R and δ):
- ETTR subtracts the restart and half an interval of lost work from 1, so it reaches 0 when
  u0 + Δt/2 = M and goes negative past it; Daly adds the same losses to the wall clock, so his
  goodput stays positive, and is the higher of the two when restarts and rework dominate.
- Daly also charges interruptions that strike during restarts and checkpoint writes (the
  exponentials); ETTR does not, so it is the higher of the two when writes are long next to M.
"""

from __future__ import annotations

import math

from opsctl.tco.elementwise import Value, cases, exp, expm1, isnan, log, log1p, where

ETTR_FORMULA = "E[ETTR] = (1 − (u0 + Δt/2)/M) / (1 + w/Δt)"
ETTR_SOURCE = ("Kokolis et al., Revisiting Reliability in Large-Scale Machine Learning Research Clusters, "
               "HPCA 2025 (arXiv 2410.21680), expected ETTR with MTTF = 1/(N_nodes·r_f)")
DALY_FORMULA = "goodput = τ / (M · e^(R/M) · (e^((τ+δ)/M) − 1))"
DALY_SOURCE = "Daly (2006), A higher order estimate of the optimum checkpoint interval for restart dumps, FGCS 22(3):303–312"


def ettr(mtbi: Value, restart: Value, write: Value, interval: Value) -> Value:
    """Meta's expected ETTR; all times in the same unit. May fall below 0 (to −inf for times beyond
    the float range) where the model breaks down; never NaN for positive times."""
    loss = restart / mtbi + interval / mtbi / 2  # each term on its own: their sum before dividing may overflow
    value = (1 - loss) / (1 + write / interval)
    return where(isnan(value), -math.inf, value)  # −inf / inf: a loss beyond any bound


def daly_goodput(mtbi: Value, restart: Value, write: Value, interval: Value) -> Value:
    """Solve time over expected wall-clock time in Daly's model; all times in the same unit.

    Computed as the exponential of its logarithm: e^(R/M) and e^((τ+δ)/M) overflow a float once a
    restart or an interval is some 700 MTBIs long (a job that cannot make progress), where the
    goodput itself merely underflows to 0."""
    x = interval / mtbi + write / mtbi
    log_goodput = log(interval) - log(mtbi) - restart / mtbi - _log_expm1(x, interval, write, mtbi)
    return exp(log_goodput)  # log_goodput ≤ 0 (e^x − 1 ≥ x): exp cannot overflow


def _log_expm1(x: Value, interval: Value, write: Value, mtbi: Value) -> Value:
    """log(e^x − 1) for x = (τ+δ)/M without overflow (x large) or a log of an underflowed x (x tiny)."""
    return cases(((x > 1, _log_expm1_large), (x > 1e-5, _log_expm1_middle)), _log_expm1_tiny, x, interval, write, mtbi)


def _log_expm1_large(x: Value, interval: Value, write: Value, mtbi: Value) -> Value:
    return x + log1p(-exp(-x))


def _log_expm1_middle(x: Value, interval: Value, write: Value, mtbi: Value) -> Value:
    return log(expm1(x))


def _log_expm1_tiny(x: Value, interval: Value, write: Value, mtbi: Value) -> Value:
    # log(e^x − 1) = log x + x/2 + x²/24 + O(x⁴); log x from its parts, as x itself may underflow to 0
    log_x = log(interval) + log1p(write / interval) - log(mtbi)
    return log_x + x / 2 + x * x / 24
