"""Trays reached as operators reach them: through a bastion, by the user's ssh_config (Host
aliases, User, Port, IdentityFile, ProxyJump), against real sshd servers on loopback. The tray's
sshd lives in a network namespace of its own that only the bastion's forwarding reaches
(tests/sshd.py, start_behind_bastion); every hop's host key is verified."""

import json
import os
import subprocess
import sys
import threading

import pytest

from opsctl.errors import InputError
from opsctl.fanout.ssh import SshTransport
from opsctl.fanout.ssh_config import load_ssh_config
from opsctl.fanout.transport import TrayUnreachable
from opsctl.inventory import Tray
from tests.sshd import start_behind_bastion


@pytest.fixture(scope="module")
def jump_hosts(tmp_path_factory):
    """The bastion and the tray behind it, started once for the module, and an ssh_config for them."""
    root = tmp_path_factory.mktemp("jump-hosts")
    servers = start_behind_bastion(root / "servers")
    config = root / "ssh_config"
    config.write_text(f"""Host bastion
    HostName {servers.bastion_address}
    Port {servers.bastion_port}
    User {_me()}
    IdentityFile {servers.bastion_key}

Host hgx-tray
    HostName 127.0.0.1
    Port {servers.tray_port}
    User {_me()}
    IdentityFile {servers.tray_key}
    ProxyJump bastion

Host hgx-tray-direct
    HostName 127.0.0.1
    Port {servers.tray_port}
    IdentityFile {servers.tray_key}
""")
    servers.ssh_config = config
    yield servers
    servers.stop()


def _me():
    import getpass

    return getpass.getuser()


def _tray(address):
    return Tray(name="node", host="srv1", address=address, port=None, user=None, key_file=None, python=sys.executable,
                is_switch=False)


def _transport(jump_hosts, known_hosts, **kwargs):
    return SshTransport(known_hosts=str(known_hosts), ssh_config=str(jump_hosts.ssh_config), connect_timeout_s=5, **kwargs)


