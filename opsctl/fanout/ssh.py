"""The ssh transport (Fabric's Connection over paramiko): the probe runs on the tray as
`PYTHON -m probes …`, reached as the user's ssh_config says — Host aliases, User, Port,
IdentityFile, and ProxyJump through one or more jump hosts (ssh_config.py).

Host keys are verified at every hop — each jump host and the tray — against one known_hosts file
(the inventory's `opsctl_known_hosts`, else ~/.ssh/known_hosts). A host whose key is not there is
refused, unless the user opted in with `accept_new_host_keys` — then its key is recorded, as
OpenSSH's StrictHostKeyChecking=accept-new does. A key that differs from the recorded one is
always refused, with the fingerprint it offered. No agent is forwarded. Fabric's parallel runner
(ThreadingGroup) is not used: the fan-out's runner keeps its deadlines, journal and hang-up.

The remote command is one string for the tray's shell, built with shlex from an argument
list whose names the inventory has already validated. A simulator spec travels on stdin, as
one line. Stdin then stays open for the whole session: closing the client (Ctrl-C, the run
timeout, or this process dying and the kernel closing the connection) makes sshd close it, and
the probe (`--stop-on-stdin-eof`) ends at that EOF. sshd signals nothing to a command without a
pty when its session closes, and a probe prints only at its end, so without this it would run on.
"""

from __future__ import annotations

import logging
import os
import re
import select
import shlex
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import paramiko
from fabric import Connection

from opsctl.errors import InputError
from opsctl.fanout.ssh_config import SshConfig, connect_options, describe, load_ssh_config
from opsctl.fanout.transport import MAX_TRAY_OUTPUT_BYTES, MAX_TRAY_STDERR_BYTES, Completed, Interrupted, TrayOutputTooLarge, TrayTimedOut, TrayUnreachable
from opsctl.regular_files import check_replaceable

if TYPE_CHECKING:
    from opsctl.inventory import Tray

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
POLL_S = 0.5  # how often a waiting tray checks for Ctrl-C and its deadline (data wakes it at once)
READ_BYTES = 1 << 16
_PYTHON_PATH = re.compile(r"[A-Za-z0-9_./+-]+")

# paramiko logs a traceback for every failed handshake; opsctl reports each tray in one line.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko").propagate = False


class _RecordNewKey(paramiko.MissingHostKeyPolicy):
    """Accept a host that is not in known_hosts and append its key there (accept-new)."""

    def __init__(self, known_hosts: Path, lock: threading.Lock) -> None:
        self.known_hosts = known_hosts
        self.lock = lock

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        with self.lock:  # trays connect at once; their lines must not interleave
            self.known_hosts.parent.mkdir(parents=True, exist_ok=True)
            with open(self.known_hosts, "a", encoding="ascii") as file:
                file.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


class _RefuseUnknownKey(paramiko.MissingHostKeyPolicy):
    def __init__(self, known_hosts: Path) -> None:
        self.known_hosts = known_hosts

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        raise TrayUnreachable(
            f"host key of {hostname} ({key.get_name()} {key.fingerprint}) is not in {self.known_hosts}; refused "
            "(verify it and add it, or pass --accept-new-host-keys)"
        )


