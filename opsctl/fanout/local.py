"""The local transport: the probe runs as a process on this machine — a simulated tray, or a
tray that is the machine opsctl runs on.

It runs the `probes` package that came with this opsctl, under this Python, so a simulated
rack needs nothing installed anywhere else. Each probe gets its own process group, so Ctrl-C
in the terminal reaches opsctl alone and opsctl stops the probes itself, in order.

Being in its own session, a probe hears nothing when opsctl is killed outright; so its stdin is
a pipe that only opsctl holds, open until the probe ends, and the probe (`--stop-on-stdin-eof`)
stops when the kernel closes it with opsctl. Its output is read by two threads as it comes (a
probe blocked on a full pipe would never end), not by communicate(), which closes stdin.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from io import BufferedReader
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from opsctl.fanout.transport import MAX_TRAY_OUTPUT_BYTES, MAX_TRAY_STDERR_BYTES, Completed, Interrupted, TrayOutputTooLarge, TrayTimedOut
from opsctl.runs.atomic_file import write_bytes_atomic

if TYPE_CHECKING:
    from opsctl.inventory import Tray

POLL_S = 0.2
READ_BYTES = 1 << 16
GRACE_S = 3.0  # between SIGTERM and SIGKILL


class LocalTransport:
    name = "local"

    def __init__(self, workdir: str | Path) -> None:
        self.workdir = Path(workdir)

    def check(self, tray: Tray) -> None:
        pass  # nothing from the inventory reaches the command line

    def spec_delivery(self, spec_json: bytes) -> tuple[list[str], bytes | None]:
        # A file beside the run's other files: the record of what the trays were told.
        path = self.workdir / "sim-spec.json"
        if not path.is_file() or path.read_bytes() != spec_json:  # a FIFO there: the writer refuses it, never a blocked read
            write_bytes_atomic(path, spec_json)
        return ["--sim-spec", str(path)], None

    def run(self, tray: Tray, argv: list[str], stdin: bytes | None, timeout_s: float,
            stop: threading.Event) -> Completed:
        deadline = time.monotonic() + timeout_s
        # close_fds (the default) matters: a probe started beside this one must not inherit the
        # write end of this one's stdin, or this one would never see it close.
        process = subprocess.Popen(
            [sys.executable, "-m", "probes", *argv],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        stdout = _Drain(process.stdout, limit=MAX_TRAY_OUTPUT_BYTES)
        stderr = _Drain(process.stderr, tail=MAX_TRAY_STDERR_BYTES)
        if stdin:
            threading.Thread(target=_feed, args=(process.stdin, stdin), daemon=True, name=f"stdin-{tray.name}").start()
        try:
            while not _ended(process, stdout, stderr):
                if stdout.overflowed:
                    _stop(process)
                    raise TrayOutputTooLarge(MAX_TRAY_OUTPUT_BYTES)
                if stop.is_set():
                    _stop(process)
                    raise Interrupted("stopped by the user")
                if time.monotonic() >= deadline:
                    _stop(process)
                    raise TrayTimedOut(f"probe ran past its {timeout_s:g} s run timeout and was stopped")
            if stdout.overflowed:  # it ended (its pipe closed on it) past the cap
                raise TrayOutputTooLarge(MAX_TRAY_OUTPUT_BYTES)
            return Completed(process.returncode, stdout.data(), stderr.data())
        finally:
            _close(process.stdin)  # the probe has ended, or was stopped: nothing left to hang up on


class _Drain:
    """Read a pipe to its end in a thread, holding a bounded amount: past `limit` bytes it stops
    reading, drops what it read and says `overflowed` (the pipe closes on the writer); with `tail`,
    it keeps reading but holds only the last `tail` bytes."""

    def __init__(self, pipe: IO[bytes] | None, limit: int | None = None, tail: int | None = None) -> None:
        self.pipe = cast(BufferedReader, pipe)  # Popen(stdout=PIPE) gives a buffered reader: it has read1
        self.limit, self.tail = limit, tail
        self.chunks: list[bytes] = []
        self.overflowed = False
        self.thread = threading.Thread(target=self._read, daemon=True, name="probe-output")
        self.thread.start()

    def _read(self) -> None:
        held = 0
        with self.pipe:
            while chunk := self.pipe.read1(READ_BYTES):
                self.chunks.append(chunk)
                held += len(chunk)
                if self.limit is not None and held > self.limit:
                    self.chunks, self.overflowed = [], True
                    return
                if self.tail is not None and held > 2 * self.tail:
                    self.chunks = [b"".join(self.chunks)[-self.tail:]]
                    held = self.tail

    def data(self) -> bytes:
        self.thread.join()
        return b"".join(self.chunks)


def _feed(pipe: IO[bytes], data: bytes) -> None:
    """Write `data` to the probe's stdin and leave it open."""
    try:
        pipe.write(data)
        pipe.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass  # the probe ended (or was stopped) without reading it all: its exit code says why


def _ended(process: subprocess.Popen[bytes], *drains: _Drain) -> bool:
    """Wait up to POLL_S for the probe to exit and its output to end; whether both happened."""
    try:
        process.wait(timeout=POLL_S)
    except subprocess.TimeoutExpired:
        return False
    for drain in drains:  # a child the probe left holding its stdout keeps the pipe open
        drain.thread.join(POLL_S)
        if drain.thread.is_alive():
            return False
    return True


def _close(pipe: IO[bytes] | None) -> None:
    if pipe is None:  # Popen gives None only for a stream it was not asked to pipe
        return
    try:
        pipe.close()
    except (BrokenPipeError, OSError):
        pass


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the probe's process group, SIGKILL if it lingers. (Stdin is closed after, once
    the probe is gone: closing it sooner could wait on a write the probe will never read.)"""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue
    process.wait()
