"""Each GPU against the other GPUs of its rack: thresholds that let the simulator's healthy
spread pass and still catch the seeded slow GPU (−14%) and the thermal throttle."""

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from opsctl.acceptance.criteria import load_criteria
from opsctl.burnin.rack_relative import RackGpu, judge_rack_relative

CRITERIA = load_criteria()
SKU = "NVIDIA GB200"


def _gpus(readings):
    return [RackGpu(f"rack07/ct{i // 4 + 1:02d}/gpu{i % 4}", SKU, reading) for i, reading in enumerate(readings)]


def _reading(tflops, clock=2062, temperature=69, power=1150.0, membw=6800.0):
    return {"gemm": {"bf16": {"tflops_median": tflops}}, "membw": {"gbps": membw},
            "under_load": {"sm_clock_mhz_median": clock, "temperature_c_max": temperature, "power_w_median": power}}


def _failing(checks):
    return {(c.component, c.check) for c in checks if c.verdict == "fail"}


def test_the_simulators_healthy_rack_passes_and_its_faulty_gpus_fail(sim_rack):
    """Readings as the simulator models each GPU under load (its per-GPU spread and faults)."""
    rack = sim_rack("seed: 7\nfaults:\n"
                    "  - {kind: slow_gpu, gpu: ct15/gpu0, factor: 0.86}\n"
                    "  - {kind: thermal_throttle, gpu: ct09/gpu2, after_busy_s: 3, clock_factor: 0.72, temperature_c: 92}\n")
    readings = []
    for gpu in rack.gpus():
        gpu.add_load(rack.now(), 60.0)
        rack.clock.advance(30.0)
        t = rack.now()
        readings.append(_reading(gpu.sku.bf16_tflops * gpu.throughput_scale(t), gpu.sm_clock_mhz(t),
                                 gpu.temperature_c(t), gpu.power_w(t)))
    checks, notes = judge_rack_relative(_gpus(readings), CRITERIA)
    assert not notes
    assert _failing(checks) == {
        ("rack07/ct15/gpu0", "rack.gemm_bf16_tflops"),
        ("rack07/ct09/gpu2", "rack.gemm_bf16_tflops"), ("rack07/ct09/gpu2", "rack.sm_clock_mhz"),
        ("rack07/ct09/gpu2", "rack.temperature_c"),
    }
    slow = next(c for c in checks if c.component == "rack07/ct15/gpu0" and c.check == "rack.gemm_bf16_tflops")
    assert slow.op == "<" and slow.value < slow.threshold and slow.unit == "TFLOPS"
    assert "median of the rack's 72 NVIDIA GB200 GPUs" in slow.source and "opsctl-default 1.2" in slow.source
    assert "below the rack median" in slow.reason
    # Every GPU is judged on every metric it has, passes included (the report shows the margins).
    assert len({c.component for c in checks}) == 72


@settings(max_examples=60, deadline=None)
@given(spread=st.lists(st.floats(-0.025, 0.025), min_size=72, max_size=72),
       slow=st.integers(0, 71), temperatures=st.lists(st.integers(-4, 4), min_size=72, max_size=72))
@pytest.mark.slow
def test_a_healthy_spread_never_fails_and_a_14_percent_slow_gpu_always_does(spread, slow, temperatures):
    readings = [_reading(1950.0 * (1 + s), temperature=69 + dt) for s, dt in zip(spread, temperatures)]
    assert not _failing(judge_rack_relative(_gpus(readings), CRITERIA)[0])
    readings[slow] = _reading(1950.0 * (1 + spread[slow]) * 0.86, temperature=69 + temperatures[slow])
    assert _failing(judge_rack_relative(_gpus(readings), CRITERIA)[0]) == {(_gpus(readings)[slow].id, "rack.gemm_bf16_tflops")}


def test_gpus_are_compared_only_with_their_own_sku_and_only_when_there_are_enough():
    gpus = _gpus([_reading(1950.0)] * 8)
    h100 = [RackGpu(f"mixed/gpu{i}", "NVIDIA H100 80GB HBM3", _reading(785.0)) for i in range(3)]
    checks, notes = judge_rack_relative(gpus + h100, CRITERIA)
    assert not _failing(checks)  # 785 is not "slow" next to 1950: different SKUs
    assert {c.component for c in checks} == {g.id for g in gpus}
    assert any("only 3 NVIDIA H100 80GB HBM3 GPU(s)" in note for note in notes)