@pytest.mark.slow
def test_a_tray_behind_a_bastion_is_burned_in_from_the_users_ssh_config(jump_hosts, tmp_path):
    """~/.ssh/config and ~/.ssh/known_hosts of a user whose login name is not the one the file
    gives: the alias's User, Port and IdentityFile, and the bastion's, are what logs in."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(jump_hosts.ssh_config.read_text())
    jump_hosts.known_hosts(home / ".ssh" / "known_hosts")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("all:\n  children:\n    srv1:\n      vars:\n        opsctl_model: hgx-h100\n"
                         "        opsctl_transport: ssh\n        opsctl_backend: sim\n"
                         f"        opsctl_python: {sys.executable}\n"
                         "      hosts:\n        srv1: {ansible_host: hgx-tray}\n")
    env = {**os.environ, "HOME": str(home), "USER": "no-such-user", "LOGNAME": "no-such-user"}
    run = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "opsctl", "--inventory", str(inventory), "burnin", "srv1", "--duration", "1",
                           "--no-ledger", "--out", str(run)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["verdict"] == "PASS" and summary["transport"] == "ssh"
    assert [t["status"] for t in summary["trays"]] == ["complete"]
    # The tray is not reachable but through the bastion.
    with pytest.raises(TrayUnreachable, match="connection refused"):
        _transport(jump_hosts, home / ".ssh" / "known_hosts").connect(_tray("hgx-tray-direct"))


@pytest.mark.parametrize("hop", ["bastion", "tray"])
def test_a_changed_host_key_at_either_hop_is_refused_with_its_fingerprint(jump_hosts, tmp_path, hop):
    known = jump_hosts.known_hosts(tmp_path / "known_hosts", wrong=(hop,))
    with pytest.raises(TrayUnreachable) as refused:
        _transport(jump_hosts, known, accept_new_host_keys=True).connect(_tray("hgx-tray"))
    message = str(refused.value)
    assert "is not the one in" in message and jump_hosts.fingerprint(hop) in message
    assert ("jump host" in message) == (hop == "bastion")


@pytest.mark.parametrize("hop", ["bastion", "tray"])
def test_an_unknown_host_key_at_either_hop_is_refused_and_nothing_learned(jump_hosts, tmp_path, hop):
    known = jump_hosts.known_hosts(tmp_path / "known_hosts", **{hop: False})
    before = known.read_text()
    with pytest.raises(TrayUnreachable, match="is not in .*refused") as refused:
        _transport(jump_hosts, known).connect(_tray("hgx-tray"))
    assert jump_hosts.fingerprint(hop) in str(refused.value)
    assert known.read_text() == before


def test_accepting_new_keys_records_both_hops(jump_hosts, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    hops = _transport(jump_hosts, known, accept_new_host_keys=True).connect(_tray("hgx-tray"))
    for hop in reversed(hops):
        hop.client.close()
    assert sorted(known.read_text().splitlines()) == sorted(jump_hosts.known_hosts(tmp_path / "both").read_text().splitlines())


def test_two_jump_hosts_are_visited_in_openssh_order(jump_hosts, sshd, tmp_path):
    """`ProxyJump first,bastion`: the loopback sshd first, then the bastion through it, then the
    tray. The other order fails: the bastion cannot reach the first jump host from its namespace."""
    config = tmp_path / "ssh_config"
    config.write_text(jump_hosts.ssh_config.read_text().replace("    ProxyJump bastion", "    ProxyJump first,bastion")
                      + f"\nHost first\n    HostName {sshd.addresses[0]}\n    Port {sshd.port}\n    IdentityFile {sshd.user_key}\n")
    known = tmp_path / "known_hosts"
    known.write_text(jump_hosts.known_hosts(tmp_path / "two").read_text() + sshd.known_hosts_line(sshd.addresses[0]))
    transport = SshTransport(known_hosts=str(known), ssh_config=str(config), connect_timeout_s=5)
    hops = transport.connect(_tray("hgx-tray"))
    try:
        assert [(h.host, h.port) for h in hops] == [(sshd.addresses[0], sshd.port), (jump_hosts.bastion_address, jump_hosts.bastion_port),
                                                  ("127.0.0.1", jump_hosts.tray_port)]
        completed = transport.run(_tray("hgx-tray"), ["--help"], None, 60, threading.Event())
        assert completed.exit_code == 0 and b"python -m probes" in completed.stdout
    finally:
        for hop in reversed(hops):
            hop.client.close()


def test_the_inventory_wins_over_the_file_for_the_tray(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host t1\n    HostName 10.0.0.5\n    User alice\n    Port 2222\n    ProxyJump bob@jump:2200\n")
    [jump, tray] = load_ssh_config(config).hops(Tray(name="node", host="srv1", address="t1", port=22, user="ops",
                                                     key_file=None, python="python3", is_switch=False))
    assert (tray.host, tray.user, tray.port) == ("10.0.0.5", "ops", 22)
    assert (jump.host, jump.user, jump.port) == ("jump", "bob", 2200)


@pytest.mark.parametrize("text, message", [
    ("Host t1\n    ProxyCommand nc %h %p\n", "ProxyCommand"),
    ("Host t1\n    ProxyJump a\nHost a\n    ProxyJump b\nHost b\n    ProxyJump a\n", "ProxyJump loop"),
])
def test_what_the_fanout_will_not_follow_is_bad_input(tmp_path, text, message):
    config = tmp_path / "ssh_config"
    config.write_text(text)
    with pytest.raises(InputError, match=message):
        load_ssh_config(config).hops(_tray("t1"))


def test_proxyjump_none_and_no_file(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host t1\n    ProxyJump none\nHost *\n    ProxyJump bastion\n")
    assert [h.host for h in load_ssh_config(config).hops(_tray("t1"))] == ["t1"]
    assert [h.host for h in load_ssh_config(config).hops(_tray("t2"))] == ["bastion", "t2"]
    with pytest.raises(InputError, match="no such file"):
        load_ssh_config(tmp_path / "missing")


@pytest.mark.slow
def test_stopping_the_fanout_ends_a_probe_behind_the_bastion(jump_hosts, tmp_path):
    """The hang-up as ever: opsctl closes the tray's session, then the bastion's; the probe, told
    nothing else, ends because its stdin closed."""
    from opsctl.fanout import FanoutOptions, run_on_trays
    from opsctl.inventory import load_inventory
    from tests.test_fanout_hangup import GONE_WITHIN_S, _still_running_after, _wait_for_probes

    known = jump_hosts.known_hosts(tmp_path / "known_hosts")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("all:\n  children:\n    srv1:\n      vars:\n        opsctl_model: hgx-h100\n"
                         "        opsctl_transport: ssh\n        opsctl_backend: sim\n"
                         f"        opsctl_python: {sys.executable}\n        opsctl_known_hosts: {known}\n"
                         f"        opsctl_ssh_config: {jump_hosts.ssh_config}\n"
                         "      hosts:\n        srv1: {ansible_host: hgx-tray}\n")
    rack = load_inventory(inventory).rack("srv1")
    stop = threading.Event()
    box = {}
    thread = threading.Thread(target=lambda: box.update(value=run_on_trays(
        rack, ["run", "--duration", "600", "--json"], workdir=tmp_path, stop=stop, options=FanoutOptions(run_timeout_s=900))))
    thread.start()
    probes = _wait_for_probes({jump_hosts.tray.pid}, 1)
    try:
        stop.set()
        thread.join(timeout=30)
        [result] = box["value"]
        assert result.interrupted and result.reason == "interrupted: stopped by the user"
        assert _still_running_after(probes, GONE_WITHIN_S) == {}, "the probe behind the bastion still runs after stop"
    finally:
        for pid in _still_running_after(probes, 0):
            os.kill(pid, 9)
