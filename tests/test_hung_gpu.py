"""A hung GPU is named as hung while its siblings are read, judged and exported (issue 15).

The simulator's `gpu_hang` blocks the GPU's calls for good, as a stuck driver does: with
`nvml: true` its NVML calls never return, with `nvml: false` only its compute does. Each GPU's
calls run on its own worker under a deadline (probes.gpu_deadline), so one wedged GPU costs one
deadline and is named, instead of blanking its tray.
"""

import json
import threading
import time

import pytest

from probes.gpu_deadline import GpuHung, GpuWorkers

HUNG_AND_LOST = ("seed: 11\nfaults:\n  - {kind: gpu_hang, gpu: gpu0, nvml: true}\n"
                 "  - {kind: gpu_lost, gpu: gpu1}\n")
COMPUTE_HUNG = "seed: 11\nfaults:\n  - {kind: gpu_hang, gpu: gpu0, nvml: false}\n"
# Shorter than the probe's own deadlines, to keep the tests short; long enough that a healthy
# simulated GPU on a busy 2-core machine answers well within it (a whole reading: under 0.6 s).
DEADLINE_S = 4.0


# --- the per-GPU workers ------------------------------------------------------------------------------
def test_a_call_that_returns_before_its_deadline_is_its_answer():
    workers = GpuWorkers("NVML", deadline_s=30)
    assert workers.call(3, "reading", lambda x: x * 2, 21) == 42
    assert workers.hung == {}


def test_a_call_past_its_deadline_names_the_gpu_and_the_others_still_answer():
    workers = GpuWorkers("NVML", deadline_s=0.5)
    release = threading.Event()
    stuck = workers.call_each([0, 1, 2], "reading", lambda i: release.wait() if i == 1 else f"gpu{i}")
    assert stuck[0] == "gpu0" and stuck[2] == "gpu2"
    assert isinstance(stuck[1], GpuHung) and stuck[1].index == 1
    assert "reading did not return within 0.5 s" in stuck[1].reason
    # While its call is stuck, the GPU is refused without a second thread queued behind it.
    with pytest.raises(GpuHung):
        workers.submit(1, "reading", lambda: "never run")
    assert workers.stuck(1) and not workers.stuck(0)
    # Once the call returns, the GPU answers again; the record of the hang stays.
    release.set()
    for _ in range(1000):  # the worker leaves its call
        if not workers.stuck(1):
            break
        time.sleep(0.01)
    assert workers.call(1, "reading", lambda: "back") == "back"
    assert not workers.stuck(1) and 1 in workers.hung


def test_an_error_of_the_call_is_the_callers_not_a_hang():
    workers = GpuWorkers("compute", deadline_s=30)
    with pytest.raises(ZeroDivisionError):
        workers.call(0, "matmul", lambda: 1 / 0)
    assert workers.hung == {}


# --- the tray probe ---------------------------------------------------------------------------------
@pytest.fixture
def hgx_tray(tmp_path, hgx_topology):
    """An opened sim backend of the HGX tray `node` under a scenario, on the wall clock."""
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text
    from probes.backend import open_backend

    opened = []

    def open_tray(text):
        spec = compile_rack_spec(scenario_from_text(text), hgx_topology)
        path = tmp_path / "spec.json"
        path.write_text(json.dumps(spec.to_dict()))
        backend = open_backend("sim", str(path), "node")
        opened.append(backend)
        return backend

    yield open_tray
    for backend in opened:
        backend.close()


def failing(document):
    return {(c["component"], c["check"]) for gpu in document["gpus"] for c in gpu["checks"] if c["verdict"] == "fail"}


@pytest.mark.slow
def test_a_gpu_whose_nvml_hangs_is_named_while_its_seven_siblings_are_burned_in(hgx_tray):
    from probes.run import RunOptions, TrayRun

    run = TrayRun(hgx_tray(HUNG_AND_LOST), RunOptions(duration_s=2, probes=("gemm", "membw", "nvlink", "counters"),
                                                      nvml_deadline_s=DEADLINE_S, compute_deadline_s=DEADLINE_S))
    document, code = run.execute()
    assert code != 0  # 1, or 3 where a 2 s load is too short for a check of the siblings
    assert failing(document) == {("gpu0", "gpu.hung"), ("gpu1", "gpu.lost"), ("gpu1", "gemm.device")}
    hung = next(c for c in document["gpus"][0]["checks"] if c["check"] == "gpu.hung")
    assert f"did not return within {DEADLINE_S:g} s" in hung["reason"] and hung["threshold"] == DEADLINE_S
    for gpu in document["gpus"][2:]:  # read, loaded, verified and judged
        assert gpu["gemm"]["bf16"]["verified"] and gpu["membw"]["gbps"] > 0 and len(gpu["counters"]["links"]) == 18
        assert {"gemm.bf16.mismatches", "nvlink.link_count"} <= {c["check"] for c in gpu["checks"] if c["verdict"] == "pass"}
    assert run.hung  # the stuck call must not hold the process at exit


