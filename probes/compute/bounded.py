"""A compute device whose every call runs on its GPU's own worker under a deadline.

A kernel on a wedged GPU never completes and its call cannot be cancelled; run on the probe's
task thread, it would hold that thread until the whole probe's timeout and say only that the
probe timed out. Here the call runs on the GPU's compute worker (probes.gpu_deadline): at the
deadline the GPU fails with DeviceHung, naming the call, while the other GPUs' loads go on and
their results are kept; the stuck call stays behind on its worker, alone.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from probes.compute import ComputeDevice, DeviceError
from probes.gpu_deadline import COMPUTE_DEADLINE_S, GpuHung, GpuWorkers


class DeviceHung(DeviceError):
    """A compute call on the GPU did not return within the deadline."""


def bounded_devices(devices: dict[int, ComputeDevice],
                    deadline_s: float = COMPUTE_DEADLINE_S) -> tuple[dict[int, ComputeDevice], GpuWorkers]:
    """{index: BoundedDevice} over {index: device}, sharing one set of per-GPU workers."""
    workers = GpuWorkers("compute", deadline_s)
    return {index: BoundedDevice(device, index, workers) for index, device in devices.items()}, workers


class BoundedDevice:
    def __init__(self, device: ComputeDevice, index: int, workers: GpuWorkers) -> None:
        self.inner = device
        self.index = index
        self.workers = workers
        self.label = device.label
        self.default_gemm_n = device.default_gemm_n
        self.default_copy_bytes = device.default_copy_bytes

    def _run(self, what: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.workers.call(self.index, what, functools.partial(getattr(self.inner, what), *args, **kwargs))
        except GpuHung as hung:
            raise DeviceHung(f"{self.label}: {hung.reason}") from None

    def peer_copy(self, peer: ComputeDevice, nbytes: int, iterations: int) -> float:
        # On this GPU's worker: the copy is this GPU's call (the peer's worker may be busy loading).
        return self._run("peer_copy", getattr(peer, "inner", peer), nbytes, iterations)

    def __getattr__(self, name: str) -> Any:
        """Every other call of the device protocol (gemm_operands, matmul_checked, copy, release…),
        bounded the same way; plain attributes are read as they are."""
        value = getattr(self.inner, name)
        if not callable(value):
            return value
        return functools.partial(self._run, name)


if TYPE_CHECKING:
    def _bounded_is_compute_device(device: BoundedDevice) -> ComputeDevice:
        return device  # mypy checks here that BoundedDevice implements the whole device protocol
