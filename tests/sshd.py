"""A real OpenSSH server on loopback for the fan-out tests: throwaway host and user keys, one
sshd listening on several addresses 127.0.0.x (one per tray), logins as the user running the
tests, by key only.

Use it as a pytest plugin (tests/conftest.py lists it in `pytest_plugins`):

    def test_something(sshd):        # session-scoped: one server for the whole run
        sshd.addresses, sshd.port, sshd.user, sshd.user_key
        sshd.write_known_hosts(path, addresses)   # trust some of them
        sshd.inventory(path, rack="rack07", ...)  # an inventory whose trays are these addresses
"""

import getpass
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
ADDRESSES = tuple(f"127.0.0.{n}" for n in range(2, 29))  # 27: a whole NVL72 rack's trays
READY_TIMEOUT_S = 15
LISTEN_LIMIT = 16  # sshd's MAX_LISTEN_SOCKS: one sshd per 16 addresses


def _keygen(path, comment):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, capture_output=True)
    return Path(f"{path}.pub").read_text().split()[:2]  # type, base64


def _free_port(address):
    with socket.socket() as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


def _wait_listening(addresses, port, process, log):
    deadline = time.monotonic() + READY_TIMEOUT_S
    waiting = list(addresses)
    while waiting:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection((waiting[0], port), timeout=0.5):
                waiting.pop(0)
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd is not listening on {waiting[0]}:{port}: {log.read_text()[-2000:]}") from None
            time.sleep(0.05)


@dataclass
class SshServer:
    root: Path
    addresses: tuple
    port: int
    user: str
    user_key: Path
    host_key: tuple  # (type, base64)
    processes: list
    log: Path

    def known_hosts_line(self, address, key=None):
        kind, blob = key or self.host_key
        return f"[{address}]:{self.port} {kind} {blob}\n"

    def write_known_hosts(self, path, addresses=None, wrong=()):
        """A known_hosts file trusting `addresses` (default: all); those in `wrong` are listed
        with another key, as if the host's key had changed."""
        other = _keygen(Path(path).with_name(Path(path).name + ".other-key"), "someone-else") if wrong else None
        lines = [self.known_hosts_line(a) for a in (addresses or self.addresses) if a not in wrong]
        lines += [self.known_hosts_line(a, other) for a in wrong]
        Path(path).write_text("".join(lines))
        return Path(path)

    def inventory(self, path, rack="rack07", model="gb200-nvl72", trays=None, scenario=None, known_hosts=None,
                  extra_hosts=None):
        """An inventory whose trays are reached over ssh at this server's addresses; the probes
        run there with this Python on the simulator."""
        from opsctl.rack_models import model_named

        names = trays or model_named(model).tray_names()
        lines = ["all:", "  children:", f"    {rack}:", "      vars:", f"        opsctl_model: {model}",
                 "        opsctl_transport: ssh", "        opsctl_backend: sim",
                 f"        opsctl_python: {sys.executable}", f"        ansible_user: {self.user}",
                 f"        ansible_port: {self.port}", f"        ansible_ssh_private_key_file: {self.user_key}"]
        if scenario:
            lines.append(f"        opsctl_scenario: {scenario}")
        if known_hosts:
            lines.append(f"        opsctl_known_hosts: {known_hosts}")
        lines.append("      hosts:")
        for index, tray in enumerate(names):
            address = (extra_hosts or {}).get(tray, self.addresses[index])
            lines.append(f"        {rack}-{tray}: {{ansible_host: '{address}', opsctl_tray: {tray}}}")
        Path(path).write_text("\n".join(lines) + "\n")
        return Path(path)

    def stop(self):
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def start_sshd(root, addresses=ADDRESSES):
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    host_key = _keygen(root / "host_ed25519", "opsctl-test-host")
    user_key = root / "user_ed25519"
    kind, blob = _keygen(user_key, "opsctl-test-user")
    (root / "authorized_keys").write_text(f"{kind} {blob} opsctl-test-user\n")
    port = _free_port(addresses[0])
    common = [
        f"Port {port}",
        f"HostKey {root / 'host_ed25519'}",
        f"AuthorizedKeysFile {root / 'authorized_keys'}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PermitRootLogin prohibit-password",
        "MaxStartups 200",  # a whole rack logs in at once
        "MaxSessions 64",
        "LogLevel VERBOSE",
    ]
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation folder
    log = root / "sshd.log"
    processes = []
    try:
        for first in range(0, len(addresses), LISTEN_LIMIT):
            group = addresses[first:first + LISTEN_LIMIT]
            config = root / f"sshd_config.{first}"
            config.write_text("\n".join([*common, f"PidFile {root / f'sshd.{first}.pid'}",
                                          *(f"ListenAddress {address}" for address in group)]) + "\n")
            process = subprocess.Popen([SSHD, "-D", "-f", str(config), "-E", str(log)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            processes.append(process)
            _wait_listening(group, port, process, log)
    except BaseException:
        for process in processes:
            process.kill()
        raise
    return SshServer(root=root, addresses=tuple(addresses), port=port, user=getpass.getuser(), user_key=user_key,
                     host_key=tuple(host_key), processes=processes, log=log)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """One real sshd for the session, on 127.0.0.2 … 127.0.0.28."""
    if not Path(SSHD).exists() or shutil.which("ssh-keygen") is None:
        pytest.fail("openssh-server is not installed: run scripts/test, which installs it")
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@dataclass
class RackRun:
    """A finished `opsctl burnin` of a simulated rack over ssh: its exit code, output and folder."""

    code: int
    out: str
    err: str
    run: Path
    inventory: Path

    def summary(self):
        import json

        return json.loads((self.run / "summary.json").read_text())


def burnin_over_ssh(server, root, scenario, *args, timeout=600):
    """Burn in a whole simulated NVL72 rack whose 27 trays are this server's addresses."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    known_hosts = server.write_known_hosts(root / "known_hosts")
    inventory = server.inventory(root / "inventory.yaml", scenario=scenario, known_hosts=known_hosts)
    run = root / "run"
    process = subprocess.run([sys.executable, "-m", "opsctl", "--inventory", str(inventory), "burnin", "rack07",
                              "--out", str(run), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    return RackRun(process.returncode, process.stdout, process.stderr, run, inventory)


@pytest.fixture(scope="session")
def rack07_over_ssh(sshd, tmp_path_factory):
    """rack07 with its seeded faults, burned in over ssh once for the session. 16 s of load a tray:
    the hot GPU throttles only after 3 s of sustained GEMM (the GEMM gets 4/6 of the load), and
    the trays share one timeline on which the flapping link drops every 15 s, so every tray's
    window sees it drop once."""
    scenario = Path(__file__).resolve().parent.parent / "opsctl" / "data" / "scenarios" / "rack07-seeded.yaml"
    return burnin_over_ssh(sshd, tmp_path_factory.mktemp("rack07-ssh"), scenario, "--duration", 16)
