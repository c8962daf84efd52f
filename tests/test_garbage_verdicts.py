"""No confident verdict from garbage (issue 15): a reading that is not a number, a load too short
to judge, a counter that went backwards, a rate no link can carry, a snapshot without links —
each is a failure or incomplete, never healthy. Tests sit at each decision point."""

import json
import math

import pytest

from probes.counters import gpu_window
from probes.check_record import compare
from probes.sku_references import load_references
from probes.tray_judge import judge_gpu
from probes.nvml_reader import NvmlReader
from probes.sim import SimNvml

H100 = load_references(sku="h100")
ENOUGH = H100.rules["min_evidence"]


def verdicts(checks, name):
    return [c["verdict"] for c in checks if c["check"] == name]


# --- a reading that is not a finite number -----------------------------------------------------------
def test_nan_is_incomplete_where_it_would_have_passed():
    assert compare("x", "gpu0", float("nan"), ">=", 100, "/s", "src", "r")["verdict"] == "incomplete"
    assert compare("x", "gpu0", float("nan"), "<", 100, "/s", "src", "r")["verdict"] == "incomplete"
    assert compare("x", "gpu0", math.inf, ">=", 100, "/s", "src", "r")["verdict"] == "incomplete"
    assert compare("x", "gpu0", 99.0, ">=", 100, "/s", "src", "r")["verdict"] == "pass"
    assert compare("x", "gpu0", 100.0, ">=", 100, "/s", "src", "r")["verdict"] == "fail"


# --- too short a GEMM ---------------------------------------------------------------------------------
def gemm_result(windows):
    rates = [900.0] * windows
    return {"bf16": {"n": 16384, "mismatches": 0, "corrupted_results": 0, "checks": windows + 2, "max_rel_error": 0.0,
                     "tolerance": 1e-3, "tflops_windows": rates, "tflops_median": rates[0] if rates else None,
                     "tflops_min": rates[0] if rates else None, "drop_pct": 0.0 if rates else None, "seconds": 0.5 * windows,
                     "verified": True, "finished": True}}


@pytest.mark.parametrize("windows, verdict", [(ENOUGH["gemm_windows"] - 1, ["incomplete"]), (ENOUGH["gemm_windows"], [])])
def test_a_gemm_needs_enough_windows_for_a_verdict(windows, verdict):
    checks = judge_gpu({"index": 0, "gemm": gemm_result(windows)}, H100, {})
    assert verdicts(checks, "gemm.bf16.windows") == verdict
    assert verdicts(checks, "gemm.bf16.mismatches") == ["pass"]  # what it did verify still counts


def test_a_gemm_stopped_before_its_first_result_is_incomplete_not_a_crash():
    checks = judge_gpu({"index": 0, "gemm": {"bf16": {}}}, H100, {})  # what a GPU wedged in its first GEMM leaves
    assert verdicts(checks, "gemm.bf16.windows") == ["incomplete"]


# --- too short a counter window, a counter that went backwards, a rate past the line rate ----------------
def readings(rack, seconds, tray="ct01"):
    nvml = SimNvml(rack, tray)
    nvml.nvmlInit()
    reader = NvmlReader(nvml, now=rack.now)
    before = reader.read_gpu(0)
    rack.clock.advance(seconds)
    return before, reader.read_gpu(0)


@pytest.mark.parametrize("seconds, verdict", [(ENOUGH["counter_window_s"] * 0.99, ["incomplete"]),
                                              (ENOUGH["counter_window_s"], [])])
def test_a_counter_window_needs_a_second_for_a_verdict(sim_rack, seconds, verdict):
    before, after = readings(sim_rack(), seconds)
    checks = judge_gpu({"index": 0, "counters": gpu_window(before, after, [])}, load_references(sku="gb200"), {})
    assert verdicts(checks, "counters.window_s") == verdict


def test_a_counter_that_went_backwards_is_not_judged_clean(sim_rack):
    before, after = readings(sim_rack(), 10)
    after.links[4].counters["symbol_errors"] = before.links[4].counters["symbol_errors"] - 1  # wrapped or reset
    checks = judge_gpu({"index": 0, "counters": gpu_window(before, after, [])}, load_references(sku="gb200"), {})
    went_back = [c for c in checks if c["check"] == "nvlink.symbol_errors" and c["verdict"] != "pass"]
    assert [(c["component"], c["verdict"]) for c in went_back] == [("gpu0/nvl04", "incomplete")]


def test_noise_past_the_line_rate_is_counted_at_the_line_rate_not_truncated_to_nothing(sim_rack, hgx_topology):
    from probes.sim.sku_models import NVLINK4_LINE_RATE_BITS

    rack = sim_rack("seed: 3\nnoise: {crc_per_s: 1.0e+300}\n", topology=hgx_topology)
    before, after = readings(rack, 10, tray="node")
    counters = gpu_window(before, after, [])
    rates = [link["rates_per_s"]["crc_errors"] for link in counters["links"]]
    assert len(rates) == 18 and all(rate == pytest.approx(NVLINK4_LINE_RATE_BITS, rel=1e-6) for rate in rates)
    checks = judge_gpu({"index": 0, "counters": counters}, load_references(sku="h100"), {})
    assert verdicts(checks, "nvlink.crc_errors") and set(verdicts(checks, "nvlink.crc_errors")) == {"fail"}


# --- a snapshot without links --------------------------------------------------------------------------
def test_a_snapshot_without_links_blames_no_part_for_an_nvlink_xid():
    from opsctl.localize import localize_snapshot

    document = {"rack": "rack07", "model": "gb200-nvl72", "window_seconds": 60, "links": [],
                "gpus": [{"id": "rack07/ct07/gpu0", "reachable": True, "xids": [149]}]}
    result = localize_snapshot(json.loads(json.dumps(document)))
    assert (result["status"], result["suspects"]) == ("incomplete", [])
    assert len(result["unread_trays"]) == 18


# --- a burn-in too short to judge --------------------------------------------------------------------------
@pytest.mark.parametrize("duration, short", [(1e-3, {"gemm.bf16.windows", "gemm.fp8.windows"}), (3.0, set())])
@pytest.mark.slow
def test_a_burn_in_too_short_to_judge_is_incomplete_never_a_pass(tmp_path, hgx_topology, duration, short):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text
    from probes.backend import open_backend
    from probes.run import RunOptions, TrayRun

    path = tmp_path / "spec.json"
    path.write_text(json.dumps(compile_rack_spec(scenario_from_text("seed: 11\n"), hgx_topology).to_dict()))
    backend = open_backend("sim", str(path), "node")
    try:
        document, code = TrayRun(backend, RunOptions(duration_s=duration, probes=("gemm", "membw", "nvlink", "counters"))).execute()
    finally:
        backend.close()
    too_short = {c["check"] for gpu in document["gpus"] for c in gpu["checks"]
                 if c["verdict"] == "incomplete" and c["check"] in ("gemm.bf16.windows", "gemm.fp8.windows", "counters.window_s")}
    # The counter window also counts the time the readings take, so a near-zero load may still
    # read counters over a second: the GEMM's own minimum is what decides here.
    assert short <= too_short and (short or not too_short)
    if short:  # every GPU says why, and the tray is not a pass
        assert code == 3 and document["status"] == "incomplete"
