"""The device side of the rack-wide collective on a real tray (or a CPU in tests): where its
tensors live, how long its collectives took (measured), and which path NCCL took (NCCL's own
INFO lines, which it writes to NCCL_DEBUG_FILE).

The simulator's counterpart is probes/sim/collective.py; probes/collective.py above them is
the same code on both.
"""

import glob
import os
import tempfile

NCCL_LINE_MARKS = (" via ", "NVLS")  # the lines that say which transport a channel took


def nccl_debug_dir():
    return tempfile.mkdtemp(prefix="probes-nccl-")


class TorchCollectiveDevice:
    gpus_per_rank = 1

    def __init__(self, kind, local_rank, debug_dir=None):
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

    def before_init(self):
        """NCCL reads its debug settings when it starts: ask it to say which transports it uses
        (NCCL environment variables NCCL_DEBUG and NCCL_DEBUG_FILE; %h host, %p process id)."""
        if self.debug_dir:
            os.environ["NCCL_DEBUG"] = "INFO"
            os.environ["NCCL_DEBUG_FILE"] = os.path.join(self.debug_dir, "nccl.%h.%p")

    def before_collective(self):
        pass

    def received(self, result):
        pass  # what NCCL wrote is what is verified

    def real_bytes(self, nbytes):
        return nbytes

    def synchronize(self):
        if self.torch_device.type == "cuda":
            self.torch.cuda.synchronize(self.torch_device)

    def collective_seconds(self, operation, nbytes, trays, gpus, iterations, measured_s):
        return measured_s

    def nccl_lines(self, rank, world):
        if not self.debug_dir:
            return []
        lines = []
        for path in glob.glob(os.path.join(self.debug_dir, f"nccl.*.{os.getpid()}")):
            with open(path, encoding="utf-8", errors="replace") as file:
                lines += [line.strip() for line in file if any(mark in line for mark in NCCL_LINE_MARKS)]
        return lines
