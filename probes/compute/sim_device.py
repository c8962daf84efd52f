"""The simulator's compute device behind the probes' device protocol.

The arithmetic is real (NumPy, at the simulator's small size), so verification really compares
results and silent data corruption really shows as wrong elements; the time each call takes is
the simulator's model, spent on its clock.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import numpy as np

from probes.compute import GemmOperands, device_errors
from probes.sim import memory
from probes.sim.device import DeviceLost, SimComputeDevice

# Modelled sizes: what a real tray would run (the simulator spends the time these would take).
GEMM_N = 16384
COPY_BYTES = 2**30
# Results one simulator call holds at once (each is a real_n × real_n array).
MAX_BATCH = 512


class SimDevice:
    def __init__(self, sim_device: SimComputeDevice) -> None:
        self.sim = sim_device
        self.label = f"sim {sim_device.gpu.id}"
        self.default_gemm_n = GEMM_N
        self.default_copy_bytes = COPY_BYTES

    def unsupported_reason(self, dtype: str) -> str | None:
        if self.sim.supports(dtype):
            return None
        return f"{dtype} is not supported on {self.sim.name}"

    def gemm_operands(self, dtype: str, n: int, seed: int) -> GemmOperands:
        real_n = self.sim.real_n
        return GemmOperands(dtype=dtype, n=n, real_n=real_n, result_dtype="float32",
                            a=self.sim.random_matrix(real_n, seed), b=self.sim.random_matrix(real_n, seed + 1))

    def matmul(self, ops: GemmOperands) -> Any:
        with device_errors(DeviceLost):
            results, _ = self.sim.matmul_batch(ops.a, ops.b, 1, ops.n, ops.dtype)
        return results[0]

    def matmul_checked(self, ops: GemmOperands, golden: Any, iterations: int) -> tuple[int, int, float]:
        mismatches = bad_results = 0
        seconds = 0.0
        with device_errors(DeviceLost), self.sim.computing():  # comparing the results is the GPU's work too
            while iterations > 0:
                batch = min(iterations, MAX_BATCH)
                results, took = self.sim.matmul_batch(ops.a, ops.b, batch, ops.n, ops.dtype)
                for result in results:
                    wrong = int(np.count_nonzero(result != golden))
                    mismatches += wrong
                    bad_results += wrong > 0
                seconds += took
                iterations -= batch
        return mismatches, bad_results, seconds

    def to_host(self, array: Any, rows: slice, cols: slice) -> Any:
        return np.asarray(array[rows, cols], dtype=np.float64)

    def checksum(self, array: Any) -> str:
        return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]

    def memory_test(self, pattern: str, fraction: float, seed: int) -> tuple[int, int, int, list[list[int]], float]:
        with device_errors(DeviceLost):
            return memory.memory_test(self.sim, pattern, fraction, seed)

    def copy(self, nbytes: int, iterations: int) -> float:
        with device_errors(DeviceLost):
            return self.sim.copy_seconds(nbytes * iterations)

    def peer_copy(self, peer: SimDevice, nbytes: int, iterations: int) -> float:
        with device_errors(DeviceLost):
            return self.sim.peer_copy_seconds(peer.sim.gpu, nbytes * iterations)

    def host_copy(self, to_device: bool, nbytes: int, iterations: int) -> float:
        with device_errors(DeviceLost):
            return self.sim.host_copy_seconds(nbytes * iterations)

    def release(self) -> None:
        pass



if TYPE_CHECKING:
    from probes.compute import ComputeDevice

    def _sim_is_compute_device(device: SimDevice) -> ComputeDevice:
        return device  # mypy checks here that SimDevice implements the whole device protocol
