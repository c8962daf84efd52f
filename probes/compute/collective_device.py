"""The device side of the rack-wide collective on a real tray (or a CPU in tests): where its
tensors live, how long its collectives took (measured), and which path NCCL took (NCCL's own
INFO lines, which it writes to NCCL_DEBUG_FILE).

The simulator's counterpart is probes/sim/collective.py; probes/collective.py above them is
the same code on both.
"""

from __future__ import annotations

import glob
import os
import tempfile
import datetime
from typing import TYPE_CHECKING, Any

NCCL_LINE_MARKS = (" via ", "NVLS")  # the lines that say which transport a channel took


def nccl_debug_dir() -> str:
    return tempfile.mkdtemp(prefix="probes-nccl-")


class TorchCollectiveDevice:
    gpus_per_rank = 1

    def __init__(self, kind: str, local_rank: int, debug_dir: str | None = None) -> None:
        import torch

        self.torch = torch
        self.debug_dir = debug_dir
        if kind == "cuda":
            torch.cuda.set_device(local_rank)
            self.torch_device = torch.device("cuda", local_rank)
            self.name = torch.cuda.get_device_name(self.torch_device)
        else:
            self.torch_device = torch.device("cpu")
            self.name = "cpu"

    def exchange(self) -> TorchExchange:
        return TorchExchange(self.torch, self.torch_device)

    def before_init(self) -> None:
        """NCCL reads its debug settings when it starts: ask it to say which transports it uses
        (NCCL environment variables NCCL_DEBUG and NCCL_DEBUG_FILE; %h host, %p process id)."""
        if self.debug_dir:
            os.environ["NCCL_DEBUG"] = "INFO"
            os.environ["NCCL_DEBUG_FILE"] = os.path.join(self.debug_dir, "nccl.%h.%p")

    def before_collective(self) -> None:
        pass

    def received(self, result: object) -> None:
        pass  # what NCCL wrote is what is verified

    def real_bytes(self, nbytes: int) -> int:
        return nbytes

    def synchronize(self) -> None:
        if self.torch_device.type == "cuda":
            self.torch.cuda.synchronize(self.torch_device)

    def collective_seconds(self, operation: str, nbytes: int, trays: list[str], gpus: int, iterations: int,
                           measured_s: float) -> float:
        return measured_s

    def nccl_lines(self, rank: int, world: int) -> list[str]:
        if not self.debug_dir:
            return []
        lines: list[str] = []
        for path in glob.glob(os.path.join(self.debug_dir, f"nccl.*.{os.getpid()}")):
            with open(path, encoding="utf-8", errors="replace") as file:
                lines += [line.strip() for line in file if any(mark in line for mark in NCCL_LINE_MARKS)]
        return lines


class TorchExchange:
    """The job's rendezvous (torch.distributed's TCPStore) and collectives (NCCL on GPUs, gloo on
    CPUs) on torch tensors: what probes/collective.py runs on a real tray. The simulator's
    counterpart, without PyTorch, is probes/sim/exchange.py."""

    def __init__(self, torch: Any, device: Any) -> None:
        import torch.distributed as dist

        self.torch, self.dist, self.device = torch, dist, device

    def connect(self, host: str, port: int, rank: int, timeout_s: float) -> Any:
        self.store = self.dist.TCPStore(host, port, None, rank == 0, timeout=datetime.timedelta(seconds=timeout_s),
                                        wait_for_workers=False)
        return self.store

    def init(self, backend: str, rank: int, world: int, timeout_s: float) -> None:
        self.dist.init_process_group(backend, store=self.dist.PrefixStore("job", self.store), rank=rank, world_size=world,
                                     timeout=datetime.timedelta(seconds=timeout_s))

    def destroy(self) -> None:
        self.dist.destroy_process_group()

    def close(self) -> None:
        pass

    def new_group(self, ranks: list[int]) -> Any:
        return self.dist.new_group(ranks)

    def full(self, n: int, value: float) -> Any:
        return self.torch.full((n,), value, device=self.device)

    def chunk_index(self, n: int, count: int) -> Any:
        return self.torch.arange(n, dtype=self.torch.float32, device=self.device).repeat_interleave(count)

    def empty(self, n: int) -> Any:
        return self.torch.empty(n, device=self.device)

    def clone(self, array: Any) -> Any:
        return array.clone()

    def equal(self, a: Any, b: Any) -> bool:
        return bool(self.torch.equal(a, b))

    def call(self, op: str, send: Any, recv: Any, group: Any) -> Any:
        dist = self.dist
        if op == "all_reduce":
            return dist.all_reduce(send, group=group, async_op=True)
        if op == "all_gather":
            return getattr(dist, "all_gather_single", dist.all_gather_into_tensor)(recv, send, group=group, async_op=True)
        if op == "reduce_scatter":
            return getattr(dist, "reduce_scatter_single", dist.reduce_scatter_tensor)(recv, send, group=group, async_op=True)
        return dist.all_to_all_single(recv, send, group=group, async_op=True)

    def max_across(self, values: list[float], group: Any = None) -> list[float]:
        times = self.torch.tensor(values, dtype=self.torch.float64, device=self.device)
        self.dist.all_reduce(times, op=self.dist.ReduceOp.MAX, group=group)
        return [float(t) for t in times.cpu()]


if TYPE_CHECKING:
    from probes.compute import CollectiveDevice

    def _torch_is_collective_device(device: TorchCollectiveDevice) -> CollectiveDevice:
        return device  # mypy checks here that TorchCollectiveDevice implements the collective protocol
