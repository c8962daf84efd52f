"""The optimum checkpoint interval: the compute time between checkpoints that balances the time
spent writing checkpoints against the work redone after an interruption.

Young (1974), "A first order approximation to the optimum checkpoint interval", CACM 17(9):
    τ = √(2·δ·M)
Daly (2006), "A higher order estimate of the optimum checkpoint interval for restart dumps",
FGCS 22(3):303–312, section 4 (the perturbation solution; Figs. 3–5 give its worked cases):
    τ = √(2δM)·[1 + ⅓·√(δ/(2M)) + (1/9)·(δ/(2M))] − δ   for δ < 2M,   τ = M otherwise
δ: time to write a checkpoint; M: mean time between interruptions of the job (same units).
"""

from __future__ import annotations

import math

from opsctl.tco.elementwise import Value, maximum, sqrt, where

DALY_SOURCE = "Daly (2006), FGCS 22(3):303–312, higher-order optimum: τ_opt = √(2δM)[1 + ⅓√(δ/2M) + ⅑(δ/2M)] − δ for δ < 2M, else M"


def young_interval(write: Value, mtbi: Value) -> Value:
    return math.sqrt(2) * sqrt(write) * sqrt(mtbi)  # not √(2δM): the product may overflow


def daly_interval(write: Value, mtbi: Value) -> Value:
    return where(write / 2 >= mtbi, mtbi, _daly_optimum, write, mtbi)  # not write ≥ 2·mtbi: 2·mtbi may overflow


def _daly_optimum(write: Value, mtbi: Value) -> Value:
    ratio = write / mtbi / 2
    interval = young_interval(write, mtbi) * (1 + sqrt(ratio) / 3 + ratio / 9) - write
    # M at the float's edges: the same formula in units of M, 0 < τ/M < 1
    interval = where((0 < interval) & (interval < math.inf), interval, _in_units_of_mtbi, write, mtbi)
    return maximum(interval, math.ulp(0.0))  # a subnormal M may round τ to 0: the least positive time instead


def _in_units_of_mtbi(write: Value, mtbi: Value) -> Value:
    q = write / mtbi
    return mtbi * (sqrt(2 * q) * (1 + sqrt(q / 2) / 3 + q / 18) - q)
