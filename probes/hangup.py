"""The probe's hang-up: with `--stop-on-stdin-eof` (what opsctl's fan-out passes), stop at once when stdin closes. A probe
started over ssh without a pty is not signalled when its session closes (sshd sends nothing to
a command without a terminal), and it prints only at its end, so it would never meet a closed
pipe either: a Ctrl-C'd, timed-out or killed opsctl would leave a GEMM burn-in holding the
tray's GPUs. So the orchestrator holds the probe's stdin open for as long as it wants the
answer, and EOF there — the session closed, the orchestrator died and the kernel closed its
end, or it closed the pipe on purpose — means no one is waiting. The stop is immediate and
whole: one line on stderr, the processes the probe started (the collective's ranks) killed,
exit 3 (incomplete), no document (no one is left to read it, and a load thread stuck in the
driver could not be waited for). The process exiting is what ends the load and frees the GPUs.
With `--sim-spec -` the spec comes first on that stdin, framed as one line of JSON.
"""

from __future__ import annotations

import io
import os
import sys
import threading
from typing import NoReturn, TextIO

from probes.exit_codes import EXIT_INCOMPLETE

STOP_ON_STDIN_EOF = "--stop-on-stdin-eof"
STDIN_READ_BYTES = 1 << 16


def watch_for_hangup(stdin: TextIO | None, spec_first: bool) -> TextIO:
    """Start watching stdin for EOF (after taking the spec's line off it, when it brings one);
    returns what the backend reads the spec from."""
    if stdin is None:  # started with no stdin at all: no one to wait for
        stop_now("no stdin to watch")
    spec = None
    if spec_first:
        line = getattr(stdin, "buffer", stdin).readline()
        line = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
        if not line.endswith("\n"):
            stop_now(f"stdin closed after {len(line)} characters of the simulator spec, before its end of line: "
                     "whoever started this probe hung up")
        spec = io.StringIO(line)
    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None

    def wait_for_eof() -> None:
        while True:
            try:
                # The file descriptor, not the buffered stream: a daemon thread blocked inside the
                # stream would hold its lock, and the interpreter's exit could abort on that.
                if not (os.read(fd, STDIN_READ_BYTES) if fd is not None else stdin.read(STDIN_READ_BYTES)):
                    break
            except InterruptedError:
                continue
            except (OSError, ValueError):
                break  # stdin unreadable: nothing left to wait on
        stop_now("stdin closed: whoever started this probe hung up")

    threading.Thread(target=wait_for_eof, daemon=True, name="stdin-hangup").start()
    return spec if spec is not None else stdin


def stop_now(reason: str) -> NoReturn:
    """The hang-up: say why, kill the processes this probe started, exit 3 at once."""
    try:
        sys.stderr.write(f"probes: {reason} ({STOP_ON_STDIN_EOF}); stopped, the run is incomplete\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # stderr went with the session
    multiprocessing = sys.modules.get("multiprocessing")  # never imported: no children of its making
    if multiprocessing is not None:
        for child in multiprocessing.active_children():
            try:
                child.kill()
            except OSError:
                pass
    os._exit(EXIT_INCOMPLETE)
