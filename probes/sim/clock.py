"""Where the simulator's time comes from: the wall clock, or a clock a test moves by hand."""

import threading
import time


class WallClock:
    def now(self):
        return time.time()

    def sleep(self, seconds):
        if seconds > 0:
            time.sleep(seconds)


class ManualClock:
    """Time that moves only when told to (or when the simulator 'sleeps'): tests read counters
    over a ten-minute window without waiting ten minutes."""

    def __init__(self, start=1_767_225_600.0):  # 2026-01-01T00:00:00Z
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self):
        with self._lock:
            return self._now

    def advance(self, seconds):
        with self._lock:
            self._now += seconds

    sleep = advance
