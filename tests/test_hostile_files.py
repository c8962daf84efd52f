"""Issue 28's hostile files: a path may name a FIFO, a device, a socket, a folder or a link to one.
opsctl reads only regular files (a FIFO never blocks, /dev/zero never floods), replaces only
regular files (a device survives any -o), bounds what a tray prints, and masks every secret of a
--db URL. Each refusal is exit 2 in one line, before anything is created."""

import contextlib
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from opsctl.errors import InputError
from tests.conftest import assert_one_line_error

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "llama3-70b-h100-bf16-64gpu-neocloud.yaml"


@contextlib.contextmanager
def deadline(seconds=20):
    """Fail, rather than hang the suite, when a FIFO blocks a read (the bug these tests guard)."""

    def expired(signum, frame):
        raise TimeoutError(f"no answer in {seconds} s: a FIFO or a device blocked a read")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def hostile(tmp_path):
    """A folder holding a FIFO, a socket, links to /dev/null, /dev/zero, /dev/urandom and the FIFO."""
    folder = tmp_path / "h"
    folder.mkdir()
    os.mkfifo(folder / "fifo")
    (folder / "null").symlink_to("/dev/null")
    (folder / "zero").symlink_to("/dev/zero")
    (folder / "urandom").symlink_to("/dev/urandom")
    (folder / "to-fifo").symlink_to(folder / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "sock"))
    yield folder
    sock.close()


