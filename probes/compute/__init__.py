"""A GPU as the load probes see it: GEMMs, device copies and peer copies, each timed.

Two implementations sit behind one protocol: `TorchDevice` (PyTorch on CUDA on a real tray, or
on the CPU at small size in tests) and `SimDevice` (the simulator's compute device, whose
arithmetic is real at small size and whose time is modelled). The probes above this seam —
burn-in GEMM with verification, memory bandwidth, NVLink bandwidth — are the same code on both.
"""

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

# Unit roundoff of each result dtype: half the distance from 1 to the next number
# (IEEE 754 binary64/32/16; bfloat16 keeps 8 significant bits).
UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
DTYPES = ("bf16", "fp8")


class DeviceError(RuntimeError):
    """The GPU failed under load: fell off the bus, a CUDA error, no path to a peer."""


@contextmanager
def device_errors(*kinds):
    """Turn an implementation's own failure exceptions into DeviceError."""
    try:
        yield
    except kinds as error:
        raise DeviceError(str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__) from error


@dataclass
class GemmOperands:
    """Inputs of a burn-in GEMM, resident on the device."""

    dtype: str  # "bf16" or "fp8"
    n: int  # the GEMM size the throughput counts (n × n × n)
    real_n: int  # the size the arithmetic really runs at (n, except in simulation)
    a: Any
    b: Any
    result_dtype: str  # key of UNIT_ROUNDOFF
    accumulate_dtype: str = "float32"
    extra: Any = None  # what the device needs besides a and b (fp8 scales)


class ComputeDevice(Protocol):
    label: str  # "cuda:2", "sim ct03/gpu2"
    default_gemm_n: int
    default_copy_bytes: int

    def unsupported_reason(self, dtype: str) -> str | None:
        """None when the device runs GEMMs of `dtype`; otherwise why it cannot."""

    def gemm_operands(self, dtype: str, n: int, seed: int) -> GemmOperands: ...

    def matmul(self, ops: GemmOperands) -> Any:
        """One GEMM a @ b; the result stays on the device."""

    def matmul_checked(self, ops: GemmOperands, golden: Any, iterations: int) -> tuple[int, int, float]:
        """Run `iterations` GEMMs, comparing each result with `golden` on the device, element
        by element (gpu-burn's check). Returns (mismatching elements, results with any
        mismatch, seconds the batch took)."""

    def to_host(self, array: Any, rows: slice, cols: slice) -> Any:
        """A block of a device array as a float64 NumPy array."""

    def checksum(self, array: Any) -> str:
        """A digest of a device array's bits: equal bits, equal digest, on any GPU."""

    def memory_test(self, pattern: str, fraction: float, seed: int) -> tuple[int, int, int, list, float]:
        """One memory-test pattern (probes/compute/memory_patterns.py) over `fraction` of the free
        memory: (free bytes, tested bytes, wrong words, [[first byte, end byte], …], seconds)."""

    def copy(self, nbytes: int, iterations: int) -> float:
        """Seconds for `iterations` device-to-device copies of `nbytes`."""

    def peer_copy(self, peer: "ComputeDevice", nbytes: int, iterations: int) -> float:
        """Seconds for `iterations` copies of `nbytes` from this GPU to `peer` (over NVLink)."""

    def release(self) -> None:
        """Free what the probes allocated."""
