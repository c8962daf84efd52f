"""A GPU as the load probes see it: GEMMs, device copies and peer copies, each timed.

Two implementations sit behind one protocol: `TorchDevice` (PyTorch on CUDA on a real tray, or
on the CPU at small size in tests) and `SimDevice` (the simulator's compute device, whose
arithmetic is real at small size and whose time is modelled). The probes above this seam —
burn-in GEMM with verification, memory bandwidth, NVLink bandwidth — are the same code on both.
The rack-wide collective has its own seam, `CollectiveDevice`, below.

The protocols are what mypy checks: each implementation ends with a `_…_is_compute_device` (or
`_is_collective_device`) function, seen only by the type checker, that returns an instance as
the protocol — an implementation that misses a call or changes its signature fails the check.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator

    from typing_extensions import Self

# Unit roundoff of each result dtype: half the distance from 1 to the next number
# (IEEE 754 binary64/32/16; bfloat16 keeps 8 significant bits).
UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
DTYPES = ("bf16", "fp8")


class DeviceError(RuntimeError):
    """The GPU failed under load: fell off the bus, a CUDA error, no path to a peer."""


@contextmanager
def device_errors(*kinds: type[BaseException]) -> Iterator[None]:
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

    def peer_copy(self, peer: Self, nbytes: int, iterations: int) -> float:
        """Seconds for `iterations` copies of `nbytes` from this GPU to `peer` (over NVLink)."""

    def host_copy(self, to_device: bool, nbytes: int, iterations: int) -> float:
        """Seconds for `iterations` copies of `nbytes` between pinned host memory and the GPU
        (to it, or from it): over PCIe on HGX, NVLink-C2C on GB200."""

    def release(self) -> None:
        """Free what the probes allocated."""


class CollectiveDevice(Protocol):
    """One rank's side of the rack-wide collective (probes/collective.py): `TorchCollectiveDevice`
    (probes/compute/collective_device.py: a GPU, or the CPU in tests) and `SimCollectiveDevice`
    (probes/sim/collective.py: one process stands for a simulated tray's GPUs)."""

    name: str  # the GPU's name, as the report gives it
    gpus_per_rank: int  # GPUs one rank stands for
    torch_device: Any  # where the rank's tensors live (a torch.device, or "cpu")

    def exchange(self) -> Any:
        """The job's rendezvous store and collectives on this device's arrays: torch.distributed
        (NCCL, gloo) on a real tray, NumPy through a plain-Python store in the simulator."""

    def before_init(self) -> None:
        """Called before the process group starts (NCCL reads its debug settings then)."""

    def before_collective(self) -> None:
        """Called as the rank arrives at each collective: a lost GPU raises, a hung one blocks."""

    def received(self, result: Any) -> None:
        """Called with a collective's result before it is verified."""

    def real_bytes(self, nbytes: int) -> int:
        """The bytes really moved for a collective of `nbytes`."""

    def synchronize(self) -> None: ...

    def collective_seconds(self, operation: str, nbytes: int, trays: list[str], gpus: int, iterations: int,
                           measured_s: float) -> float:
        """Seconds `iterations` calls took: measured on GPUs, modelled in the simulator."""

    def nccl_lines(self, rank: int, world: int) -> list[str]:
        """NCCL's INFO lines that say which transport each channel took."""