def assert_untouched(folder):
    """The FIFO is a FIFO, the links still lead to their devices, and nothing new is there."""
    assert stat.S_ISFIFO(os.lstat(folder / "fifo").st_mode)
    assert stat.S_ISSOCK(os.lstat(folder / "sock").st_mode)
    for name, device in (("null", "/dev/null"), ("zero", "/dev/zero"), ("urandom", "/dev/urandom")):
        assert os.path.islink(folder / name) and os.readlink(folder / name) == device
        assert stat.S_ISCHR(os.stat(folder / name).st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert sorted(p.name for p in folder.iterdir()) == ["fifo", "null", "sock", "to-fifo", "urandom", "zero"]


# --- outputs: only a regular file (or a new path) is replaced ---------------------------------------
FILE_OUTPUTS = {
    "sim spec -o": ["sim", "spec", "hgx01", "-o", "{out}"],
    "snapshot -o": ["snapshot", "hgx01", "-o", "{out}"],
    "triage --save": ["triage", "hgx01", "--no-ledger", "--save", "{out}"],
    "ledger stats --plot": ["ledger", "stats", "--db", "sqlite:///{tmp}/l.sqlite", "--plot", "{out}"],
    "ledger export -o": ["ledger", "export", "--db", "sqlite:///{tmp}/l.sqlite", "-o", "{out}"],
}
FOLDER_OUTPUTS = {
    "burnin --out": ["burnin", "hgx01", "--no-ledger", "--out", "{out}"],
    "accept --out": ["accept", "hgx01", "--no-ledger", "--out", "{out}"],
    "exporter rules -o": ["exporter", "rules", "-o", "{out}"],
    "tco sensitivity --out": ["tco", "sensitivity", str(SCENARIO), "--out", "{out}"],
    "ledger export --format csv -o": ["ledger", "export", "--db", "sqlite:///{tmp}/l.sqlite", "--format", "csv", "-o", "{out}"],
    "fleet plan": ["fleet", "plan", "{out}", "--racks", "hgx01"],
}


def _argv(template, out, tmp_path):
    return [a.replace("{out}", str(out)).replace("{tmp}", str(tmp_path)) for a in template]


@pytest.mark.parametrize("target, what", [("fifo", "is a FIFO"), ("null", "(a link to /dev/null): is a character device"),
                                          ("sock", "is a socket"), ("to-fifo", "is a FIFO")])
@pytest.mark.parametrize("command", sorted(FILE_OUTPUTS))
def test_a_file_output_that_is_not_a_regular_file_is_refused_and_survives(opsctl, hostile, tmp_path, command, target, what):
    with deadline():
        line = assert_one_line_error(opsctl(*_argv(FILE_OUTPUTS[command], hostile / target, tmp_path)), 2,
                                     str(hostile / target), what, "not a regular file")
    assert "replaces only regular files" in line
    assert_untouched(hostile)
    assert not (tmp_path / "l.sqlite").exists()  # refused before the ledger was opened (or made)


@pytest.mark.parametrize("command", sorted(FILE_OUTPUTS))
def test_a_folder_as_a_file_output_is_refused(opsctl, hostile, tmp_path, command):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    with deadline():
        result = opsctl(*_argv(FILE_OUTPUTS[command], folder, tmp_path))
    assert_one_line_error(result, 2, str(folder))
    assert list(folder.iterdir()) == [] and not (tmp_path / "l.sqlite").exists()


@pytest.mark.parametrize("target", ["fifo", "null", "to-fifo", "sock"])
@pytest.mark.parametrize("command", sorted(FOLDER_OUTPUTS))
def test_a_folder_output_that_is_not_a_folder_is_refused(opsctl, hostile, tmp_path, command, target):
    with deadline():
        assert_one_line_error(opsctl(*_argv(FOLDER_OUTPUTS[command], hostile / target, tmp_path)), 2,
                              str(hostile / target), "not a folder")
    assert_untouched(hostile)
    assert not (tmp_path / "l.sqlite").exists()


def test_a_fifo_named_like_a_file_in_an_output_folder_is_refused_before_any_is_written(opsctl, tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    os.mkfifo(rules / "nvlink.yml")
    with deadline():
        assert_one_line_error(opsctl("exporter", "rules", "-o", rules), 2, "nvlink.yml: is a FIFO")
    assert [p.name for p in rules.iterdir()] == ["nvlink.yml"] and stat.S_ISFIFO(os.lstat(rules / "nvlink.yml").st_mode)
    os.mkfifo(tmp_path / "sweep.png")
    with deadline():
        assert_one_line_error(opsctl("tco", "sweep", SCENARIO, "--vary", "cluster.gpu_hour_cost=1:2:3", "--out",
                                     tmp_path / "sweep"), 2, "sweep.png: is a FIFO")
    assert not (tmp_path / "sweep.csv").exists()
    sensitivity = tmp_path / "sens"
    sensitivity.mkdir()
    os.mkfifo(sensitivity / f"{SCENARIO.stem}-tornado.png")
    with deadline():
        assert_one_line_error(opsctl("tco", "sensitivity", SCENARIO, "--out", sensitivity), 2, "tornado.png: is a FIFO")
    assert len(list(sensitivity.iterdir())) == 1


@pytest.mark.parametrize("target, what", [("fifo", "is a FIFO"), ("null", "(a link to /dev/null): is a character device"),
                                          ("sock", "is a socket")])
@pytest.mark.parametrize("argv", [["ledger", "incident", "rack07/ct03"], ["ledger", "stats"]])
def test_a_ledger_file_that_is_a_fifo_or_a_device_is_refused(opsctl, hostile, argv, target, what):
    with deadline():
        assert_one_line_error(opsctl(*argv, "--db", f"sqlite:///{hostile / target}"), 2, str(hostile / target), what,
                              "keeps a ledger only in a regular file")
    assert_untouched(hostile)


def test_the_atomic_writer_itself_replaces_only_regular_files(hostile, tmp_path):
    from opsctl.runs.atomic_file import write_bytes_atomic

    for name in ("fifo", "null", "to-fifo", "sock"):
        with pytest.raises(InputError, match="not a regular file; opsctl replaces only regular files"):
            write_bytes_atomic(hostile / name, b"x")
    assert_untouched(hostile)
    (tmp_path / "old.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "old.json")
    write_bytes_atomic(tmp_path / "link.json", b"new")  # a link to a regular file is replaced, as ever
    assert (tmp_path / "link.json").read_bytes() == b"new" and not (tmp_path / "link.json").is_symlink()


# --- inputs: only a regular file is read, within the cap of what is read ----------------------------
INPUT_TARGETS = [("fifo", "is a FIFO"), ("to-fifo", "is a FIFO"), ("zero", "(a link to /dev/zero): is a character device"),
                 ("urandom", "is a character device"), ("sock", "is a socket")]
FILE_INPUTS = {
    "inventory": ["-i", "{in}", "inventory", "list"],
    "tco scenario": ["tco", "run", "{in}"],
    "tco compare": ["tco", "compare", str(SCENARIO), "{in}"],
    "tco --mttr-config": ["tco", "run", str(SCENARIO), "--mttr-config", "{in}"],
    "criteria": ["accept", "hgx01", "--no-ledger", "--criteria", "{in}", "--out", "{tmp}/run"],
    "snapshot": ["localize", "{in}"],
    "ledger import": ["ledger", "import", "{in}", "--db", "sqlite:///{tmp}/l.sqlite"],
    "ledger record-triage": ["ledger", "record-triage", "{in}", "--db", "sqlite:///{tmp}/l.sqlite"],
    "ledger record-burnin": ["ledger", "record-burnin", "{in}", "--db", "sqlite:///{tmp}/l.sqlite"],
    "exporter --burnin-result": ["exporter", "--rack", "hgx01", "--port", "0", "--burnin-result", "{in}"],
}


@pytest.mark.parametrize("target, what", INPUT_TARGETS)
@pytest.mark.parametrize("command", sorted(FILE_INPUTS))
def test_an_input_that_is_not_a_regular_file_is_refused_at_once(opsctl, hostile, tmp_path, command, target, what):
    argv = [a.replace("{in}", str(hostile / target)).replace("{tmp}", str(tmp_path)) for a in FILE_INPUTS[command]]
    with deadline():
        line = assert_one_line_error(opsctl(*argv), 2, str(hostile / target), what, "not a regular file")
    assert "opsctl reads only regular files" in line
    assert_untouched(hostile)
    assert not (tmp_path / "l.sqlite").exists() and not (tmp_path / "run").exists()


def _inventory_naming(tmp_path, **rack_vars):
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump({"all": {"children": {"hgxh": {
        "vars": {"opsctl_model": "hgx-h100", "opsctl_backend": "sim", "opsctl_transport": "local", **rack_vars},
        "hosts": {"hgxh-node": None}}}}}))
    return path


@pytest.mark.parametrize("target, what", INPUT_TARGETS)
@pytest.mark.parametrize("variable, argv", [("opsctl_scenario", ["sim", "faults", "hgxh"]),
                                            ("opsctl_cabling_map", ["topology", "show", "hgxh"])])
def test_a_file_the_inventory_names_is_read_only_if_regular(opsctl, hostile, tmp_path, variable, argv, target, what):
    inventory = _inventory_naming(tmp_path, **{variable: str(hostile / target)})
    with deadline():
        assert_one_line_error(opsctl("-i", inventory, *argv), 2, str(hostile / target), what, "not a regular file")
    assert_untouched(hostile)


def test_a_file_in_an_imported_ledger_folder_is_read_only_if_regular(opsctl, tmp_path):
    export = tmp_path / "export"
    export.mkdir()
    os.mkfifo(export / "racks.csv")
    with deadline():
        assert_one_line_error(opsctl("ledger", "import", export, "--db", f"sqlite:///{tmp_path}/l.sqlite"), 2,
                              "racks.csv: is a FIFO")
    assert not (tmp_path / "l.sqlite").exists()


def test_the_cap_holds_for_what_is_read_not_what_stat_says(tmp_path):
    from opsctl.regular_files import read_regular_bytes

    assert os.stat("/proc/self/maps").st_size == 0  # a regular file that says it is empty, and is not
    with pytest.raises(InputError, match="more than 100 bytes; at most 100 bytes is read"):
        read_regular_bytes("/proc/self/maps", max_bytes=100)
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 2**20)
    assert len(read_regular_bytes(exact, max_bytes=2**20)) == 2**20  # the cap itself is read
    exact.write_bytes(b"x" * (2**20 + 1))
    with pytest.raises(InputError, match="more than 1 MiB; at most 1 MiB is read"):
        read_regular_bytes(exact, max_bytes=2**20)


def test_an_inventory_over_the_cap_is_refused_by_what_is_read(opsctl, tmp_path):
    from opsctl.yaml_input import MAX_WRITTEN_BYTES

    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_WRITTEN_BYTES + "\n")
    assert_one_line_error(opsctl("-i", big, "inventory", "list"), 2, "big.yaml: more than 4 MiB; at most 4 MiB is read")


