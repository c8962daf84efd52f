"""`python -m probes … --stop-on-stdin-eof`, as a real process: stdin closing is a hang-up, and
the probe stops at once with exit 3 and one line saying so; stdin held open changes nothing;
without the option, a closed stdin changes nothing (a probe run by hand behaves as before)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

OPTION = "--stop-on-stdin-eof"
PROMPTLY_S = 15.0  # a ten-minute load must end well within this once stdin closes


@pytest.fixture(scope="module")
def spec_line(tmp_path_factory):
    """rack07's simulator spec as the fan-out sends it on stdin: one line of JSON (~130 kB)."""
    from opsctl.backend import on_one_timeline, sim_spec_for
    from opsctl.inventory import load_inventory

    spec = on_one_timeline(sim_spec_for(load_inventory().rack("rack07"))).to_dict()
    line = json.dumps(spec).encode() + b"\n"
    assert line.count(b"\n") == 1 and len(line) > 65536  # more than a pipe holds at once
    path = tmp_path_factory.mktemp("spec") / "spec.json"
    path.write_bytes(line)
    return line, path


def start(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE):
    return subprocess.Popen([sys.executable, "-m", "probes", *map(str, args)], stdin=subprocess.PIPE,
                            stdout=stdout, stderr=stderr)


def run_with_stdin_open(args, line, tmp_path):
    """Send the spec line, keep stdin open until the probe exits; (exit code, document, stderr).
    Output goes to files: waiting on a probe whose full stdout pipe nobody reads would never end."""
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        process = start(*args, stdout=out, stderr=err)
    process.stdin.write(line)
    process.stdin.flush()
    try:
        code = process.wait(timeout=120)
    finally:
        process.stdin.close()
    text = (tmp_path / "out").read_text()
    return code, (json.loads(text) if text.strip() else None), (tmp_path / "err").read_text()


def hang_up_after(process, seconds, send=b""):
    """Send `send`, hold stdin open for `seconds`, close it; (exit code, stdout, stderr, seconds
    from the close to the exit)."""
    if send:
        process.stdin.write(send)
        process.stdin.flush()
    time.sleep(seconds)
    assert process.poll() is None, process.communicate()  # still working when the hang-up comes
    closed = time.monotonic()
    out, err = process.communicate(timeout=60)  # closes stdin, then waits
    return process.returncode, out.decode(), err.decode(), time.monotonic() - closed


def assert_hung_up(code, out, err, took):
    assert code == 3, err
    assert took < PROMPTLY_S, f"the probe took {took:.1f} s to stop after its stdin closed"
    assert out == ""  # no one is left to read a document
    [line] = [line for line in err.splitlines() if line.strip()]
    assert "hung up" in line and OPTION in line and "incomplete" in line and "Traceback" not in err


@pytest.mark.slow
def test_a_run_stops_when_stdin_closes_after_the_spec(spec_line):
    line, _ = spec_line
    process = start("run", "--backend", "sim", "--sim-spec", "-", "--tray", "ct01", "--duration", "600", "--json", OPTION)
    assert_hung_up(*hang_up_after(process, 3.0, send=line))  # into the GEMM by then


@pytest.mark.slow
def test_a_snapshot_stops_in_its_window_when_stdin_closes(spec_line):
    line, _ = spec_line
    process = start("snapshot", "--backend", "sim", "--sim-spec", "-", "--tray", "ct02", "--window", "600", "--json",
                    OPTION)
    assert_hung_up(*hang_up_after(process, 3.0, send=line))


@pytest.mark.slow
def test_a_switch_tray_run_with_its_spec_in_a_file_stops_when_stdin_closes(spec_line):
    _, path = spec_line
    process = start("run", "--backend", "sim", "--sim-spec", path, "--tray", "st1", "--duration", "600", "--json", OPTION)
    assert_hung_up(*hang_up_after(process, 2.0))


def test_a_spec_cut_off_before_its_end_of_line_is_a_hang_up(spec_line):
    line, _ = spec_line
    process = start("run", "--backend", "sim", "--sim-spec", "-", "--tray", "ct01", "--duration", "600", "--json", OPTION)
    process.stdin.write(line[:5000])
    out, err = process.communicate(timeout=60)
    assert process.returncode == 3 and out == b""
    assert b"before its end of line" in err and b"hung up" in err


