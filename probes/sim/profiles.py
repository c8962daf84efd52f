"""Time profiles of effects, and how counters grow under them — deterministically.

A counter is `floor(Λ(t) + φ)`: Λ(t) is the integral of its rate since the epoch and φ a phase
drawn once from the seed. Over a window the delta is the expected count (±1), rare events
land at a seeded moment, and the same seed gives the same counters on every read.
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from probes.sim.spec import Effect


def seeded_random(*keys: object) -> random.Random:
    """A random.Random fixed by the keys (the scenario seed, a GPU id, a counter name…)."""
    digest = hashlib.blake2b("\x1f".join(map(str, keys)).encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "little"))


def active(effect: Effect, t: float) -> bool:
    """Is the effect in force at time t (seconds since the epoch)?"""
    start = effect.get("start_s", 0.0)
    end = effect.get("end_s")
    return t >= start and (end is None or t < end)


def ramp_integral(rate: float, start: float, end: float | None, ramp: float | None, t: float) -> float:
    """∫₀ᵗ of a rate that is 0 before `start`, rises linearly over `ramp` seconds, holds at
    `rate`, and stops at `end` (None: never)."""
    if t <= start or rate <= 0:
        return 0.0
    stop = t if end is None else min(t, end)
    if stop <= start:
        return 0.0
    span = stop - start
    if ramp and ramp > 0:
        if span <= ramp:
            return rate * span * span / (2 * ramp)
        return rate * (ramp / 2 + (span - ramp))
    return rate * span


def rate_at(rate: float, start: float, end: float | None, ramp: float | None, t: float) -> float:
    if t < start or (end is not None and t >= end) or rate <= 0:
        return 0.0
    if ramp and ramp > 0 and t - start < ramp:
        return rate * (t - start) / ramp
    return rate


def effect_integral(effect: Effect, key: str, t: float) -> float:
    return ramp_integral(
        float(effect.get(key, 0.0)), effect.get("start_s", 0.0), effect.get("end_s"), effect.get("ramp_s", 0.0), t
    )


def effect_rate(effect: Effect, key: str, t: float) -> float:
    return rate_at(float(effect.get(key, 0.0)), effect.get("start_s", 0.0), effect.get("end_s"), effect.get("ramp_s", 0.0), t)


def count(expected: float, phase: float) -> int:
    """The counter reading for an expected count (Λ) and a phase φ in [0, 1)."""
    return int(math.floor(expected + phase))


def flap_transitions(effect: Effect, t: float) -> int:
    """How many times a flapping link has gone down by time t."""
    start = effect.get("start_s", 0.0)
    end = effect.get("end_s")
    period = float(effect.get("period_s", 60.0))
    stop = t if end is None else min(t, end)
    if stop < start:
        return 0
    return int((stop - start) // period) + 1


def flap_is_down(effect: Effect, t: float) -> bool:
    if not active(effect, t):
        return False
    start = effect.get("start_s", 0.0)
    period = float(effect.get("period_s", 60.0))
    down = float(effect.get("down_s", 5.0))
    return (t - start) % period < down
