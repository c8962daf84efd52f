"""What a command that reads the trays over a window says while it waits: a line every few
seconds on stderr with the time gone and left and what the trays have answered so far, and a
line as soon as a tray is not read. stdout (the result, the --json) is untouched."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from types import TracebackType

    from opsctl.fanout import TrayResult
    from opsctl.inventory import Rack

TICK_S = 5.0


class WindowProgress:
    def __init__(self, rack: Rack, window_s: float, out: TextIO, tick_s: float = TICK_S) -> None:
        self.rack, self.window_s, self.out, self.tick_s = rack, window_s, out, tick_s
        self.answered = 0
        self.unread: list[str] = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._tick, name="window-progress", daemon=True)

    def __enter__(self) -> WindowProgress:
        self._say(f"{self.rack.name}: reading {len(self.rack.trays)} tray(s) over a {self.window_s:g} s window …")
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.done.set()
        self.thread.join()

    def finished(self, result: TrayResult) -> None:
        with self.lock:
            if result.complete:
                self.answered += 1
            else:
                self.unread.append(result.tray)
        if not result.complete:
            self._say(f"  {result.tray} not read: {result.reason}")

    def _tick(self) -> None:
        while not self.done.wait(self.tick_s):
            gone = time.monotonic() - self.started
            left = max(0.0, self.window_s - gone)
            with self.lock:
                answered, unread = self.answered, list(self.unread)
            waiting = len(self.rack.trays) - answered - len(unread)
            timing = f"{gone:.0f} s of {self.window_s:g}, {left:.0f} s left" if left else \
                f"{gone:.0f} s, the window is over: waiting for the last readings"
            seen = f"{answered} answered, {waiting} reading" + (f", {len(unread)} not read ({', '.join(unread)})"
                                                               if unread else "")
            self._say(f"{self.rack.name}: {timing}; {seen}")

    def _say(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()
