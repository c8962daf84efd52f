"""No command pays at start-up for modules it does not use (issue 29): what each common command's
`--help` and `opsctl health` of a tray import, in a fresh interpreter. Structural, not timed: numpy
costs about 0.25 CPU-s to import on the 2-core machine, paramiko with cryptography about 0.2 s, the
simulator's compiler 0.15 s (docs/benchmarks.md, Start-up)."""

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

HEAVY = ("numpy", "paramiko", "cryptography", "rich", "pandas", "scipy", "matplotlib", "msgspec", "pynvml",
         "opsctl.simulation", "probes.sim")


def imported(*argv):
    """The HEAVY modules loaded by `opsctl ARGV` in a fresh interpreter, and its exit code."""
    code = ("import json, sys\nfrom opsctl.cli import run\ncode = run(sys.argv[1:])\n"
            f"print(json.dumps([code, sorted(m for m in {HEAVY!r} if m in sys.modules)]))")
    result = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, cwd=REPO,
                            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv, allowed", [
    (("--help",), ()),
    (("health", "--help"), ()),
    (("tco", "--help"), ("rich", "msgspec")),  # the tco group's tables; msgspec: the ledger's schema
    (("burnin", "--help"), ("numpy", "rich", "msgspec")),  # the judges and localizer it builds on (numpy)
    (("triage", "--help"), ("numpy", "rich", "msgspec")),
], ids=["--help", "health --help", "tco --help", "burnin --help", "triage --help"])
def test_help_loads_no_module_it_does_not_use(argv, allowed):
    code, loaded = imported(*argv)
    assert code == 0
    assert set(loaded) <= set(allowed), f"opsctl {' '.join(argv)} imports {sorted(set(loaded) - set(allowed))}"


def test_no_help_loads_the_ssh_transport_or_the_simulator():
    for argv in (("burnin", "--help"), ("triage", "--help"), ("snapshot", "--help"), ("health", "--help")):
        _, loaded = imported(*argv)
        assert not {"paramiko", "cryptography", "opsctl.simulation", "probes.sim"} & set(loaded), argv


def test_health_of_a_simulated_tray_loads_no_numpy():
    """It reads counters and runs no load: the simulator's compute device (NumPy) stays out, as
    PyTorch does on a real tray."""
    code, loaded = imported("health", "rack07/ct01", "--json")
    assert code == 0
    assert "numpy" not in loaded and "rich" not in loaded
