"""Where the simulator's time comes from: the wall clock, or a clock a test moves by hand."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """What the probes and the simulator tell time by: WallClock, ManualClock."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class WallClock:
    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class ManualClock:
    """Time that moves only when told to (or when the simulator 'sleeps'): tests read counters
    over a ten-minute window without waiting ten minutes."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    sleep = advance


class FrozenClock(WallClock):
    """Time that stands at one moment while sleeps take real time: a test reads the simulator at
    one instant (its readings exactly those of that second), however long a loaded machine takes."""

    def __init__(self, at: float) -> None:
        self._at = float(at)

    def now(self) -> float:
        return self._at
