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

import math

ETTR_FORMULA = "E[ETTR] = (1 − (u0 + Δt/2)/M) / (1 + w/Δt)"
ETTR_SOURCE = ("Kokolis et al., Revisiting Reliability in Large-Scale Machine Learning Research Clusters, "
               "HPCA 2025 (arXiv 2410.21680), expected ETTR with MTTF = 1/(N_nodes·r_f)")
DALY_FORMULA = "goodput = τ / (M · e^(R/M) · (e^((τ+δ)/M) − 1))"
DALY_SOURCE = "Daly (2006), A higher order estimate of the optimum checkpoint interval for restart dumps, FGCS 22(3):303–312"


def ettr(mtbi, restart, write, interval):
    """Meta's expected ETTR; all times in the same unit. May fall below 0 where the model breaks down."""
    return (1 - (restart + interval / 2) / mtbi) / (1 + write / interval)


def daly_goodput(mtbi, restart, write, interval):
    """Solve time over expected wall-clock time in Daly's model; all times in the same unit."""
    return interval / (mtbi * math.exp(restart / mtbi) * math.expm1((interval + write) / mtbi))
