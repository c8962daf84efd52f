"""One GPU through PyTorch: the real path on a tray (CUDA), and the same code on the CPU at
small size for tests. Results are compared on the device; only counts come back to the host.

Comparing results bit for bit is sound because cuBLAS gives bit-wise identical results run to
run on the same GPU architecture and SM count (cuBLAS documentation, "Results reproducibility").
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from probes.compute import DeviceError, GemmOperands, device_errors
from probes.compute.memory_patterns import PATTERNS, signed

GEMM_N = {"cuda": 16384, "cpu": 128}
COPY_BYTES = {"cuda": 2**30, "cpu": 2**24}
MEMTEST_BLOCK_BYTES = {"cuda": 2**30, "cpu": 2**20}  # the memory test allocates in blocks of this
CPU_FREE_BYTES = 2**26  # what the memory test calls free on the CPU (tests): 64 MiB
FP8_MIN_CAPABILITY = (8, 9)  # Ada and Hopper onwards have fp8 tensor cores
BF16_MIN_CAPABILITY = (8, 0)


def _torch() -> Any:
    import torch  # the `gpu` extra; imported on use so trays without it can still read NVML

    return torch


class TorchDevice:
    def __init__(self, device: str) -> None:
        torch = _torch()
        self.torch = torch
        self.device = torch.device(device)
        self.label = str(self.device)
        kind = self.device.type
        self.default_gemm_n = GEMM_N.get(kind, GEMM_N["cpu"])
        self.default_copy_bytes = COPY_BYTES.get(kind, COPY_BYTES["cpu"])
        self._buffers: dict[str, Any] = {}

    # --- what the device can do --------------------------------------------------------------
    def _capability(self) -> tuple[int, int] | None:
        if self.device.type != "cuda":
            return None
        return self.torch.cuda.get_device_capability(self.device)

    def unsupported_reason(self, dtype: str) -> str | None:
        torch = self.torch
        capability = self._capability()
        if dtype == "bf16":
            if capability is not None and capability < BF16_MIN_CAPABILITY:
                return f"bf16 needs compute capability {BF16_MIN_CAPABILITY}, this GPU has {capability}"
            return None
        if dtype != "fp8":
            return f"unknown GEMM dtype {dtype}"
        if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
            return f"fp8 not supported on this torch ({torch.__version__}: no torch._scaled_mm)"
        if capability is not None and capability < FP8_MIN_CAPABILITY:
            return f"fp8 not supported on this GPU (compute capability {capability}, needs {FP8_MIN_CAPABILITY})"
        try:  # the CPU build may lack the kernel: ask it with the smallest GEMM
            ops = self.gemm_operands("fp8", 16, 0)
            self.matmul(ops)
        except (RuntimeError, NotImplementedError, DeviceError) as error:
            return f"fp8 not supported on this GPU/torch: {str(error).splitlines()[0][:200]}"
        return None

    # --- GEMM ----------------------------------------------------------------------------------
    def gemm_operands(self, dtype: str, n: int, seed: int) -> GemmOperands:
        torch = self.torch
        generator = torch.Generator(device=self.device).manual_seed(seed)
        with device_errors(RuntimeError):
            a = torch.randn(n, n, generator=generator, device=self.device)
            b = torch.randn(n, n, generator=generator, device=self.device)
            if dtype == "bf16":
                return GemmOperands("bf16", n, n, a.to(torch.bfloat16), b.to(torch.bfloat16), "bfloat16")
            one = torch.ones((), dtype=torch.float32, device=self.device)
            # _scaled_mm wants its second operand column-major: the transpose of a row-major matrix.
            return GemmOperands("fp8", n, n, a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn).t(),
                                "bfloat16", extra=(one, one))

    def matmul(self, ops: GemmOperands) -> Any:
        torch = self.torch
        with device_errors(RuntimeError):
            if ops.dtype == "fp8":
                scale_a, scale_b = ops.extra
                return torch._scaled_mm(ops.a, ops.b, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16)
            return torch.matmul(ops.a, ops.b)

    def matmul_checked(self, ops: GemmOperands, golden: Any, iterations: int) -> tuple[int, int, float]:
        torch = self.torch
        with device_errors(RuntimeError):
            mismatches = torch.zeros((), dtype=torch.int64, device=self.device)
            bad_results = torch.zeros((), dtype=torch.int64, device=self.device)
            self._synchronize()
            started = time.perf_counter()
            for _ in range(iterations):
                wrong = torch.count_nonzero(self.matmul(ops) != golden)
                mismatches += wrong
                bad_results += wrong > 0
            counts = torch.stack([mismatches, bad_results]).tolist()  # waits for the GPU
            seconds = time.perf_counter() - started
        return int(counts[0]), int(counts[1]), seconds

    def to_host(self, array: Any, rows: slice, cols: slice) -> Any:
        with device_errors(RuntimeError):
            return array[rows, cols].to(self.torch.float64).cpu().numpy()

    def checksum(self, array: Any) -> str:
        """The result's bits summed as integers on the device: the same bits give the same sum on
        every GPU (integer addition does not depend on order), a single changed bit changes it."""
        torch = self.torch
        with device_errors(RuntimeError):
            words = array.contiguous().view(torch.int16).to(torch.int64)
            weights = torch.arange(words.numel(), device=self.device, dtype=torch.int64) % 65521 + 1
            plain, weighted = int(words.sum()), int((words.flatten() * weights).sum())
        return f"{plain & 0xFFFFFFFF:08x}{weighted & 0xFFFFFFFF:08x}"

    # --- memory test -------------------------------------------------------------------------------
    def _free_bytes(self) -> int:
        if self.device.type == "cuda":
            return self.torch.cuda.mem_get_info(self.device)[0]
        return CPU_FREE_BYTES

    def memory_test(self, pattern: str, fraction: float, seed: int) -> tuple[int, int, int, list[list[int]], float]:
        """One pattern over `fraction` of the free memory, in blocks: (free bytes, tested bytes,
        wrong words, [[first byte, end byte], …] of the tested memory, seconds)."""
        torch = self.torch
        block_bytes = MEMTEST_BLOCK_BYTES.get(self.device.type, MEMTEST_BLOCK_BYTES["cpu"])
        with device_errors(RuntimeError):
            self.release()
            free = self._free_bytes()
            words = block_bytes // 8
            expected = torch.empty(words, dtype=torch.int64, device=self.device)  # a pass's words for one block
            blocks: list[Any] = []
            while (len(blocks) + 2) * block_bytes <= free * fraction:
                blocks.append(torch.empty(words, dtype=torch.int64, device=self.device))
            self._synchronize()
            started = time.perf_counter()
            errors, ranges = 0, []
            passes = PATTERNS[pattern]
            for number, recipe in enumerate(passes):
                # Write every block, then read every block back: the later writes have had
                # their chance to disturb the earlier cells (moving inversions walks back down).
                order = range(len(blocks)) if number % 2 == 0 else range(len(blocks) - 1, -1, -1)
                for index in order:
                    blocks[index].copy_(self._words(recipe, blocks[index], expected, seed + index))
                for index in order:
                    wrong = blocks[index] != self._words(recipe, blocks[index], expected, seed + index)
                    count = int(wrong.sum())
                    if count:
                        where = torch.nonzero(wrong).flatten()
                        base = index * block_bytes
                        ranges.append([base + int(where[0]) * 8, base + int(where[-1]) * 8 + 8])
                        errors += count
            self._synchronize()
            seconds = time.perf_counter() - started
            tested = len(blocks) * block_bytes  # not the block of expected words: it is read, never checked
            del blocks, expected
            self.release()
        return free, tested, errors, ranges, seconds

    def _words(self, recipe: tuple[str, Any], block: Any, out: Any, seed: int) -> Any:
        torch = self.torch
        kind, arg = recipe
        if kind == "constant":
            return out.fill_(signed(arg))
        if kind == "address":
            torch.arange(out.numel(), out=out, device=self.device)
            out.add_(block.data_ptr() // 8)
        else:
            generator = torch.Generator(device=self.device).manual_seed(seed)
            out.random_(generator=generator)
        return out.bitwise_not_() if arg else out

    # --- copies ----------------------------------------------------------------------------------
    def _buffer(self, name: str, nbytes: int) -> Any:
        buffer = self._buffers.get(name)
        if buffer is None or buffer.numel() != nbytes:
            self._buffers.pop(name, None)
            buffer = self.torch.empty(nbytes, dtype=self.torch.uint8, device=self.device)
            buffer.fill_(0x5A)
            self._buffers[name] = buffer
        return buffer

    def copy(self, nbytes: int, iterations: int) -> float:
        with device_errors(RuntimeError):
            return self._timed_copies(self._buffer("source", nbytes), self._buffer("target", nbytes), iterations)

    def _timed_copies(self, source: Any, target: Any, iterations: int) -> float:
        """Seconds for `iterations` copies of source into target on this device's stream."""
        self._synchronize()
        started = time.perf_counter()
        for _ in range(iterations):
            target.copy_(source, non_blocking=True)
        self._synchronize()
        return time.perf_counter() - started

    def peer_copy(self, peer: TorchDevice, nbytes: int, iterations: int) -> float:
        with device_errors(RuntimeError):
            source, target = self._buffer("source", nbytes), peer._buffer("from_peer", nbytes)
            self._synchronize()
            peer._synchronize()
            started = time.perf_counter()
            for _ in range(iterations):
                target.copy_(source, non_blocking=True)
            self._synchronize()
            peer._synchronize()
            return time.perf_counter() - started

    def host_copy(self, to_device: bool, nbytes: int, iterations: int) -> float:
        with device_errors(RuntimeError):
            host = self._buffers.get("host")
            if host is None or host.numel() != nbytes:
                host = self.torch.empty(nbytes, dtype=self.torch.uint8, pin_memory=self.device.type == "cuda")
                host.fill_(0xA5)
                self._buffers["host"] = host  # page-locked on CUDA, as DCGM's pinned copies
            device = self._buffer("host_copy", nbytes)
            return self._timed_copies(*((host, device) if to_device else (device, host)), iterations)

    def _synchronize(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def release(self) -> None:
        self._buffers.clear()
        if self.device.type == "cuda":
            self.torch.cuda.empty_cache()


if TYPE_CHECKING:
    from probes.compute import ComputeDevice

    def _torch_is_compute_device(device: TorchDevice) -> ComputeDevice:
        return device  # mypy checks here that TorchDevice implements the whole device protocol
