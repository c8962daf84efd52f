"""What the pricing formulas need beyond + − × ÷ and comparisons, for one number or for a numpy array
of Monte Carlo draws alike: the formulas of opsctl/tco/ are written once, `pricing.price` gives them
the scenario's numbers, the Monte Carlo (monte_carlo.py) an array of draws for each uncertain input.

Each draw comes out to the last bit as pricing it alone does: + − × ÷ and √ are correctly rounded
in numpy as in Python, but numpy's own exp, log and pow (SIMD kernels) differ from the C library's
in the last bit for some inputs, so on draws `exp`, `log`, `log1p`, `expm1`, `lgamma` and `power`
apply the math module's function to each draw (about 0.2 µs a draw; a few per draw). `where`
computes each side only for the draws that take it, so a formula never sees a value its guard
keeps out — a log of 0, a division by 0 — as with one number. numpy is imported only for draws:
pricing one scenario does not load it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

Value: TypeAlias = Any  # a number, or a numpy array of draws (float64)


def is_draws(value: Value) -> bool:
    """Whether `value` is an array of draws (a numpy float64 scalar is a float, so a number)."""
    return not isinstance(value, (int, float))


def _each(function: Callable[..., float], *values: Value) -> Value:
    """`function` of the math module applied draw by draw (numbers broadcast against the draws)."""
    import numpy

    arrays = numpy.broadcast_arrays(*(numpy.asarray(value, dtype=float) for value in values))
    return numpy.fromiter(map(function, *(array.tolist() for array in arrays)), float, arrays[0].size)


def _elementwise(function: Callable[..., float]) -> Callable[..., Value]:
    @functools.wraps(function)
    def apply(*values: Value) -> Value:
        return _each(function, *values) if any(is_draws(value) for value in values) else function(*values)
    return apply


exp = _elementwise(math.exp)
log = _elementwise(math.log)
log1p = _elementwise(math.log1p)
expm1 = _elementwise(math.expm1)
lgamma = _elementwise(math.lgamma)
power = _elementwise(math.pow)  # not `**`: numpy's own pow differs from the C library's in the last bit


def sqrt(value: Value) -> Value:
    """√, correctly rounded in numpy as in math."""
    if is_draws(value):
        import numpy

        return numpy.sqrt(value)
    return math.sqrt(value)


def _numpy_or(scalar: Callable[..., Any], name: str) -> Callable[..., Value]:
    def apply(*values: Value) -> Value:
        if any(is_draws(value) for value in values):
            import numpy

            return getattr(numpy, name)(*values)
        return scalar(*values)
    apply.__name__ = name
    return apply


isfinite = _numpy_or(math.isfinite, "isfinite")
isinf = _numpy_or(math.isinf, "isinf")
isnan = _numpy_or(math.isnan, "isnan")
ceil = _numpy_or(math.ceil, "ceil")
minimum = _numpy_or(min, "minimum")
maximum = _numpy_or(max, "maximum")


def largest(values: Sequence[Value]) -> Value:
    """The largest of several numbers, or of several arrays draw by draw."""
    return functools.reduce(maximum, values)


def greatest(value: Value) -> Value:
    """A number itself; of draws, the greatest."""
    return value.max() if is_draws(value) else value


def fsum(values: Sequence[Value]) -> Value:
    """math.fsum of several numbers, or of several arrays draw by draw."""
    if any(is_draws(value) for value in values):
        return _each(lambda *row: math.fsum(row), *values)
    return math.fsum(values)


def anywhere(condition: Value) -> bool:
    """Whether the condition holds (for draws: in any draw)."""
    return bool(condition.any()) if is_draws(condition) else bool(condition)


def where(condition: Value, then: Value, otherwise: Value, *args: Value) -> Value:
    """`then` where the condition holds, `otherwise` where not: `cases(((condition, then),), otherwise, *args)`."""
    return cases(((condition, then),), otherwise, *args)


def cases(branches: Sequence[tuple[Value, Value]], otherwise: Value, *args: Value) -> Value:
    """As `if c1: s1 elif c2: s2 … else: otherwise`: each side is a value (a number or draws) or a function of `args`,
    called — on draws — with just the draws that take it (the args broadcast against the
    conditions), so no side sees a value its condition keeps from it."""
    if not any(is_draws(condition) for condition, _ in branches):
        chosen = next((side for condition, side in branches if condition), otherwise)
        return chosen(*args) if callable(chosen) else chosen
    import numpy

    conditions = [condition for condition, _ in branches]
    shape = numpy.broadcast_shapes(*(numpy.shape(value) for value in (*conditions, *args)))
    arrays = [numpy.broadcast_to(numpy.asarray(arg, dtype=float), shape) for arg in args]
    result = numpy.empty(shape)
    left = numpy.ones(shape, dtype=bool)  # the draws no condition so far has taken
    for condition, side in (*branches, (True, otherwise)):
        mask = left & condition
        left &= ~mask
        if mask.any():
            if callable(side):
                result[mask] = side(*(array[mask] for array in arrays))
            else:
                result[mask] = numpy.broadcast_to(side, shape)[mask]
    return result


def rounded(value: Value, digits: int) -> Value:
    """round(value, digits), of draws each (numpy's rounding: a figure's shown inputs, not a figure)."""
    if is_draws(value):
        import numpy

        return numpy.round(value, digits)
    return round(value, digits)


def shown(value: Value) -> str:
    """A number as a source text writes it (`{:g}`); draws, which no text shows, as 'drawn'."""
    return "drawn" if is_draws(value) else f"{value:g}"