def test_a_fifo_swapped_in_after_the_stat_is_refused_without_blocking(monkeypatch, hostile):
    """The open is O_NONBLOCK and fstat'ed: a FIFO put where a regular file was stat'ed never blocks."""
    import opsctl.regular_files as regular_files

    real_stat = os.stat
    regular = real_stat(__file__)
    monkeypatch.setattr(regular_files.os, "stat", lambda path, *a, **k: regular if str(path).endswith("fifo") else real_stat(path, *a, **k))
    with deadline(), pytest.raises(InputError, match="is a FIFO, not a regular file"):
        regular_files.read_regular_bytes(hostile / "fifo")


# --- a tray's output is bounded --------------------------------------------------------------------
ENDLESS_PROBE = "import sys\nchunk = b'x' * 65536\nwhile True:\n    sys.stdout.buffer.write(chunk)\n"


@pytest.fixture
def endless_probes(tmp_path):
    """A folder whose `probes` package prints without end: `python -m probes` run there finds it
    first (the current folder leads sys.path), so a local tray's probe is this one."""
    folder = tmp_path / "endless"
    (folder / "probes").mkdir(parents=True)
    (folder / "probes" / "__init__.py").write_text("")
    (folder / "probes" / "__main__.py").write_text(ENDLESS_PROBE)
    return folder


