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
from typing import TYPE_CHECKING

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


if TYPE_CHECKING:
    from probes.compute import CollectiveDevice

    def _torch_is_collective_device(device: TorchCollectiveDevice) -> CollectiveDevice:
        return device  # mypy checks here that TorchCollectiveDevice implements the collective protocol
