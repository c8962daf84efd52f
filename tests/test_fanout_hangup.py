"""A stopped or dead opsctl leaves no probe behind on its trays. Over ssh (a real sshd on
loopback, no pty) closing the session does not signal the remote command, and a probe prints
only at its end, so it would burn on; it stops because opsctl holds its stdin open and the
probe (`--stop-on-stdin-eof`) ends at EOF. The same for local probes when opsctl is SIGKILLed.

Each test finds the probe processes it caused by their place in the process tree (children of
this session's sshd, or of the opsctl process it started) and checks, by pid and command line,
that they are gone or dead (a zombie whose parent has not reaped it yet counts as dead)."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from opsctl.fanout import FanoutOptions, run_on_trays
from opsctl.inventory import load_inventory

pytestmark = pytest.mark.slow  # simulated runs or real processes: seconds a test

LONG_RUN = ["run", "--duration", "600", "--json"]
LONG_SNAPSHOT = ["snapshot", "--window", "600", "--json"]
GONE_WITHIN_S = 10.0
FOUND_WITHIN_S = 60.0

# What a test's opsctl runs in its own process, so that the test can SIGKILL it.
FANOUT_SCRIPT = textwrap.dedent("""
    import sys
    from opsctl.fanout import FanoutOptions, run_on_trays
    from opsctl.inventory import load_inventory

    inventory, workdir, *trays = sys.argv[1:]
    rack = load_inventory(inventory if inventory != "-" else None).rack("rack07")
    run_on_trays(rack, ["run", "--duration", "600", "--json"], trays=trays, workdir=workdir,
                 options=FanoutOptions(run_timeout_s=900))
""")


# --- the process tree, from /proc ---------------------------------------------------------------------
def _stat(pid):
    """(state, parent pid) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "
    return fields[0], int(fields[1])


def _cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _descendants(roots):
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                parents[int(entry.name)] = stat[1]
    found, frontier = set(), set(roots)
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _is_probe(cmdline):
    return b"\0-m\0probes\0" in cmdline


def _probes_under(roots):
    """{pid: command line} of the `python -m probes` processes below these processes."""
    return {pid: cmd for pid in _descendants(roots) if _is_probe(cmd := _cmdline(pid)) and _alive(pid, cmd)}


