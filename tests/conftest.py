"""Shared test fixtures: running the CLI in-process, simulated racks on a manual clock."""

import json
import os
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Fixture modules: a real sshd on loopback for the fan-out (tests/sshd.py), a real Slurm cluster
# for the scheduler (tests/slurm_cluster.py).
pytest_plugins = ["tests.sshd", "tests.slurm_cluster"]


def pytest_configure(config):
    """Nothing a test runs writes to the user's own state: run folders and the default ledger
    land in a throwaway $XDG_STATE_HOME, racks' locks in a throwaway $OPSCTL_LOCK_DIR, and no
    test records into a shared $OPSCTL_DB."""
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="opsctl-test-state-")
    os.environ.pop("OPSCTL_DB", None)
    # One burn-in of a rack at a time on a machine (runs/run_lock.py): each worker holds its racks
    # apart from the others', as a machine of its own, so two workers may burn in hgx01 at once.
    os.environ["OPSCTL_LOCK_DIR"] = tempfile.mkdtemp(prefix="opsctl-test-racks-")


# The suite runs on pytest-xdist workers (scripts/test). A test that shares an expensive
# session fixture goes with the others that share it, so the fixture is made once per run, not
# once per worker; so do the tests of a module with a module-scoped fixture.
SHARED_FIXTURE_GROUPS = {"rack07_over_ssh": "rack07-over-ssh", "slurm_cluster": "slurm"}
# Fixtures that start a real service: their tests are marked `service`.
SERVICE_FIXTURES = {"sshd", "jump_hosts", "slurm_cluster", "postgres_server", "postgres_database"}


def _xdist_group(item):
    names = set(item.fixturenames)
    for fixture, group in SHARED_FIXTURE_GROUPS.items():
        if fixture in names:
            return group
    definitions = getattr(item, "_fixtureinfo", None)
    for name in names:
        defs = definitions.name2fixturedefs.get(name, ()) if definitions else ()
        if defs and defs[-1].scope == "module":
            return item.module.__name__
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups off the items
def pytest_collection_modifyitems(config, items):
    for item in items:
        group = _xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        if SERVICE_FIXTURES & set(item.fixturenames) or "[postgresql]" in item.nodeid:
            item.add_marker(pytest.mark.service)


@pytest.hookimpl(trylast=True)  # after xdist's own hook, which writes each group into the node id
def pytest_collection_finish(session):
    """On a loadgroup worker, a grouped test whose node id lacks its group would be scheduled
    alone, and its shared fixture made again on another worker: refuse the run, loudly."""
    if not (os.environ.get("PYTEST_XDIST_WORKER") and getattr(session.config.option, "loadgroup", False)):
        return
    for item in session.items:
        for mark in item.iter_markers("xdist_group"):
            if not item.nodeid.endswith(f"@{mark.args[0]}"):
                why = (f"pytest-xdist did not group {item.nodeid} ({mark.args[0]}): this pytest and pytest-xdist "
                       "do not work together (pytest-xdist issue #1386); install the dev extra's pins")
                print(f"tests/conftest.py: {why}", file=sys.__stderr__)  # a worker's own error is lost in xdist's
                raise pytest.UsageError(why)


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


# The team's private notes: an operator does not have them, so no source may cite them.
PRIVATE_SOURCES = ("FIGURES.md", "NVML_AND_XID.md", "CONTRACT.md", "PRODUCT.md", "ENGINEERING.md", "shared/")

@pytest.fixture
def opsctl(capsys, monkeypatch):
    """Run `opsctl ARGS…` in this process; returns code, stdout and stderr."""
    from opsctl.cli import run

    monkeypatch.delenv("OPSCTL_INVENTORY", raising=False)

    def invoke(*args):
        capsys.readouterr()
        code = run(list(map(str, args)))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return invoke