def test_a_probe_that_prints_without_end_is_stopped_at_the_cap_and_incomplete(monkeypatch, endless_probes, tmp_path):
    import opsctl.fanout.local as local
    from opsctl.fanout import run_on_trays
    from opsctl.inventory import load_inventory

    monkeypatch.setattr(local, "MAX_TRAY_OUTPUT_BYTES", 2**20)  # the same code path, a MiB instead of 64
    monkeypatch.chdir(endless_probes)
    with deadline(60):
        [result] = run_on_trays(load_inventory().rack("hgx01"), ["snapshot", "--json"], workdir=tmp_path)
    assert result.status == "incomplete" and result.tray == "node" and result.exit_code is None  # hgx01's one tray
    assert result.reason == "probe printed more than 1 MiB on stdout (the cap on a tray's output) and was stopped"
    assert result.stdout == b""


def test_an_endless_probe_makes_the_command_incomplete_naming_the_tray_and_the_cap(endless_probes, tmp_path):
    """A real `opsctl snapshot` (its own process, run under -P so that opsctl itself imports the real
    probes; its probe, run in the folder, is the endless one): the cheapest command that fans out."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPSCTL_INVENTORY", "PYTHONPATH")}
    process = subprocess.run([sys.executable, "-P", "-m", "opsctl", "snapshot", "hgx01", "-o", tmp_path / "s.json"],
                             cwd=endless_probes, capture_output=True, text=True, timeout=120, env=env)
    assert process.returncode == 3, process.stderr
    assert "not read: node: probe printed more than 64 MiB on stdout (the cap on a tray's output)" in process.stdout, process.stdout
    assert "Traceback" not in process.stderr


def test_stderr_keeps_its_last_mib(tmp_path):
    from opsctl.fanout.local import _Drain

    read, write = os.pipe()
    drain = _Drain(os.fdopen(read, "rb"), tail=1000)
    with os.fdopen(write, "wb") as pipe:
        for _ in range(100):
            pipe.write(b"y" * 999 + b"\n")
        pipe.write(b"the last line\n")
    data = drain.data()
    assert len(data) <= 2000 and data.endswith(b"the last line\n")


# --- secrets in a --db URL -------------------------------------------------------------------------
@pytest.mark.parametrize("url, shown, bare", [
    ("postgresql://u@h/db?sslpassword=S3cr3t", "postgresql://u@h/db?sslpassword=***", "postgresql://u@h/db"),
    ("postgresql://u@h/db?sslmode=require&sslpassword=S3cr3t&password=S3cr3t&x=1",
     "postgresql://u@h/db?sslmode=require&sslpassword=***&password=***&x=1", "postgresql://u@h/db?sslmode=require&x=1"),
    ("host=h sslpassword=S3cr3t password=a&S3cr3t dbname=l", "host=h sslpassword=*** password=*** dbname=l", "host=h dbname=l"),
    ("host=h sslpassword = 'S3 cr3t'", "host=h sslpassword = ***", "host=h"),
    ("postgresql://u@h/db?pass%77ord=S3cr3t&x=1", "postgresql://u@h/db?pass%77ord=***&x=1", "postgresql://u@h/db?x=1"),
    ("postgresql://u@h/db?SSLPASSWORD=S3cr3t", "postgresql://u@h/db?SSLPASSWORD=***", "postgresql://u@h/db"),
    ("postgresql://u:pa?ssS3cr3t@h/db", "postgresql://u:***@h/db", "postgresql://u@h/db"),
    ("postgresql://u:pa ssS3cr3t@h/db", "postgresql://u:***@h/db", "postgresql://u@h/db"),
    ("postgresql://u@h/db?sslmode=require", "postgresql://u@h/db?sslmode=require", "postgresql://u@h/db?sslmode=require"),
])
def test_every_secret_form_of_a_url_is_masked(url, shown, bare):
    from opsctl.ledger.database import redacted, without_password

    assert redacted(url) == shown and "S3cr3t" not in shown
    assert without_password(url) == bare


@pytest.mark.parametrize("url", ["postgresql://u@127.0.0.1:1/db?sslpassword=S3cr3t", "host=127.0.0.1 port=1 sslpassword=S3cr3t",
                                 "postgresql://u:pa?ssS3cr3t@127.0.0.1:1/db", "postgresql://u@127.0.0.1:1/db?pass%77ord=S3cr3t"])
def test_an_unreachable_ledger_prints_no_secret(opsctl, url):
    result = opsctl("ledger", "stats", "--db", url)
    assert_one_line_error(result, 3, "cannot reach the ledger database")
    assert "S3cr3t" not in result.err + result.out


def test_a_result_not_recorded_prints_the_sslpassword_in_neither_the_warning_nor_the_hint(opsctl):
    result = opsctl("triage", "hgx01", "--window", "0.5", "--db", "postgresql://u@127.0.0.1:1/db?sslpassword=S3cr3t")
    assert "not recorded in the ledger" in result.err and "--db postgresql://u@127.0.0.1:1/db " in result.err
    assert "S3cr3t" not in result.err + result.out


# --- the exporter: a scraper that hangs up is one log line -------------------------------------------
class _BigBody:
    """A render too large for the socket's buffers, so that a client gone mid-answer breaks the write."""

    def body(self, gzipped=False):
        return b"# x\n" * (4 * 2**20)