def _alive(pid, cmdline):
    """Still running: there, not a zombie, and the same command (not a reused pid)."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X") and _cmdline(pid) == cmdline


def _wait_for_probes(roots, count):
    deadline = time.monotonic() + FOUND_WITHIN_S
    while time.monotonic() < deadline:
        found = _probes_under(roots)
        if len(found) >= count:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{count} probe process(es) never started under {roots}; found {_probes_under(roots)}")


def _still_running_after(probes, seconds):
    deadline = time.monotonic() + seconds
    while True:
        running = {pid: cmd for pid, cmd in probes.items() if _alive(pid, cmd)}
        if not running or time.monotonic() >= deadline:
            return running
        time.sleep(0.1)


@pytest.fixture
def leftovers():
    """Probes a test found; any still running when it ends are killed (a failed test must not
    leave a ten-minute burn-in behind)."""
    found = {}
    yield found
    for pid, cmd in found.items():
        if _alive(pid, cmd):
            os.kill(pid, signal.SIGKILL)


def _ssh_rack(sshd, tmp_path, trays):
    known = sshd.write_known_hosts(tmp_path / "known_hosts")
    return load_inventory(sshd.inventory(tmp_path / "inventory.yaml", trays=trays, known_hosts=known)).rack("rack07")


def _sshd_pids(sshd):
    return {process.pid for process in sshd.processes}


def _in_background(function):
    box = {}
    thread = threading.Thread(target=lambda: box.update(value=function()), daemon=True)
    thread.start()
    return thread, box


# --- over ssh -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("probe_args", [LONG_RUN, LONG_SNAPSHOT], ids=["run", "snapshot"])
def test_stopping_the_fanout_ends_the_remote_probes(sshd, tmp_path, leftovers, probe_args):
    """What Ctrl-C does: the runner's `stop` is set; opsctl closes the sessions, and the remote
    probes, told nothing else, end because their stdin closed."""
    rack = _ssh_rack(sshd, tmp_path, ["ct01", "st1"])
    stop = threading.Event()
    thread, box = _in_background(lambda: run_on_trays(rack, probe_args, workdir=tmp_path, stop=stop,
                                                      options=FanoutOptions(run_timeout_s=900)))
    leftovers.update(_wait_for_probes(_sshd_pids(sshd), 2))
    time.sleep(2.0)  # into the load, or the window
    stop.set()
    thread.join(timeout=30)
    assert not thread.is_alive(), "the fan-out did not return after stop"
    results = box["value"]
    assert [r.status for r in results] == ["incomplete", "incomplete"]
    assert all(r.interrupted and r.reason == "interrupted: stopped by the user" and r.exit_code is None
               for r in results)
    assert _still_running_after(leftovers, GONE_WITHIN_S) == {}, "remote probes still running after stop"


def test_a_remote_probe_past_its_run_timeout_is_ended(sshd, tmp_path, leftovers):
    rack = _ssh_rack(sshd, tmp_path, ["ct01"])
    thread, box = _in_background(lambda: run_on_trays(rack, LONG_RUN, workdir=tmp_path,
                                                      options=FanoutOptions(run_timeout_s=5)))
    leftovers.update(_wait_for_probes(_sshd_pids(sshd), 1))
    thread.join(timeout=60)
    [result] = box["value"]
    assert result.status == "incomplete" and not result.interrupted and result.exit_code is None
    assert "ran past its 5 s run timeout and was stopped" in result.reason
    assert _still_running_after(leftovers, GONE_WITHIN_S) == {}, "remote probe still running after the timeout"


def _start_fanout_process(tmp_path, inventory, trays):
    script = tmp_path / "fanout.py"
    script.write_text(FANOUT_SCRIPT)
    return subprocess.Popen([sys.executable, str(script), str(inventory), str(tmp_path / "work"), *trays],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            cwd=Path(__file__).resolve().parent.parent)


def _kill_fanout_process(process):
    process.send_signal(signal.SIGKILL)  # opsctl itself, nothing else: it gets no chance to tidy up
    _, err = process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL, err.decode(errors="replace")[-2000:]


def test_a_sigkilled_opsctl_leaves_no_remote_probe(sshd, tmp_path, leftovers):
    """opsctl dies (SIGKILL, a laptop that lost its network): the kernel closes its TCP
    connections, sshd ends the sessions, and the probes see their stdin close."""
    known = sshd.write_known_hosts(tmp_path / "known_hosts")
    inventory = sshd.inventory(tmp_path / "inventory.yaml", trays=["ct01", "ct02"], known_hosts=known)
    process = _start_fanout_process(tmp_path, inventory, ["ct01", "ct02"])
    try:
        leftovers.update(_wait_for_probes(_sshd_pids(sshd), 2))
        time.sleep(2.0)
    finally:
        _kill_fanout_process(process)
    assert _still_running_after(leftovers, GONE_WITHIN_S) == {}, "remote probes outlived the opsctl that started them"


# --- local ----------------------------------------------------------------------------------------------
def test_a_sigkilled_opsctl_leaves_no_local_probe(tmp_path, leftovers):
    """Local probes run in their own sessions (Ctrl-C reaches opsctl alone), so nothing signals
    them when opsctl dies; the pipe opsctl held as their stdin closes, and they end."""
    process = _start_fanout_process(tmp_path, "-", ["ct01", "ct02"])  # the default inventory: local trays
    try:
        leftovers.update(_wait_for_probes({process.pid}, 2))
        time.sleep(2.0)
    finally:
        _kill_fanout_process(process)
    assert _still_running_after(leftovers, GONE_WITHIN_S) == {}, "local probes outlived the opsctl that started them"


def test_stopping_the_local_fanout_still_ends_its_probes(tmp_path, leftovers):
    """The local transport's own stop (SIGTERM, then SIGKILL, to the probe's group) still works
    with the stdin pipe held open."""
    rack = load_inventory().rack("rack07")
    stop = threading.Event()
    thread, box = _in_background(lambda: run_on_trays(rack, LONG_RUN, trays=["ct01"], workdir=tmp_path, stop=stop))
    leftovers.update(_wait_for_probes({os.getpid()}, 1))
    time.sleep(1.0)
    stop.set()
    thread.join(timeout=30)
    [result] = box["value"]
    assert result.interrupted and result.reason == "interrupted: stopped by the user"
    assert _still_running_after(leftovers, GONE_WITHIN_S) == {}
