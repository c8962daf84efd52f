"""The simulator's side of the rack-wide collective: one process stands for a tray's GPUs, its
arrays live on the CPU (the collectives really run, at small size, between the trays' processes
through probes/sim/exchange.py, NumPy and a plain-Python store, no PyTorch, and are verified),
and the time a collective takes is modelled from the rack for the size asked.

The model (the simulator's ground truth, not a threshold): a collective over some GPUs moves
its bus bytes (nccl-tests' busbw factor × the size) at the pace of the GPU with the least live
NVLink bandwidth (its links' shares, as allreduce_busbw_gbps), plus a fixed latency per call;
when NCCL has fallen back to the network (scenario fault `nccl_fallback`) at one network port's
speed per GPU instead. It answers NCCL's INFO lines as NCCL would print them for that path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from probes.collective import BUS_FACTORS
from probes.sim.device import DeviceLost
from probes.sim.exchange import NumpyExchange
from probes.sim.hardware import SimRack, allreduce_busbw_gbps

LATENCY_S = 25e-6  # per collective call, the simulator's figure for a small NVLink collective
REAL_BYTES = 16 * 2**10  # what really moves between the trays, whatever the size asked
NETWORK_GBPS_PER_GPU = 50.0  # one 400 Gb/s port per GPU: the path NCCL falls back to


class SimCollectiveDevice:
    gpus_per_rank: int
    torch_device: Any = "cpu"

    def __init__(self, rack: SimRack, tray: str) -> None:
        self.rack = rack
        self.tray = rack.trays[tray]
        self.name = rack.sku.name
        self.gpus_per_rank = len(self.tray.gpus)
        self.fallback = bool(rack.spec.domain.get("nccl_fallback"))

    def exchange(self) -> NumpyExchange:
        """The collectives on NumPy arrays through a plain-Python store: no PyTorch on a simulated tray."""
        return NumpyExchange()

    def before_init(self) -> None:
        pass

    def before_collective(self) -> None:
        """A lost GPU fails its tray's rank; a hung one never lets it reach the collective."""
        t = self.rack.now()
        lost = [gpu.id for gpu in self.tray.gpus if gpu.is_lost(t)]
        if lost:
            raise DeviceLost(f"{', '.join(lost)}: GPU has fallen off the bus")
        while any(gpu.is_hung(self.rack.now()) for gpu in self.tray.gpus):
            self.rack.clock.sleep(1.0)

    def received(self, result: Any) -> None:
        """A GPU with deterministic silent data corruption (scenario `deterministic_sdc`) reduces
        and copies on the same faulty SMs as its GEMMs: one element of what its tray receives
        is wrong, the same one every time, and the tray's verification catches it."""
        if any(effect.kind == "deterministic_sdc" for gpu in self.tray.gpus for effect in gpu.effects):
            result[len(result) // 2] += 0.5

    def real_bytes(self, nbytes: int) -> int:
        return min(nbytes, REAL_BYTES)

    def synchronize(self) -> None:
        pass

    def bandwidth_gbps(self, trays: list[str]) -> float:
        if self.fallback:
            return NETWORK_GBPS_PER_GPU
        gpus = [gpu for tray in trays for gpu in self.rack.trays[tray].gpus]
        return allreduce_busbw_gbps(gpus, self.rack.now())

    def collective_seconds(self, operation: str, nbytes: int, trays: list[str], gpus: int, iterations: int,
                           measured_s: float) -> float:
        bandwidth = self.bandwidth_gbps(trays)
        bus_bytes = nbytes * (BUS_FACTORS[operation](gpus) if gpus > 1 else 1.0)
        if bandwidth <= 0:
            raise DeviceLost(f"no NVLink path left among the GPUs of {', '.join(trays)}")
        return iterations * (LATENCY_S + bus_bytes / (bandwidth * 1e9))

    def nccl_lines(self, rank: int, world: int) -> list[str]:
        """NCCL's INFO lines for this rank's ring channel, in NCCL's words (src/transport/p2p.cc,
        net.cc, nvls.cc)."""
        peer = (rank + 1) % world
        host = f"{self.rack.spec.rack}-{self.tray.name}"
        if self.fallback:
            return [f"{host}:{rank}:{rank} [0] NCCL INFO Channel 00/0 : {rank}[0] -> {peer}[0] [send] via NET/IB/0/GDRDMA"]
        multi_node = sum(1 for tray in self.rack.spec.trays if tray.gpus) > 1  # NVLink across trays (MNNVL)
        path = "P2P/MNNVL/read" if multi_node else "P2P/CUMEM/read"
        return [f"{host}:{rank}:{rank} [0] NCCL INFO Channel 00/0 : {rank}[0] -> {peer}[0] via {path}",
                f"{host}:{rank}:{rank} [0] NCCL INFO NVLS multicast support is available on dev 0"]


if TYPE_CHECKING:
    from probes.compute import CollectiveDevice

    def _sim_is_collective_device(device: SimCollectiveDevice) -> CollectiveDevice:
        return device  # mypy checks here that SimCollectiveDevice implements the collective protocol
