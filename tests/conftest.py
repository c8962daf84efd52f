"""Shared test fixtures: running the CLI in-process, simulated racks on a manual clock."""

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Fixture modules: a real sshd on loopback for the fan-out (tests/sshd.py).
pytest_plugins = ["tests.sshd"]


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


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
