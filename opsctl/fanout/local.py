"""The local transport: the probe runs as a process on this machine — a simulated tray, or a
tray that is the machine opsctl runs on.

It runs the `probes` package that came with this opsctl, under this Python, so a simulated
rack needs nothing installed anywhere else. Each probe gets its own process group, so Ctrl-C
in the terminal reaches opsctl alone and opsctl stops the probes itself, in order.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

from opsctl.fanout.transport import Completed, Interrupted, TrayTimedOut
from opsctl.runs.atomic_file import write_bytes_atomic

POLL_S = 0.2
GRACE_S = 3.0  # between SIGTERM and SIGKILL


class LocalTransport:
    name = "local"

    def __init__(self, workdir):
        self.workdir = Path(workdir)

    def check(self, tray):
        pass  # nothing from the inventory reaches the command line

    def spec_delivery(self, spec_json):
        # A file beside the run's other files: the record of what the trays were told.
        path = self.workdir / "sim-spec.json"
        if not path.exists() or path.read_bytes() != spec_json:
            write_bytes_atomic(path, spec_json)
        return ["--sim-spec", str(path)], None

    def run(self, tray, argv, stdin, timeout_s, stop):
        process = subprocess.Popen(
            [sys.executable, "-m", "probes", *argv],
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        waited = 0.0
        while True:
            try:
                stdout, stderr = process.communicate(stdin, timeout=POLL_S)
                return Completed(process.returncode, stdout, stderr)
            except subprocess.TimeoutExpired:
                waited += POLL_S
            if stop.is_set():
                _stop(process)
                raise Interrupted("stopped by the user")
            if waited >= timeout_s:
                _stop(process)
                raise TrayTimedOut(f"probe ran past its {timeout_s:g} s run timeout and was stopped")


def _stop(process):
    """SIGTERM to the probe's process group, SIGKILL if it lingers."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.communicate(timeout=GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue
    process.communicate()
