"""A simulated GPU as a compute device: the arithmetic is real (NumPy, at small size) so that
result verification and silent-data-corruption injection are real; the time it takes is
modelled from the SKU and the GPU's faults, and spent on the simulator's clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from probes.sim import host_link, profiles

if TYPE_CHECKING:
    from probes.sim.hardware import SimGpu, SimRack

DTYPE_PEAK = {"bf16": "bf16_tflops", "fp8": "fp8_tflops"}


class DeviceLost(RuntimeError):
    """The GPU stopped answering mid-run (as CUDA reports 'unspecified launch failure')."""


class SimComputeDevice:
    """One simulated GPU. `real_n` is the size the arithmetic really runs at."""

    def __init__(self, rack: SimRack, gpu: SimGpu, real_n: int = 64) -> None:
        self.rack = rack
        self.gpu = gpu
        self.name = gpu.sku.name
        self.real_n = real_n
        self._sdc_rng = profiles.seeded_random(rack.seed, gpu.id, "sdc")

    def supports(self, dtype: str) -> bool:
        return dtype in DTYPE_PEAK and getattr(self.gpu.sku, DTYPE_PEAK[dtype]) is not None

    def _check_alive(self) -> None:
        if self.gpu.is_lost(self.rack.now()):
            raise DeviceLost(f"{self.gpu.id}: GPU has fallen off the bus")
        while self.gpu.is_hung(self.rack.now()):
            self.rack.clock.sleep(3600)  # a wedged GPU: the call never comes back

    def tflops_now(self, dtype: str) -> float:
        """What this GPU achieves on a large GEMM of `dtype` at this moment."""
        return getattr(self.gpu.sku, DTYPE_PEAK[dtype]) * self.gpu.throughput_scale(self.rack.now())

    def gemm_seconds(self, n: int, dtype: str) -> float:
        return 2.0 * n**3 / (self.tflops_now(dtype) * 1e12)

    def _spend(self, seconds: float) -> None:
        """Hold the GPU busy for `seconds` of simulated time."""
        start = self.rack.now()
        self.gpu.add_load(start, seconds)
        self.rack.clock.sleep(seconds)

    def matmul_batch(self, a: Any, b: Any, iterations: int, logical_n: int, dtype: str) -> tuple[list[Any], float]:
        """Run `iterations` GEMMs of a @ b; return their results and the modelled seconds they
        took as if each were logical_n³. A GPU with silent data corruption returns some results
        with a flipped element, as a bad SM would."""
        with self.computing():
            return self._matmul_batch(a, b, iterations, logical_n, dtype)

    def computing(self) -> Any:
        """A block during which the GPU counts as busy (SimGpu.computing)."""
        return self.gpu.computing(self.rack.now)

    def _matmul_batch(self, a: Any, b: Any, iterations: int, logical_n: int, dtype: str) -> tuple[list[Any], float]:
        self._check_alive()
        seconds = self.gemm_seconds(logical_n, dtype) * iterations
        reference = a @ b
        if any(effect.kind == "deterministic_sdc" for effect in self.gpu.effects):
            # A bad SM or a bad cuBLAS path: the same element wrong in every result, so results
            # agree with each other (gpu-burn's check passes); only another GPU's result tells.
            where = profiles.seeded_random(self.rack.seed, self.gpu.id, "deterministic_sdc")
            i, j = where.randrange(1, reference.shape[0]), where.randrange(1, reference.shape[1])
            reference[i, j] = reference[i, j] * (1.0 + 2.0**-5) + 0.5
        results: list[Any] = []
        p = self.gpu.sdc_probability(self.rack.now())
        for _ in range(iterations):
            result = reference.copy()
            if p and self._sdc_rng.random() < p:
                i = self._sdc_rng.randrange(result.shape[0])
                j = self._sdc_rng.randrange(result.shape[1])
                result[i, j] = result[i, j] * (1.0 + 2.0 ** self._sdc_rng.randrange(-6, 4)) + 1.0
            results.append(result)
        self._spend(seconds)
        self._check_alive()
        return results, seconds

    def copy_seconds(self, nbytes: int) -> float:
        """Device-to-device copy of nbytes (read + written counted, as the reference figures)."""
        self._check_alive()
        gbps = self.gpu.sku.copy_gbps * self.gpu.throughput_scale(self.rack.now())
        seconds = 2 * nbytes / (gbps * 1e9)
        self._spend(seconds)
        return seconds

    def peer_copy_seconds(self, peer: SimGpu, nbytes: int) -> float:
        """Copy nbytes to `peer` (a SimGpu) over NVLink: the sum of both ends' live links,
        each limited by its slower side."""
        self._check_alive()
        t = self.rack.now()
        if peer.is_lost(t):
            raise DeviceLost(f"{peer.id}: peer GPU has fallen off the bus")
        mine = sum(link.bandwidth_factor(t) for link in self.gpu.links)
        theirs = sum(link.bandwidth_factor(t) for link in peer.links)
        usable = min(mine, theirs)
        if usable <= 0:
            raise DeviceLost(f"{self.gpu.id}: no NVLink path to {peer.id}")
        seconds = nbytes / (usable * self.gpu.sku.nvlink_gbps_per_link * 1e9)
        for links, total, direction in ((self.gpu.links, mine, "tx"), (peer.links, theirs, "rx")):
            for link in links:
                link.add_traffic(direction, nbytes * link.bandwidth_factor(t) / total)
        self._spend(seconds)
        return seconds

    def host_copy_seconds(self, nbytes: int) -> float:
        """Copy nbytes between pinned host memory and the GPU, one way, over its host link
        (probes/sim/host_link.py: PCIe as trained, or NVLink-C2C)."""
        self._check_alive()
        seconds = nbytes / (host_link.copy_gbps(self.gpu) * 1e9)
        self._spend(seconds)
        return seconds

    @staticmethod
    def random_matrix(n: int, seed: int) -> Any:
        return np.random.default_rng(seed).standard_normal((n, n)).astype(np.float32)
