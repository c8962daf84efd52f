"""One process at a time works in a run folder.

Two `--resume` of one run at once would both run the trays' probes and both judge and record
the run. So whatever runs, resumes or judges a run holds an exclusive fcntl.flock on `.run.lock`
inside its folder, for as long as it has the run open. The kernel drops the lock when the
process ends however it ends — SIGKILL, a crash, the ssh session it ran in closing — so no dead
process leaves a run locked, as a stale pid file would. The descriptor is not inherited by the
probes the run starts (Python opens files non-inheritable), so a probe that outlives a killed
opsctl does not hold the run either.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import TextIO

from opsctl.errors import InputError

LOCK_FILE = ".run.lock"  # hidden: not one of the run's files the report lists


class RunLock:
    """The held lock of one run folder; released by `release()`, or when this object is
    dropped (the file closes), or when the process ends."""

    def __init__(self, folder: str | Path) -> None:
        path = os.path.join(folder, LOCK_FILE)
        try:
            self._file = open(path, "a+", encoding="utf-8")  # held open on purpose: the lock lives with it
        except OSError as error:  # a run folder this user may not write in: nothing could be judged there
            raise InputError(f"run {folder}: cannot take it for this opsctl: {error.strerror or error}") from None
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(self._file)
            self._file.close()
            raise InputError(f"run {folder} is already being run by another opsctl{holder}; "
                             "wait for it to end (or stop it), then resume the run") from None
        # Who holds it, for the message a second opsctl prints; the lock itself is the flock.
        self._file.seek(0)
        self._file.truncate()
        self._file.write(f"{os.getpid()}\n")
        self._file.flush()

    def release(self) -> None:
        if not self._file.closed:
            self._file.close()


def _holder(file: TextIO) -> str:
    file.seek(0)
    pid = file.read().strip()
    return f" (pid {pid})" if pid.isdigit() else ""
