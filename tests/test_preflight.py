"""The preflight of `opsctl accept` and `opsctl burnin`: before any load, a run that cannot work
says within seconds what it cannot run and why, one line each, and ends incomplete (exit 3) with
nothing loaded; an optional probe the trays cannot run is left out and said."""

import json
import os
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# numpy unimportable for the tray probes alone (`python -m probes`), as on a tray deployed without
# it; opsctl itself, here, keeps the real one.
TRAY_WITHOUT_NUMPY = """\
import os, sys
if sys.argv and sys.argv[0].endswith(os.path.join("probes", "__main__.py")):
    raise ModuleNotFoundError("No module named 'numpy' (unimportable on the trays in this test)", name="numpy")
_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
del sys.modules["numpy"]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
import numpy as _real
sys.modules["numpy"] = _real
"""


def _env(**extra):
    env = dict(os.environ, **extra)
    env.pop("OPSCTL_INVENTORY", None)
    return env


def test_an_acceptance_whose_probes_cannot_import_numpy_ends_incomplete_within_seconds(opsctl_process, tmp_path):
    shadow = tmp_path / "shadow" / "numpy"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(TRAY_WITHOUT_NUMPY)
    env = _env(PYTHONPATH=os.pathsep.join([str(shadow.parent), REPO]))
    started = time.monotonic()
    result = opsctl_process("accept", "hgx01", "--duration", "2", "--no-ledger", "--out", tmp_path / "run", env=env)
    assert time.monotonic() - started < 30
    assert result.code == 3, result.err
    # The load probes and the collective need numpy; the configuration and counters read NVML alone.
    lines = result.err.splitlines()
    assert lines[0].startswith("opsctl: preflight: hgx01 (local trays, asked as node): gemm,membw,nvlink,pulse,hbm "
                               "cannot run: ")
    assert lines[1].startswith("opsctl: preflight: hgx01 (local trays, asked as node): collective cannot run: ")
    assert all("cannot import numpy" in line and "pip install opsctl" in line for line in lines[:2])
    assert "nothing was loaded; INCOMPLETE (exit 3)" in lines[-1] and len(lines) == 3, result.err
    assert not (tmp_path / "run").exists()  # no run folder: nothing ran


def test_a_rack_of_real_gpus_without_a_driver_says_so_before_any_load_in_json_too(opsctl_process, tmp_path):
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("all:\n  children:\n    hgx09:\n      vars:\n        opsctl_model: hgx-h100\n"
                         "        opsctl_transport: local\n        opsctl_backend: nvml\n      hosts:\n        hgx09-node:\n")
    result = opsctl_process("--inventory", inventory, "burnin", "hgx09", "--json", "--no-ledger", env=_env())
    assert result.code == 3, result.err
    document = result.json()
    assert document["verdict"] == "INCOMPLETE" and document["exit_code"] == 3 and document["kind"] == "burnin"
    problem, = document["preflight"]["problems"]
    assert problem["blocking"] and "NVML library not found" in problem["reason"]
    assert "opsctl: preflight: hgx09 (local trays, asked as node): the probe cannot start: " in result.err