@pytest.mark.slow
def test_with_stdin_held_open_the_run_ends_as_it_always_did(spec_line, tmp_path):
    line, _ = spec_line
    code, document, err = run_with_stdin_open(
        ["run", "--backend", "sim", "--sim-spec", "-", "--tray", "ct03", "--duration", "1", "--json", OPTION], line, tmp_path)
    assert code in (0, 1), err
    assert document["kind"] == "run" and document["tray"] == "ct03" and document["status"] == "complete"
    assert "hung up" not in err


@pytest.mark.slow
def test_the_collective_reads_its_spec_line_and_honours_the_option(spec_line, tmp_path):
    line, _ = spec_line
    code, document, err = run_with_stdin_open(
        ["collective", "--backend", "sim", "--sim-spec", "-", "--tray", "ct01", "--nodes", "1", "--node-rank", "0",
         "--json", OPTION], line, tmp_path)  # a job of one tray: it really runs, with no peer to wait for
    assert code in (0, 1), err
    assert document["kind"] == "collective" and document["tray"] == "ct01"


@pytest.mark.slow
def test_without_the_option_a_closed_stdin_changes_nothing(spec_line):
    """By hand, or any caller that sends the spec and closes stdin: the spec is all of stdin, and
    the probe runs to its end."""
    line, _ = spec_line
    pretty = json.dumps(json.loads(line), indent=1).encode()  # several lines: fine without the option
    process = subprocess.run([sys.executable, "-m", "probes", "snapshot", "--backend", "sim", "--sim-spec", "-",
                              "--tray", "ct02", "--window", "1", "--json"], input=pretty, capture_output=True,
                             timeout=120)
    assert process.returncode == 0, process.stderr
    document = json.loads(process.stdout)
    assert document["kind"] == "snapshot" and 1.0 <= document["window_seconds"] < 10 and len(document["links"]) == 72


@pytest.mark.slow
def test_without_the_option_stdin_is_not_watched(spec_line):
    _, path = spec_line
    process = subprocess.Popen([sys.executable, "-m", "probes", "run", "--backend", "sim", "--sim-spec", path,
                                "--tray", "ct01", "--duration", "600", "--json"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(4.0)
        assert process.poll() is None, process.stderr.read()  # stdin at EOF from the start, and still working
    finally:
        process.kill()
        process.communicate()


@pytest.mark.slow
def test_a_collective_node_stops_with_its_rank_processes(tmp_path):
    """For real over gloo on the CPU: a node whose peer never comes waits in the rendezvous with a
    process per rank; the hang-up ends the node and its ranks."""
    pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test installs the CPU wheel)")
    from tests.conftest import free_port
    from tests.test_fanout_hangup import _alive, _cmdline, _descendants

    with open(tmp_path / "err", "wb") as err:
        process = start("collective", "--device", "cpu", "--nodes", 2, "--node-rank", 1, "--gpus-per-node", 2,
                        "--master-port", free_port(), "--size-mb", 1, "--rendezvous-timeout", 300, "--json", OPTION,
                        stderr=err)
    ranks = {}
    try:
        deadline = time.monotonic() + 120
        while len(ranks) < 2 and time.monotonic() < deadline and process.poll() is None:
            ranks = {pid: cmd for pid in _descendants({process.pid}) if b"spawn_main" in (cmd := _cmdline(pid))}
            time.sleep(0.2)
        assert len(ranks) == 2, (tmp_path / "err").read_text()
        time.sleep(1.0)
        closed = time.monotonic()
        out, _ = process.communicate(timeout=60)
        assert process.returncode == 3 and out == b"" and time.monotonic() - closed < PROMPTLY_S
        assert "hung up" in (tmp_path / "err").read_text()
        deadline = time.monotonic() + 10
        while any(_alive(pid, cmd) for pid, cmd in ranks.items()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid, cmd) for pid, cmd in ranks.items()), "rank processes outlived the hang-up"
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        for pid, cmd in ranks.items():
            if _alive(pid, cmd):
                os.kill(pid, signal.SIGKILL)
