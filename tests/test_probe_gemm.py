"""The burn-in GEMM and the copies, for real: PyTorch on the CPU at small size (the code that runs
on CUDA on a tray), and the simulator's device whose arithmetic is real at small size."""

import threading

import numpy as np
import pytest

from probes import gemm, membw
from probes.compute.sim_device import SimDevice
from probes.sim import SimComputeDevice



@pytest.fixture(scope="module")
def cpu():
    """A CPU TorchDevice; torch imported here, not at collection (seconds on every worker)."""
    pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test installs the CPU wheel)")
    from probes.compute.torch_device import TorchDevice

    return TorchDevice("cpu")


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_torch_gemm_burns_verifies_and_measures(cpu, dtype):
    reason = cpu.unsupported_reason(dtype)
    if reason is not None:  # an fp8-less torch build must say why, not pass
        assert dtype == "fp8" and "not supported" in reason
        assert gemm.burn(cpu, dtype, 0.3, 64, 0.1, threading.Event()) == {"skipped": reason}
        return
    result = gemm.burn(cpu, dtype, 0.6, 64, 0.05, threading.Event())
    assert result["verified"] and result["mismatches"] == 0 and result["checks"] >= 4 and result["finished"]
    assert result["tflops_median"] > 0 and result["tflops_min"] <= result["tflops_median"]
    assert result["tflops_windows"] and result["seconds"] >= 0.6 and result["n"] == 64  # burned the whole time
    # bf16 output: the float64 reference agrees to about bf16's precision, within the tolerance.
    assert 0 < result["max_rel_error"] <= result["tolerance"] < 0.1


def test_torch_comparison_counts_every_wrong_element_on_the_device(cpu):
    ops = cpu.gemm_operands("bf16", 32, seed=5)
    golden = cpu.matmul(ops)
    wrong = golden.clone()
    wrong[3, 7] += 1.0
    wrong[20, 1] = -wrong[20, 1] - 1.0
    mismatches, bad_results, seconds = cpu.matmul_checked(ops, wrong, 3)
    assert (mismatches, bad_results) == (6, 3) and seconds > 0
    assert cpu.matmul_checked(ops, golden, 3)[:2] == (0, 0)
    # A corrupted golden result also fails the independent float64 check.
    corrupted = golden.clone()
    corrupted[2, 2] += 10 * float(golden.abs().max())
    error, tolerance = gemm.reference_check(cpu, ops, corrupted)
    assert error > tolerance
    assert gemm.reference_check(cpu, ops, golden)[0] <= tolerance


def test_torch_copies_are_timed(cpu):
    result = membw.measure(cpu, 0.3, 2**20, 0.1, threading.Event())
    assert result["gbps"] > 0 and result["bytes"] >= 2 * 2**20 and result["counting"] == "bytes read + written"
    peer = type(cpu)("cpu")
    assert cpu.peer_copy(peer, 2**20, 2) > 0


def test_the_simulated_device_catches_injected_corruption_and_models_time(sim_rack):
    rack = sim_rack("faults: [{kind: sdc, gpu: ct03/gpu3, probability: 0.2}, {kind: slow_gpu, gpu: ct03/gpu0, factor: 0.5}]")
    corrupt, slow, healthy = (SimDevice(SimComputeDevice(rack, rack.trays["ct03"].gpus[i])) for i in (3, 0, 1))
    stop = threading.Event()
    bad = gemm.burn(corrupt, "bf16", 2.0, 16384, 0.5, stop)
    assert not bad["verified"] and bad["mismatches"] > 0 and 0 < bad["corrupted_results"] <= bad["checks"]
    good = gemm.burn(healthy, "bf16", 2.0, 16384, 0.5, stop)
    assert good["verified"] and good["mismatches"] == 0
    # Modelled time: healthy GB200 ≈ 1,950 TFLOPS (sim ground truth), the slow one half of it.
    assert 1850 < good["tflops_median"] < 2050 and abs(good["seconds"] - 2.0) < 0.1
    assert gemm.burn(slow, "bf16", 1.0, 16384, 0.5, stop)["tflops_median"] == pytest.approx(good["tflops_median"] / 2, rel=0.05)


def test_a_stop_ends_the_burn_with_what_it_measured(sim_rack):
    rack = sim_rack()
    device = SimDevice(SimComputeDevice(rack, rack.trays["ct01"].gpus[0]))
    stop = threading.Event()
    progress = {}
    rack.clock.advance(0)
    original = device.matmul_checked

    def stop_after_three(*args):  # the run's timeout, from another thread in real use
        if progress.get("checks", 0) > 0 and len(progress.get("tflops_windows", [])) >= 3:
            stop.set()
        return original(*args)

    device.matmul_checked = stop_after_three
    result = gemm.burn(device, "bf16", 100.0, 16384, 0.5, stop, progress=progress)
    assert result is progress and result["finished"] and 3 <= len(result["tflops_windows"]) <= 4
    assert result["seconds"] < 3


def test_numpy_reference_tolerance_follows_the_result_dtype(sim_rack):
    rack = sim_rack()
    device = SimDevice(SimComputeDevice(rack, rack.trays["ct01"].gpus[0]))
    ops = device.gemm_operands("bf16", 16384, seed=1)
    error, tolerance = gemm.reference_check(device, ops, device.matmul(ops))
    assert ops.result_dtype == "float32" and error < tolerance < 1e-4  # float32 arithmetic: far tighter than bf16
    assert np.isfinite(error)