class SshTransport:
    name = "ssh"

    def __init__(self, known_hosts: str | None = None, accept_new_host_keys: bool = False,
                 connect_timeout_s: float = 10.0, ssh_config: str | None = None) -> None:
        self.known_hosts = Path(os.path.expanduser(known_hosts or DEFAULT_KNOWN_HOSTS))
        check_replaceable(self.known_hosts, "reads and appends to known_hosts only as a regular file")  # a FIFO would hang every tray's connect
        self.accept_new_host_keys = accept_new_host_keys
        self.connect_timeout_s = connect_timeout_s
        self.ssh_config: SshConfig = load_ssh_config(ssh_config)
        self._known_hosts_lock = threading.Lock()

    @staticmethod  # no state: the Slurm transport delivers the spec the same way
    def spec_delivery(spec_json: bytes) -> tuple[list[str], bytes | None]:
        if b"\n" in spec_json:  # json.dumps without indent never writes one
            raise ValueError("the simulator spec must be one line of JSON to travel on stdin")
        return ["--sim-spec", "-"], spec_json + b"\n"

    def check(self, tray: Tray) -> None:
        check_python(tray)
        self.ssh_config.hops(tray)  # a ProxyCommand, a ProxyJump loop: bad input before any tray runs

    def remote_command(self, tray: Tray, argv: list[str]) -> str:
        check_python(tray)
        return shlex.join([tray.python, "-m", "probes", *argv])

    def _policy(self) -> paramiko.MissingHostKeyPolicy:
        if self.accept_new_host_keys:
            return _RecordNewKey(self.known_hosts, self._known_hosts_lock)
        return _RefuseUnknownKey(self.known_hosts)

    def _load_known_hosts(self, client: paramiko.SSHClient) -> None:
        """Load known_hosts; a line paramiko cannot read (a key that is not base64) is bad input
        naming the file and the line, never a crash, and never skipped into trusting nothing."""
        try:
            client.load_host_keys(str(self.known_hosts))
        except paramiko.hostkeys.InvalidHostKey as error:
            bad = error.line.strip() if isinstance(getattr(error, "line", None), str) else ""
            lines = self.known_hosts.read_text(errors="replace").splitlines()
            number = next((i for i, line in enumerate(lines, 1) if line.strip() == bad), "?")
            raise InputError(f"{self.known_hosts} line {number}: not a valid host key ({error.exc}); "
                             "fix or remove that line") from None
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise InputError(f"{self.known_hosts}: cannot read it as a known_hosts file ({error})") from None

    def _client(self) -> paramiko.SSHClient:
        """A client that trusts exactly the known_hosts file, with opsctl's policy for new keys:
        every hop gets its own, so Fabric's default (accept any key) is never in play."""
        client = paramiko.SSHClient()
        if self.known_hosts.is_file():
            with self._known_hosts_lock:
                self._load_known_hosts(client)
        client.set_missing_host_key_policy(self._policy())
        return client

    def connect(self, tray: Tray) -> list[Connection]:
        """The open hops to the tray — jump hosts first, the tray last, each logged in with its
        host key verified — or TrayUnreachable saying which hop failed and why."""
        hops = self.ssh_config.hops(tray)
        try:
            for index, hop in enumerate(hops):
                hop.client = self._client()
                hop.connect_timeout = None  # opsctl's timeouts, in connect_kwargs (Fabric's int() would drop 0.5 s)
                hop.forward_agent = False
                hop.connect_kwargs = {**hop.connect_kwargs, **connect_options(hop, self.connect_timeout_s)}
                self._open(hop, hops[index - 1] if index else None, is_jump_host=index < len(hops) - 1)
            return hops
        except BaseException:
            close(hops)
            raise

    def _open(self, hop: Connection, through: Connection | None, is_jump_host: bool) -> None:
        where = ("jump host " if is_jump_host else "") + describe(hop)
        timeout = self.connect_timeout_s
        started = time.monotonic()
        try:
            hop.open()
        except TrayUnreachable as error:  # the policy refused an unknown key
            raise TrayUnreachable(f"{where}: {error}" if is_jump_host else str(error)) from None
        except paramiko.BadHostKeyException as error:
            raise TrayUnreachable(
                f"host key of {'jump host ' if is_jump_host else ''}{hop.host}:{hop.port} is not the one in {self.known_hosts} "
                f"(offered {error.key.get_name()} {error.key.fingerprint}); refused: the key changed "
                "or someone is in between"
            ) from None
        except paramiko.AuthenticationException as error:
            raise TrayUnreachable(f"{where}: login refused ({error})") from None
        except paramiko.ChannelException as error:  # the jump host could not open the way on
            raise TrayUnreachable(f"{where}: jump host {describe(through) if through else '?'} could not reach it "
                                  f"({error.text})") from None
        except paramiko.ssh_exception.NoValidConnectionsError:
            raise TrayUnreachable(f"{where}: connection refused") from None
        except (paramiko.SSHException, OSError, EOFError) as error:
            if isinstance(error, (socket.timeout, TimeoutError)) or time.monotonic() - started >= timeout:
                raise TrayUnreachable(f"{where}: no SSH answer within the {timeout:g} s connect timeout") from None
            raise TrayUnreachable(f"{where}: {error or type(error).__name__}") from None

    def run(self, tray: Tray, argv: list[str], stdin: bytes | None, timeout_s: float,
            stop: threading.Event) -> Completed:
        command = self.remote_command(tray, argv)
        deadline = time.monotonic() + timeout_s
        hops = self.connect(tray)
        try:
            try:
                channel = hops[-1].transport.open_session(timeout=self.connect_timeout_s)
                channel.exec_command(command)
                if stdin is not None:
                    channel.sendall(stdin)
                # No shutdown_write: the probe's stdin stays open until the client closes, and
                # that EOF is its hang-up.
            except (paramiko.SSHException, OSError, EOFError) as error:
                raise TrayUnreachable(f"{tray.address}: could not start the probe: {error}") from None
            return _collect(channel, deadline, timeout_s, stop)
        finally:
            close(hops)  # the session's end closes the probe's stdin: one still running stops


def check_python(tray: Tray) -> None:
    """The tray's Python must be a plain path (the Slurm transport checks its trays the same way)."""
    if not _PYTHON_PATH.fullmatch(tray.python):
        raise InputError(f"host {tray.host}: opsctl_python {tray.python!r} is not a plain path to a Python")


def close(hops: list[Connection]) -> None:
    """Close the tray's connection first (its probe sees EOF), then each jump host's."""
    for hop in reversed(hops):
        hop.client.close()


def _collect(channel: paramiko.Channel, deadline: float, timeout_s: float, stop: threading.Event) -> Completed:
    """Read stdout and stderr until the command exits, the deadline passes or the user stops."""
    stdout, stderr = bytearray(), bytearray()
    while True:
        while channel.recv_ready():
            stdout += channel.recv(READ_BYTES)
            if len(stdout) > MAX_TRAY_OUTPUT_BYTES:  # the caller closes the session: the probe hangs up
                raise TrayOutputTooLarge(MAX_TRAY_OUTPUT_BYTES)
        while channel.recv_stderr_ready():
            stderr += channel.recv_stderr(READ_BYTES)
            if len(stderr) > 2 * MAX_TRAY_STDERR_BYTES:  # its last MiB says why, if anything does
                del stderr[:-MAX_TRAY_STDERR_BYTES]
        if channel.exit_status_ready() and channel.eof_received and not channel.recv_ready() and not channel.recv_stderr_ready():
            return Completed(channel.recv_exit_status(), bytes(stdout), bytes(stderr))
        if channel.closed and not channel.recv_ready() and not channel.recv_stderr_ready():
            status = channel.recv_exit_status() if channel.exit_status_ready() else -1
            if status == -1:
                raise TrayUnreachable("the connection closed before the probe said how it ended")
            return Completed(status, bytes(stdout), bytes(stderr))
        if stop.is_set():
            raise Interrupted("stopped by the user")
        if time.monotonic() >= deadline:
            raise TrayTimedOut(f"probe ran past its {timeout_s:g} s run timeout and was stopped")
        select.select([channel], [], [], POLL_S)
