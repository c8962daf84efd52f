"""What a transport is: something that runs one command on one tray and hands back its exit
code and output, or says why it could not.

Two implementations: `LocalTransport` (a local process: the simulator's trays, or a tray that
is this machine) and `SshTransport` (paramiko, host keys verified). The runner above them
treats both alike, so an unreachable simulated tray and a host that refuses the connection
end the same way: incomplete, with the reason.
"""

from dataclasses import dataclass
from typing import Protocol


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


class Transport(Protocol):
    name: str

    def check(self, tray) -> None:
        """Refuse (InputError) a tray this transport cannot be pointed at safely, before any runs."""

    def spec_delivery(self, spec_json: bytes) -> tuple[list[str], bytes | None]:
        """How a simulator spec reaches the probe: extra arguments, and bytes for its stdin."""

    def run(self, tray, argv: list[str], stdin: bytes | None, timeout_s: float, stop) -> Completed:
        """Run argv on the tray; raise a TransportError when it cannot finish. `stop` is a
        threading.Event: when it is set, abandon the work and raise Interrupted."""
