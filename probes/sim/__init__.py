"""The hardware simulator: the slice of nvidia-ml-py that the probes call, and a compute
device, over a model of a rack with injected faults.

It replaces only the hardware. The code that reads it is the code that reads a real tray.
Entry points: `SimRack` (the model, from a `RackSpec`), `SimNvml` (the pynvml slice for one
tray) and `SimComputeDevice` (GEMMs and copies on one simulated GPU).
"""

from probes.sim.device import SimComputeDevice
from probes.sim.hardware import SimRack
from probes.sim.nvml import SimNvml
from probes.sim.spec import RackSpec

__all__ = ["RackSpec", "SimComputeDevice", "SimNvml", "SimRack"]
