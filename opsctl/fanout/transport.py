"""What a transport is: something that runs one command on one tray and hands back its exit
code and output, or says why it could not.

Two implementations: `LocalTransport` (a local process: the simulator's trays, or a tray that
is this machine) and `SshTransport` (paramiko, host keys verified). The runner above them
treats both alike, so an unreachable simulated tray and a host that refuses the connection
end the same way: incomplete, with the reason.

Hanging up: every probe runs with `--stop-on-stdin-eof`, and a transport holds the probe's stdin
open for as long as it waits for the probe. Closing it — the transport stopping on Ctrl-C or at
the run timeout, or the opsctl process dying and the kernel closing its end — ends the probe
(exit 3), with no pty and no signal needed: over ssh, sshd signals nothing to a command without
a terminal when its session closes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from opsctl.inventory import Tray

STOP_ON_HANGUP = "--stop-on-stdin-eof"  # the probe's option: stop when stdin closes (probes/hangup.py)

# A probe prints one JSON document: ~0.4 MB for a GB200 compute tray, whatever the duration. More
# than this is a probe gone wrong (printing without end), and reading on would grow opsctl's memory
# with it; the tray is stopped and incomplete. Stderr keeps its last MiB: its last line is the
# reason a probe gives, and a probe may say a lot before it.
MAX_TRAY_OUTPUT_BYTES = 64 * 2**20
MAX_TRAY_STDERR_BYTES = 2**20


@dataclass(frozen=True)
class Completed:
    """A command that ran to its end on the tray (whatever its exit code)."""

    exit_code: int
    stdout: bytes
    stderr: bytes


class TransportError(Exception):
    """The command could not be run or finished; the message is the reason, for one line."""


class TrayUnreachable(TransportError):
    """No connection: refused, no route, no answer in time, host key refused, login refused."""


class TrayTimedOut(TransportError):
    """The command ran past its run timeout and was stopped."""


class Interrupted(TransportError):
    """The user stopped the run (Ctrl-C) while this tray was working."""


class TrayOutputTooLarge(TransportError):
    """The command printed more than its cap on stdout and was stopped."""

    def __init__(self, limit: int = MAX_TRAY_OUTPUT_BYTES) -> None:
        super().__init__(f"probe printed more than {limit // 2**20} MiB on stdout (the cap on a tray's output) "
                         "and was stopped")


class Transport(Protocol):
    name: str

    def check(self, tray: Tray) -> None:
        """Refuse (InputError) a tray this transport cannot be pointed at safely, before any runs."""

    def spec_delivery(self, spec_json: bytes) -> tuple[list[str], bytes | None]:
        """How a simulator spec reaches the probe: extra arguments, and bytes for its stdin
        (one line: the probe reads the spec's line and then watches stdin for the hang-up)."""

    def run(self, tray: Tray, argv: list[str], stdin: bytes | None, timeout_s: float, stop: threading.Event) -> Completed:
        """Run argv on the tray; raise a TransportError when it cannot finish. `stop` is a
        threading.Event: when it is set, abandon the work and raise Interrupted. The command's
        stdin gets `stdin` and then stays open until the command ends or is abandoned."""