@pytest.mark.slow
def test_a_gpu_whose_compute_hangs_fails_alone_and_the_others_keep_their_results(hgx_tray):
    from probes.run import RunOptions, TrayRun

    run = TrayRun(hgx_tray(COMPUTE_HUNG), RunOptions(duration_s=2, probes=("gemm", "membw", "nvlink", "counters"),
                                                     compute_deadline_s=DEADLINE_S))
    document, code = run.execute()
    assert code != 0  # 1, or 3 where a check of the wedged GPU's short load could not be judged
    assert failing(document) == {("gpu0", "gemm.device")}
    reason = next(c["reason"] for c in document["gpus"][0]["checks"] if c["check"] == "gemm.device")
    assert f"did not return within {DEADLINE_S:g} s" in reason and "hung" in reason
    assert all(gpu["gemm"]["bf16"]["verified"] for gpu in document["gpus"][1:])
    assert run.hung


@pytest.mark.slow
def test_a_snapshot_names_the_hung_gpu_and_reads_the_rest(hgx_tray):
    from probes.snapshot import take_snapshot

    backend = hgx_tray(HUNG_AND_LOST)
    document = take_snapshot(backend.nvml, 1.0, clock=backend.clock, tray="node", deadline_s=DEADLINE_S)
    gpus = {gpu["gpu"]: gpu for gpu in document["gpus"]}
    assert [gpus[i]["reachable"] for i in range(8)] == [False, False] + [True] * 6
    assert gpus[0]["failed_checks"][0]["check"] == "gpu.hung" and "hung" in gpus[0]["failed_checks"][0]["reason"]
    assert {link["gpu"] for link in document["links"]} == set(range(2, 8))


# --- burn-in, triage and the exporter, as operators run them ----------------------------------------------
@pytest.fixture
def hung_inventory(tmp_path):
    (tmp_path / "hung.yaml").write_text("scenario: hung\nrack: hgx01\n" + HUNG_AND_LOST)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("all:\n  children:\n    hgx01:\n      vars: {opsctl_model: hgx-h100, opsctl_transport: local, "
                         "opsctl_backend: sim, opsctl_scenario: hung.yaml}\n      hosts:\n        hgx01-node:\n")
    return inventory


@pytest.mark.slow
def test_burnin_fails_the_hung_and_the_lost_gpu_and_passes_the_six_others(opsctl, hung_inventory, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    result = opsctl("--inventory", hung_inventory, "burnin", "hgx01", "--duration", "2", "--out", tmp_path / "run", "--json")
    summary = json.loads(result.out)
    assert (result.code, summary["verdict"]) == (1, "FAIL")
    assert sorted(summary["failing"]["gpus"]) == ["hgx01/gpu0", "hgx01/gpu1"]
    verdicts = {gpu["id"]: gpu["verdict"] for gpu in summary["gpus"]}
    passed = {(c["component"], c["check"]) for c in summary["checks"] if c["verdict"] == "pass"}
    for i in range(2, 8):  # loaded, verified and judged (a 2 s load is too short for some checks: never a fail)
        assert verdicts[f"hgx01/gpu{i}"] != "fail"
        assert {(f"hgx01/gpu{i}", "gemm.bf16.mismatches"), (f"hgx01/gpu{i}", "nvlink.link_count")} <= passed
    assert any(c["component"] == "hgx01/gpu0" and c["check"] == "gpu.hung" and c["verdict"] == "fail"
               for c in summary["checks"])


@pytest.mark.slow
def test_triage_names_the_hung_gpu_and_the_lost_one(opsctl, hung_inventory, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    result = opsctl("--inventory", hung_inventory, "triage", "hgx01", "--window", "2", "--json")
    assert result.code == 1
    suspects = {s["component"] for s in json.loads(result.out)["suspects"]}
    assert suspects == {"hgx01/gpu0", "hgx01/gpu1"}
    shown = opsctl("--inventory", hung_inventory, "triage", "hgx01", "--window", "2")
    assert "6/8 GPUs" in shown.out and "gpu.hung" in shown.out


@pytest.mark.slow
def test_the_exporter_serves_the_seven_answering_gpus_and_shows_the_hung_one_stale(sim_exporter, hgx_topology):
    served = sim_exporter(HUNG_AND_LOST, topology=hgx_topology)

    def status(samples, gpu):
        return next(dict(labels)["status"] for (name, labels), value in samples.items()
                    if name == "opsctl_gpu_status" and dict(labels)["gpu"] == str(gpu) and value == 1)

    samples = served.wait_for(lambda s: any(n == "opsctl_exporter_up" and v == 1 for (n, _), v in s.items())
                              and all(status(s, i) != "starting" for i in range(8)), timeout=60)
    assert [status(samples, i) for i in range(8)] == ["stale", "lost"] + ["ok"] * 6
    temperatures = {dict(labels)["gpu"] for (name, labels), _ in samples.items() if name == "opsctl_gpu_temperature_celsius"}
    assert temperatures == {str(i) for i in range(2, 8)}
