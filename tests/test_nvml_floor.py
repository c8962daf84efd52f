"""The oldest nvidia-ml-py that pyproject.toml accepts runs the tray probe: NvmlReader reads
every field, struct and constant it needs from that version's pynvml (scripts/test installs it
in .venv/nvml-floor), and the simulator fills that version's structs. Without this test the
declared floor was a guess: 12.535-12.575 crashed the reader."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # simulated runs or real processes: seconds a test

REPO = Path(__file__).resolve().parent.parent
FLOOR_DIR = REPO / ".venv" / "nvml-floor"
SPEC = """
seed: 3
faults:
  - {kind: link_errors, link: ct05/gpu1/nvl07, rcv_errors_per_s: 0.5}
  - {kind: fabric_degraded, gpu: ct05/gpu2, route_unhealthy: true}
"""


def declared_floor():
    text = (REPO / "pyproject.toml").read_text()
    return re.search(r'"nvidia-ml-py>=([0-9.]+)"', text).group(1)


def test_the_probe_runs_on_the_oldest_nvidia_ml_py_it_declares(tmp_path, rack07_topology):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text

    floor = declared_floor()
    installed = sorted(FLOOR_DIR.glob("nvidia_ml_py-*.dist-info"))
    assert [p.name for p in installed] == [f"nvidia_ml_py-{floor}.dist-info"], \
        f"scripts/test installs nvidia-ml-py=={floor} into {FLOOR_DIR}"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(compile_rack_spec(scenario_from_text(SPEC), rack07_topology).to_dict()))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FLOOR_DIR), str(REPO)])}
    check = subprocess.run([sys.executable, "-c", "import pynvml, sys; print(pynvml.__file__)"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert check.stdout.startswith(str(FLOOR_DIR)), check.stdout + check.stderr  # that version, not the venv's
    proc = subprocess.run([sys.executable, "-m", "probes", "snapshot", "--backend", "sim", "--sim-spec", str(spec),
                           "--tray", "ct05", "--window", "2", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    snapshot = json.loads(proc.stdout)
    bad = next(row for row in snapshot["links"] if (row["gpu"], row["port"]) == (1, 7))
    assert bad["rcv_errors"] == 1 and bad["effective_ber"] is not None  # NVLink 5 fields read on that version
    proc = subprocess.run([sys.executable, "-m", "probes", "run", "--backend", "sim", "--sim-spec", str(spec),
                           "--tray", "ct05", "--duration", "2", "--probes", "counters", "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    run = json.loads(proc.stdout)
    fabric = {gpu["index"]: next(c for c in gpu["checks"] if c["check"] == "fabric.health") for gpu in run["gpus"]}
    # The fabric health mask decodes on that version too (its pynvml widths are wrong: 0x11).
    assert fabric[2]["verdict"] == "fail" and "route_unhealthy" in fabric[2]["value"]
    assert fabric[0]["verdict"] == "pass"
