"""One process at a time works in a run folder, and one run at a time works on a rack.

Two `--resume` of one run at once would both run the trays' probes and both judge and record
the run. So whatever runs, resumes or judges a run holds an exclusive fcntl.flock on `.run.lock`
inside its folder, for as long as it has the run open. The kernel drops the lock when the
process ends however it ends — SIGKILL, a crash, the ssh session it ran in closing — so no dead
process leaves a run locked, as a stale pid file would. The descriptor is not inherited by the
probes the run starts (Python opens files non-inheritable), so a probe that outlives a killed
opsctl does not hold the run either.

Two runs of one rack at once (two operators, two terminals) would load it twice: every figure
of both skewed, and parts blamed that are not faulty. So a burn-in or acceptance also holds the
rack (RackLock): a flock on RACK.lock in one folder for the machine ($OPSCTL_LOCK_DIR, else
opsctl-racks under the system's temporary folder), which names the run that holds it.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import TextIO

from opsctl.errors import InputError

LOCK_FILE = ".run.lock"  # hidden: not one of the run's files the report lists
LOCK_DIR_ENV = "OPSCTL_LOCK_DIR"


class Held(Exception):
    """The lock is another process's; `holder` is what that process wrote in the file."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


def take(file: TextIO, note: str) -> None:
    """flock `file` for this process and write `note` in it (who holds it, for a second one's
    message); Held (the file closed) when another process has it."""
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.seek(0)
        holder = file.read().strip()
        file.close()
        raise Held(holder) from None
    write_note(file, note)


def write_note(file: TextIO, note: str) -> None:
    file.seek(0)
    file.truncate()
    file.write(f"{note}\n")
    file.flush()


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
            take(self._file, str(os.getpid()))
        except Held as held:
            pid = f" (pid {held.holder})" if held.holder.isdigit() else ""
            raise InputError(f"run {folder} is already being run by another opsctl{pid}; "
                             "wait for it to end (or stop it), then resume the run") from None

    def release(self) -> None:
        if not self._file.closed:
            self._file.close()


def rack_lock_dir() -> Path:
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "opsctl-racks")


class RackLock:
    """The held lock of one rack on this machine, naming the run that holds it; released by
    `release()`, when this object is dropped, or when the process ends."""

    def __init__(self, rack: str, kind: str) -> None:
        self.rack, self.kind = rack, kind
        folder = rack_lock_dir()
        path = folder / f"{rack}.lock"  # rack names are [A-Za-z0-9_.-]+ (inventory.py)
        try:
            _shared_folder(folder)
            self._file = _open_shared(path)
        except OSError as error:
            raise InputError(f"cannot take rack {rack} for this run: {path}: {error.strerror or error} "
                             f"(${LOCK_DIR_ENV} names another folder for the racks' locks)") from None
        try:
            take(self._file, json.dumps({"pid": os.getpid(), "kind": kind, "run": None}))
        except Held as held:
            raise InputError(f"rack {rack} is held by {_holder(held.holder)}: one burn-in or acceptance of a rack at "
                             f"a time; wait for it to end (or stop it), or say --force to run beside it") from None

    def name_run(self, run: str | Path) -> None:
        """Say which run holds the rack, once its folder is made."""
        write_note(self._file, json.dumps({"pid": os.getpid(), "kind": self.kind, "run": str(run)}))

    def release(self) -> None:
        if not self._file.closed:
            self._file.close()


def _holder(note: str) -> str:
    try:
        holder = json.loads(note)
        return f"{holder['kind']} run {holder['run'] or '(being made)'} (pid {int(holder['pid'])})"
    except (ValueError, KeyError, TypeError):
        return "another opsctl"


def _shared_folder(folder: Path) -> None:
    """The machine's lock folder, writable by every user as /tmp is (sticky: none removes another's)."""
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        return
    if os.environ.get(LOCK_DIR_ENV) is None:
        os.chmod(folder, 0o1777)


def _open_shared(path: Path) -> TextIO:
    """The lock file, opened for writing; made readable and writable by all when this user makes it.
    Not O_CREAT on one that exists: Linux's protected_regular refuses that on another user's file here."""
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
            os.fchmod(descriptor, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH)
        except FileExistsError:  # made by another opsctl between the two opens
            descriptor = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    return os.fdopen(descriptor, "r+", encoding="utf-8")
