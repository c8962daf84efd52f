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


# --- a tray behind a bastion ----------------------------------------------------------------------------
@dataclass
class BehindBastion:
    """A tray sshd that only a bastion reaches, and that bastion, both real OpenSSH servers.

    The tray listens on 127.0.0.1:`tray_port` inside a network namespace of its own (`unshare -n`),
    so nothing outside it — opsctl included — can connect to it. The bastion is reached on
    loopback at `bastion_address`:`bastion_port`: each connection there is handed to `sshd -i`
    (inetd mode) started inside the tray's namespace, so the bastion's direct-tcpip forwarding, and
    only it, reaches the tray. Each has its own host key and its own user key (`tray_key`,
    `bastion_key`): the tray accepts only its key, the bastion only its own."""

    root: Path
    bastion_address: str
    bastion_port: int
    tray_port: int
    bastion_key: Path
    tray_key: Path
    bastion_host_key: tuple
    tray_host_key: tuple
    tray: subprocess.Popen
    listener: socket.socket
    log: Path

    def known_hosts(self, path, bastion=True, tray=True, wrong=()):
        """Trust the bastion and the tray (or not); those named in `wrong` ("bastion", "tray") are
        listed with another key, as if their key had changed."""
        other = _keygen(Path(path).with_name(Path(path).name + ".other-key"), "someone-else") if wrong else None
        lines = []
        for name, where, key in (("bastion", f"[{self.bastion_address}]:{self.bastion_port}", self.bastion_host_key),
                                 ("tray", f"[127.0.0.1]:{self.tray_port}", self.tray_host_key)):
            if name in wrong:
                lines.append(f"{where} {other[0]} {other[1]}\n")
            elif {"bastion": bastion, "tray": tray}[name]:
                lines.append(f"{where} {key[0]} {key[1]}\n")
        Path(path).write_text("".join(lines))
        return Path(path)

    def fingerprint(self, which):
        """The SHA256 fingerprint ssh-keygen prints for the bastion's or the tray's host key."""
        out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(self.root / f"{which}_host_ed25519.pub")],
                             check=True, capture_output=True, text=True).stdout
        return out.split()[1]

    def stop(self):
        self.listener.close()
        if self.tray.poll() is None:
            self.tray.terminate()
        try:
            self.tray.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.tray.kill()
            self.tray.wait()


def _server_config(root, name, port, listen=None):
    lines = [f"HostKey {root / f'{name}_host_ed25519'}", f"AuthorizedKeysFile {root / f'{name}_authorized_keys'}",
             "PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
             "StrictModes no", "PermitRootLogin prohibit-password", "MaxStartups 200", "MaxSessions 64", "LogLevel VERBOSE",
             f"PidFile {root / f'{name}.pid'}", f"Port {port}"]
    if listen:
        lines.append(f"ListenAddress {listen}")
    if name == "bastion":  # a jump host: forwarding only, to the tray and nowhere else
        lines += ["AllowTcpForwarding yes", f"PermitOpen 127.0.0.1:{port}"]
    config = root / f"{name}_sshd_config"
    config.write_text("\n".join(lines) + "\n")
    return config


def start_behind_bastion(root, bastion_address="127.0.0.50"):
    import threading

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    host_keys, user_keys = {}, {}
    for name in ("bastion", "tray"):
        host_keys[name] = tuple(_keygen(root / f"{name}_host_ed25519", f"opsctl-test-{name}-host"))
        kind, blob = _keygen(root / f"{name}_user_ed25519", f"opsctl-test-{name}-user")
        (root / f"{name}_authorized_keys").write_text(f"{kind} {blob} opsctl-test-{name}-user\n")
        user_keys[name] = root / f"{name}_user_ed25519"
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    tray_port = _free_port("127.0.0.1")  # free here too: a direct try finds nothing, not another server
    log = root / "sshd.log"
    tray_config = _server_config(root, "tray", tray_port, listen="127.0.0.1")
    tray = subprocess.Popen(["unshare", "--net", "sh", "-c", f'ip link set lo up && exec {SSHD} -D -f "$1" -E "$2"', "sh",
                             str(tray_config), str(log)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    namespace = f"/proc/{tray.pid}/ns/net"
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not (log.exists() and "Server listening" in log.read_text()):
        if tray.poll() is not None or time.monotonic() > deadline:
            tray.kill()
            raise RuntimeError(f"the tray's sshd did not start in its namespace: {tray.stderr.read().decode()[-2000:]} "
                               f"{log.read_text()[-2000:] if log.exists() else ''}")
        time.sleep(0.05)
    bastion_config = _server_config(root, "bastion", tray_port)
    listener = socket.socket()
    listener.bind((bastion_address, 0))
    listener.listen(64)

    def serve():  # inetd: one `sshd -i` per connection, inside the tray's namespace
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                subprocess.Popen(["nsenter", f"--net={namespace}", SSHD, "-i", "-f", str(bastion_config), "-E", str(log)],
                                 stdin=connection, stdout=connection, stderr=subprocess.DEVNULL)

    threading.Thread(target=serve, daemon=True).start()
    return BehindBastion(root=root, bastion_address=bastion_address, bastion_port=listener.getsockname()[1],
                         tray_port=tray_port, bastion_key=user_keys["bastion"], tray_key=user_keys["tray"],
                         bastion_host_key=host_keys["bastion"], tray_host_key=host_keys["tray"], tray=tray,
                         listener=listener, log=log)
