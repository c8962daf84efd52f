"""The hardware simulator: the slice of nvidia-ml-py that the probes call, and a compute
device, over a model of a rack with injected faults.

It replaces only the hardware. The code that reads it is the code that reads a real tray.
Entry points: `SimRack` (the model, from a `RackSpec`), `SimNvml` (the pynvml slice for one
tray) and `SimComputeDevice` (GEMMs and copies on one simulated GPU).
"""

from typing import TYPE_CHECKING, Any

from probes.sim.hardware import SimRack
from probes.sim.nvml import SimNvml
from probes.sim.spec import RackSpec

if TYPE_CHECKING:
    from probes.sim.device import SimComputeDevice

__all__ = ["RackSpec", "SimComputeDevice", "SimNvml", "SimRack"]


def __getattr__(name: str) -> Any:
    # The compute device loads numpy (0.15 CPU-s a process): only a tray that computes pays for it,
    # not a switch tray's probe or a snapshot.
    if name == "SimComputeDevice":
        from probes.sim.device import SimComputeDevice

        return SimComputeDevice
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