def test_a_healthy_simulated_tray_is_ready_and_says_what_it_checked(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(subprocess.run([sys.executable, "-m", "opsctl", "sim", "spec", "hgx01"], capture_output=True,
                                   text=True, check=True, env=_env()).stdout)
    done = subprocess.run([sys.executable, "-m", "probes", "preflight", "--backend", "sim", "--sim-spec", spec,
                           "--tray", "node", "--probes", "gemm,counters", "--collective", "--json"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["kind"] == "preflight" and document["missing"] == []
    assert document["probes"] == ["gemm", "counters", "collective"]


def test_a_real_tray_without_pytorch_names_it_and_the_command_that_installs_it(tmp_path):
    """The nvml backend's own answer (no GPU here: asked directly), with torch unimportable."""
    shadow = tmp_path / "no-torch" / "torch"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('torch is unimportable in this test')\n")
    code = ("from probes.backend import torch_cuda_missing, nccl_missing\n"
            "print(torch_cuda_missing()); print(nccl_missing())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env=_env(PYTHONPATH=os.pathsep.join([str(shadow.parent), REPO])))
    compute, collective = done.stdout.splitlines()
    assert compute == collective
    assert compute.startswith("PyTorch cannot be imported (torch is unimportable in this test); install it: "
                              "pip install 'opsctl[gpu]'")


class _Backend:
    """A tray backend whose GPUs cannot load: what preflight_document asks of one."""

    kind, tray, nvml = "nvml", "ct03", object()

    @staticmethod
    def compute_missing():
        return "PyTorch cannot be imported; install it: pip install 'opsctl[gpu]'"

    @staticmethod
    def collective_missing():
        return "this PyTorch has no NCCL"


def test_the_tray_document_lists_each_missing_thing_once():
    from probes.preflight import preflight_document

    document, code = preflight_document(_Backend(), ["gemm", "membw", "configuration", "counters"], collective=True)
    assert code == 1
    assert document["missing"] == [
        {"probe": "gemm,membw", "reason": "PyTorch cannot be imported; install it: pip install 'opsctl[gpu]'"},
        {"probe": "collective", "reason": "this PyTorch has no NCCL"}]


def test_an_optional_probe_the_trays_cannot_run_is_left_out_and_said(tmp_path, monkeypatch):
    """Criteria that mark the collective optional: the run goes on without it; a missing
    required probe still stops it. The trays' answers are given (no process started)."""
    from opsctl.acceptance.criteria import DEFAULT_CRITERIA, load_criteria
    from opsctl.burnin import preflight as module
    from opsctl.burnin.session import make_plan
    from opsctl.fanout import TrayResult
    from opsctl.inventory import load_inventory

    criteria_file = tmp_path / "criteria.yaml"
    criteria_file.write_text(DEFAULT_CRITERIA.read_text().replace("warnings_fail: false",
                                                                  "warnings_fail: false\noptional_probes: [collective]"))
    criteria = load_criteria(criteria_file)
    assert criteria.optional_probes == ("collective",) and criteria.record()["optional_probes"] == ["collective"]
    rack = load_inventory(None).rack("hgx01")
    plan = make_plan("accept", criteria_file=str(criteria_file))
    answers = []

    def answer(rack, argv, trays, **kwargs):
        assert "--collective" in argv and trays == ["node"]
        return [TrayResult("node", "hgx01-node", "complete", 1, {"missing": answers}, reason=None)]

    monkeypatch.setattr(module, "run_on_trays", answer)
    answers[:] = [{"probe": "collective", "reason": "this PyTorch has no NCCL"}]
    checked = module.preflight(rack, plan, criteria, ["node"], tmp_path)
    assert not checked.blocking and checked.skipped == ("collective",)
    assert checked.lines() == ["hgx01 (local trays, asked as node): collective cannot run: this PyTorch has no NCCL — "
                               "optional in the criteria opsctl-default: the run goes on without collective"]
    answers.append({"probe": "gemm", "reason": "PyTorch cannot be imported"})
    checked = module.preflight(rack, plan, criteria, ["node"], tmp_path)
    assert checked.blocking and [p.blocking for p in checked.problems] == [False, True]


@pytest.mark.slow
def test_an_unreachable_tray_is_said_and_the_others_still_run(opsctl_process, tmp_path):
    """Not a stop: the reachable trays are worth their load, and --resume runs the rest later.
    A simulated tray marked unreachable answers for none; the next local tray answers for all."""
    (tmp_path / "scenario.yaml").write_text("scenario: one-down\nseed: 3\nrack: rack12\n"
                                            "faults: [{kind: tray_unreachable, tray: ct01}]\n")
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("all:\n  children:\n    rack12:\n      vars:\n        opsctl_model: gb200-nvl72\n"
                     "        opsctl_transport: local\n        opsctl_backend: sim\n        opsctl_scenario: scenario.yaml\n"
                     "      hosts:\n        rack12-ct[01:18]:\n        rack12-st[1:9]:\n")
    result = opsctl_process("--inventory", fleet, "burnin", "rack12", "--duration", "1", "--probes", "counters",
                            "--json", "--no-ledger", "--out", tmp_path / "run", env=_env())
    assert result.code == 3, result.err
    assert result.err.startswith("opsctl: preflight: rack12/ct01: not reachable (probes: rack12/ct01: no route to host")
    summary = result.json()
    assert summary["verdict"] == "INCOMPLETE" and summary["failing"]["trays"] == ["rack12/ct01"]
    assert sum(t["status"] == "complete" for t in summary["trays"]) == 26