@pytest.fixture
def opsctl_process(tmp_path):
    """Run the installed `opsctl` as a separate process, as a user would."""

    def invoke(*args, env=None, timeout=300, input=None):
        proc = subprocess.run(
            [sys.executable, "-m", "opsctl", *map(str, args)],
            capture_output=True, text=True, timeout=timeout, env=env, input=input, cwd=tmp_path,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return invoke


def free_port(address="127.0.0.1"):
    """A TCP port nothing listens on right now, for a real server a test starts."""
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def assert_one_line_error(result, code=2, *fragments):
    """The contract for bad input: exit code, one line on stderr, no traceback."""
    assert result.code == code, (result.code, result.err, result.out[-2000:])
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="session")
def rack07_topology():
    from opsctl.rack_models import model_named
    from opsctl.topology import build_topology

    return build_topology("rack07", model_named("gb200-nvl72"))


@pytest.fixture(scope="session")
def hgx_topology():
    from opsctl.rack_models import model_named
    from opsctl.topology import build_topology

    return build_topology("hgx01", model_named("hgx-h100"))


@pytest.fixture
def hgx_with_a_gpu_that_hangs(hgx_topology):
    """make(gpu) -> (rack, nvml, reader): a simulated HGX H100 on the wall clock whose `gpu`'s
    driver stops answering 1 s after it starts (NVML calls on it block), read with a 0.5 s deadline:
    what a test of a reading that must cost one deadline, and name the GPU, needs."""
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text
    from probes.nvml_reader import NvmlReader
    from probes.sim import SimNvml, SimRack
    from probes.sim.clock import WallClock

    def make(gpu):
        spec = compile_rack_spec(scenario_from_text(f"faults:\n  - {{kind: gpu_hang, gpu: {gpu}, nvml: true, start_s: 1}}\n"),
                                 hgx_topology)
        rack = SimRack(json.loads(json.dumps(spec.to_dict())), clock=WallClock())
        nvml = SimNvml(rack)
        nvml.nvmlInit()
        return rack, nvml, NvmlReader(nvml, now=rack.clock.now, deadline_s=0.5)

    return make


@pytest.fixture
def sim_rack(rack07_topology):
    """Build a SimRack on a ManualClock from scenario YAML text (default: healthy rack07)."""
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text
    from probes.sim import SimRack
    from probes.sim.clock import ManualClock

    def build(text="seed: 1\n", topology=None):
        topology = topology or rack07_topology
        spec = compile_rack_spec(scenario_from_text(text), topology)
        # Through JSON, as a tray receives it.
        return SimRack(json.loads(json.dumps(spec.to_dict())), clock=ManualClock())

    return build


def read_tray_twice(rack, tray, seconds):
    """Every GPU of a simulated tray read through NVML, the rack's clock moved on `seconds`, and read
    again: (before, after), the two readings a probe's window judges."""
    from probes.nvml_reader import NvmlReader
    from probes.sim import SimNvml

    nvml = SimNvml(rack, tray)
    nvml.nvmlInit()
    reader = NvmlReader(nvml, now=rack.now)
    before = reader.read_all()
    rack.clock.advance(seconds)
    return before, reader.read_all()


