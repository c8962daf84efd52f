"""One fresh child process, timed: wall seconds and the CPU (user + system) it and its children spent,
from getrusage(RUSAGE_CHILDREN). The benchmarks that compare process starts share it."""

from __future__ import annotations

import resource
import subprocess
import time
from pathlib import Path


def timed_run(argv: list[str], cwd: str | Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of `argv`; its output is dropped and its exit code ignored (a tray may fail:
    its cost is the same)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