def test_a_scraper_that_disconnects_is_one_log_line_not_a_traceback(capfd, caplog, monkeypatch):
    import logging
    import struct
    import threading
    import time

    from exporters.server import BoundedMetricsServer

    # An exporter command run earlier in this process left its stderr handler on the logger, bound
    # to a stream pytest has since closed: caplog alone hears this test's lines.
    monkeypatch.setattr(logging.getLogger("opsctl.exporter"), "handlers", [])

    server = BoundedMetricsServer(("127.0.0.1", 0), _BigBody())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with caplog.at_level(logging.INFO, logger="opsctl.exporter"):
            for _ in range(3):
                client = socket.create_connection(("127.0.0.1", server.server_port), timeout=10)
                client.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
                client.recv(100)  # the answer has begun
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()  # a reset: the rest of the write fails
            end = time.monotonic() + 10
            while len([r for r in caplog.records if "disconnected" in r.message]) < 3 and time.monotonic() < end:
                time.sleep(0.05)
    finally:
        server.shutdown()
        server.server_close()
    lines = [r.getMessage() for r in caplog.records if "disconnected" in r.getMessage()]
    assert len(lines) == 3 and all(line.startswith("scraper 127.0.0.1 disconnected before its answer was sent") for line in lines)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred during processing" not in err


def test_a_fifo_as_a_run_journal_is_refused_rather_than_blocking(hostile):
    from opsctl.runs.journal import Journal

    journal = Journal(hostile / "fifo")
    with deadline():
        with pytest.raises(InputError, match="is a FIFO, not a regular file; opsctl keeps a run's journal only in a regular file"):
            journal.record("started")
        with pytest.raises(InputError, match="is a FIFO, not a regular file"):
            journal.entries()
    assert_untouched(hostile)