@dataclass
class ServedRack:
    """An exporter serving simulated trays on loopback, and what a scrape of it holds."""

    exporter: object
    url: str

    def text(self):
        import urllib.request

        with urllib.request.urlopen(self.url, timeout=30) as response:
            return response.read().decode()

    def samples(self):
        """{(metric name, frozenset of label items): value} of one scrape."""
        from prometheus_client.parser import text_string_to_metric_families

        return {(s.name, frozenset(s.labels.items())): s.value
                for family in text_string_to_metric_families(self.text()) for s in family.samples}

    def wait_for(self, predicate, timeout=30.0):
        """Scrape until predicate(samples) holds; the samples that satisfied it."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            samples = self.samples()
            if predicate(samples):
                return samples
            assert time.monotonic() < deadline, "the exporter never showed what the test waits for"
            time.sleep(0.1)


@pytest.fixture
def sim_exporter(rack07_topology):
    """Serve trays of a simulated rack (scenario YAML text) through the exporter, on the wall
    clock with the simulator already `at_s` seconds in; stopped when the test ends."""
    import time

    from exporters.server import Exporter
    from exporters.tray_poller import TrayPoller
    from opsctl.cli.commands.exporter import host_nvswitch_chips
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text
    from probes.gpu_deadline import NVML_DEADLINE_S
    from probes.sim import SimNvml, SimRack
    from probes.sim.clock import FrozenClock

    served = []

    # Stale only after 30 s by default: a busy test machine must not make a healthy GPU look hung.
    # `frozen`: the simulator stays at `at_s` (FrozenClock), for a test that judges one instant.
    # `deadline_s`: the reader's; a test serving many trays from this one process (where a real
    # tray's exporter reads its 4 or 8 GPUs alone) gives them the time 72 GPUs' reads take here.
    def serve(text="seed: 1\n", topology=None, trays=None, at_s=0.0, interval=0.2, stale_after=30.0,
              burnin=None, nvml_class=SimNvml, frozen=False, deadline_s=NVML_DEADLINE_S):
        topology = topology or rack07_topology
        spec = compile_rack_spec(scenario_from_text(text), topology)
        spec.epoch = time.time() - at_s
        rack = SimRack(spec, clock=FrozenClock(spec.epoch + at_s) if frozen else None)
        names = trays or [tray.name for tray in spec.trays if tray.gpus]
        chips = host_nvswitch_chips(spec.rack, topology.model)
        pollers = [TrayPoller(spec.rack, name, nvml_class(rack, name), interval, stale_after, len(spec.tray(name).gpus),
                              kernel_history=lambda name=name: rack.kernel_history(name, rack.clock.now()),
                              nvswitch_chips=chips, deadline_s=deadline_s)
                   for name in names]
        exporter = Exporter(pollers, listen="127.0.0.1", port=0, burnin_path=burnin, refresh_s=interval).start()
        served.append(exporter)
        return ServedRack(exporter, f"http://127.0.0.1:{exporter.port}/metrics")

    yield serve
    for exporter in served:
        exporter.stop()


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server for the ledger's tests: its own cluster (initdb) in a temp
    dir, listening only on a unix socket there, stopped and removed at the end. Root may not run
    PostgreSQL, so as root it runs as the `postgres` user (Debian's package creates it)."""
    import glob
    import os
    import pwd
    import shutil
    import tempfile

    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not bins:
        pytest.skip("PostgreSQL server binaries not installed (scripts/test installs Debian's postgresql)")
    bindir = Path(bins[-1]).parent
    base = Path(tempfile.mkdtemp(prefix="opsctl-pg-"))
    as_user = []
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(base, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, log = base / "data", base / "server.log"
    subprocess.run([*as_user, bindir / "initdb", "-D", data, "-U", "opsctl", "-A", "trust", "-E", "UTF8", "--no-sync"],
                   check=True, capture_output=True)
    options = f"-k {base} -c listen_addresses='' -c fsync=off"
    subprocess.run([*as_user, bindir / "pg_ctl", "-D", data, "-o", options, "-l", log, "-w", "start"],
                   check=True, capture_output=True)
    try:
        yield f"postgresql://opsctl@/postgres?host={base}"
    finally:
        subprocess.run([*as_user, bindir / "pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_database(postgres_server):
    """A new, empty database on the throwaway server; its URL."""
    import uuid

    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return postgres_server.replace("/postgres?", f"/{name}?")


@pytest.fixture
def memory_tmp_path(tmp_path):
    """A temp dir in RAM where there is one (/dev/shm): a SQLite file there skips the disk's fsyncs."""
    import shutil
    import tempfile

    if not Path("/dev/shm").is_dir():
        yield tmp_path
        return
    directory = Path(tempfile.mkdtemp(prefix="opsctl-test-", dir="/dev/shm"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_db(request, memory_tmp_path):
    """A ledger URL on each backend: a SQLite file, and a fresh database on the throwaway server."""
    if request.param == "sqlite":
        return f"sqlite:///{memory_tmp_path / 'ledger.sqlite'}"
    return request.getfixturevalue("postgres_database")
