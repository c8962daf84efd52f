"""The ssh transport against a real sshd on loopback: host keys verified, unknown or changed keys
refused, unreachable and silent hosts reported incomplete with the reason."""

import socket
import threading

import pytest

from opsctl.errors import InputError
from opsctl.fanout import FanoutOptions, run_on_trays
from opsctl.inventory import load_inventory

SNAPSHOT = ["snapshot", "--window", "1", "--json"]


def _rack(sshd, tmp_path, **kwargs):
    return load_inventory(sshd.inventory(tmp_path / "inventory.yaml", **kwargs)).rack("rack07")


def _by_tray(results):
    return {r.tray: r for r in results}


@pytest.mark.slow
def test_an_unknown_host_key_is_refused(sshd, tmp_path):
    known = sshd.write_known_hosts(tmp_path / "known_hosts", sshd.addresses[:1])  # trusts ct01 only
    before = known.read_text()
    rack = _rack(sshd, tmp_path, trays=["ct01", "ct02"], known_hosts=known)
    result = _by_tray(run_on_trays(rack, SNAPSHOT, workdir=tmp_path))["ct02"]
    assert result.status == "incomplete" and result.exit_code is None and result.document is None
    assert "not in" in result.reason and "refused" in result.reason and str(known) in result.reason
    assert known.read_text() == before  # nothing learned without the user's say-so


def test_a_changed_host_key_is_refused_even_when_new_keys_are_accepted(sshd, tmp_path):
    known = sshd.write_known_hosts(tmp_path / "known_hosts", sshd.addresses[:1], wrong=[sshd.addresses[0]])
    rack = _rack(sshd, tmp_path, trays=["ct01"], known_hosts=known)
    [result] = run_on_trays(rack, SNAPSHOT, workdir=tmp_path, options=FanoutOptions(accept_new_host_keys=True))
    assert result.status == "incomplete" and "is not the one in" in result.reason


@pytest.mark.slow
def test_accepting_new_host_keys_records_them(sshd, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    rack = _rack(sshd, tmp_path, trays=["ct01", "ct02"], known_hosts=known)
    results = run_on_trays(rack, SNAPSHOT, workdir=tmp_path, options=FanoutOptions(accept_new_host_keys=True))
    assert all("host key" not in (r.reason or "") for r in results)
    recorded = known.read_text().splitlines()
    assert sorted(recorded) == sorted(sshd.known_hosts_line(a).strip() for a in sshd.addresses[:2])
    # Next time the recorded keys are trusted without the option.
    assert all("host key" not in (r.reason or "") for r in run_on_trays(rack, SNAPSHOT, workdir=tmp_path))


@pytest.fixture
def silent_host():
    """A TCP port that accepts connections and never speaks SSH."""
    server = socket.socket()
    server.bind(("127.0.0.30", 0))
    server.listen(8)
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


@pytest.mark.slow
def test_refused_and_silent_hosts_are_incomplete_with_the_reason(sshd, tmp_path, silent_host):
    known = sshd.write_known_hosts(tmp_path / "known_hosts")
    inventory = sshd.inventory(tmp_path / "inventory.yaml", trays=["ct01", "ct02"], known_hosts=known,
                               extra_hosts={"ct01": "127.0.0.29"})  # nothing listens there
    # ct02 is the silent host, on its own port.
    text = inventory.read_text().replace("rack07-ct02: {ansible_host: '127.0.0.3'",
                                         f"rack07-ct02: {{ansible_port: {silent_host[1]}, ansible_host: '127.0.0.30'")
    inventory.write_text(text)
    rack = load_inventory(inventory).rack("rack07")
    results = _by_tray(run_on_trays(rack, SNAPSHOT, workdir=tmp_path, options=FanoutOptions(connect_timeout_s=1.0)))
    assert results["ct01"].status == "incomplete" and "connection refused" in results["ct01"].reason
    assert results["ct02"].status == "incomplete" and "no SSH answer within the 1 s connect timeout" in results["ct02"].reason


def test_the_remote_python_must_be_a_plain_path(sshd, tmp_path):
    inventory = sshd.inventory(tmp_path / "inventory.yaml", trays=["ct01"])
    inventory.write_text(inventory.read_text().replace("opsctl_python: ", "opsctl_python: 'x; rm -rf ~' #", 1))
    rack = load_inventory(inventory).rack("rack07")
    with pytest.raises(InputError, match="not a plain path"):
        run_on_trays(rack, SNAPSHOT, workdir=tmp_path)
