"""Live progress of a burn-in, one line per tray.

On a terminal: a rich progress bar per tray (elapsed against the expected duration) whose
label turns into the tray's outcome when it reports. Elsewhere (CI logs, pipes): one plain
line as each tray starts and finishes, so a log shows the run's order of events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from rich.console import Console
from rich.progress import Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.progress_bar import ProgressBar

from opsctl.runs.tray_names import tray_label

if TYPE_CHECKING:
    from rich.progress import Task, TaskID

    from opsctl.fanout.runner import TrayResult
    from opsctl.inventory import Rack, Tray

OUTCOME_STYLE = {"pass": "green", "warn": "yellow", "fail": "red", "incomplete": "magenta"}


def tray_outcome(result: TrayResult) -> str:
    """pass / warn / fail / incomplete for a tray that reported, from its probe's exit code."""
    if not result.complete or result.document is None:  # a complete result always has its document
        return "incomplete"
    checks = [c for g in result.document.get("gpus") or [] for c in g.get("checks") or []]
    checks += result.document.get("checks") or []
    verdicts = {c.get("verdict") for c in checks if isinstance(c, dict)}
    if result.exit_code == 1 or "fail" in verdicts:
        return "fail"
    return "warn" if "warn" in verdicts else "pass"


def _what_failed(result: TrayResult) -> str:
    """What a tray's failing checks are about: its links (a switch tray's always are, so a bad
    link does not read as a bad switch) or its GPUs."""
    document = result.document or {}  # a complete result's: always there
    checks = [c for g in document.get("gpus") or [] for c in g.get("checks") or []]
    checks += document.get("checks") or []
    failing = [c for c in checks if isinstance(c, dict) and c.get("verdict") == "fail"]
    links = {c.get("link") or c.get("component") for c in failing if c.get("link") or "/nvl" in str(c.get("component"))}
    gpus = sorted({str(c.get("component")) for c in failing if not (c.get("link") or "/nvl" in str(c.get("component")))})
    parts = ([f"{len(links)} link(s)"] if links else []) + gpus
    return f": {', '.join(parts)}" if parts else ""


class _ElapsedBar(ProgressColumn):
    """A bar that fills with the time a tray has run against the time it is expected to take
    (the probe prints nothing until it ends)."""

    def render(self, task: Task) -> ProgressBar:
        assert task.total is not None  # every tray's task is added with its expected duration
        done = task.total if task.finished else min(task.elapsed or 0.0, task.total * 0.99)
        return ProgressBar(total=task.total, completed=done, width=30)


class TrayProgress:
    """Context manager; `started(tray)` and `finished(result)` are the fan-out's callbacks."""

    def __init__(self, rack: Rack, trays: Iterable[Tray], expected_s: float, console: Console | None = None,
                 already_done: Iterable[str] = ()) -> None:
        self.rack = rack
        self.trays = list(trays)
        self.expected_s = max(expected_s, 1.0)
        self.console = console or Console(stderr=True, highlight=False)
        self.live = self.console.is_terminal
        self.already_done = list(already_done)
        self._tasks: dict[str, TaskID] = {}
        self._progress: Progress | None = None

    def __enter__(self) -> TrayProgress:
        if self.already_done:
            self.console.print(f"resuming: {len(self.already_done)} tray(s) already have a result "
                               f"({', '.join(self.already_done)})")
        if self.live:
            self._progress = Progress(
                TextColumn("{task.fields[tray]:>6}"), _ElapsedBar(), TimeElapsedColumn(),
                TextColumn("{task.fields[state]}"), console=self.console, refresh_per_second=4,
            )
            for tray in self.trays:
                self._tasks[tray.name] = self._progress.add_task("", total=self.expected_s, start=False,
                                                                 tray=self._label(tray.name), state="[dim]waiting[/dim]")
            self._progress.start()
        else:
            self.console.print(f"{self.rack.name}: {len(self.trays)} tray(s), about {self.expected_s:.0f} s each")
        return self

    def started(self, tray: Tray) -> None:
        if self._progress:
            task = self._tasks[tray.name]
            self._progress.start_task(task)
            self._progress.update(task, state=f"running on {tray.host}")
        else:
            self.console.print(f"  {self._label(tray.name)} started on {tray.host}")

    def finished(self, result: TrayResult) -> None:
        outcome = tray_outcome(result)
        style = OUTCOME_STYLE[outcome]
        if result.complete:  # the tray's own view; the rack's verdict comes when all have reported
            text = f"reported in {result.seconds:.0f} s, probe says [{style}]{outcome}[/{style}]{_what_failed(result)}"
        else:
            text = f"[{style}]incomplete[/{style}] after {result.seconds:.0f} s: {result.reason}"
        if self._progress:
            task = self._tasks[result.tray]
            self._progress.update(task, completed=self.expected_s, state=text)
            self._progress.stop_task(task)
        else:
            self.console.print(f"  {self._label(result.tray)} {text}")

    def _label(self, tray: str) -> str:
        return tray_label(self.rack.name, tray)  # hgx01, not the HGX tray's inner name "node"

    def note(self, text: str) -> None:
        """A line about the run as a whole, printed above the live bars (or in the log)."""
        self.console.print(text)

    def __exit__(self, *exc: object) -> Literal[False]:
        if self._progress:
            self._progress.stop()
        return False
