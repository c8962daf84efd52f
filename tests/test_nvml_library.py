"""Both NVML backends answer the whole NvmlLibrary protocol. mypy checks SimNvml against it;
nvidia-ml-py has no type information, so the real module is checked here, name by name."""

import pynvml

from probes.nvml_library import NvmlLibrary
from probes.sim import SimNvml


def protocol_members(protocol):
    calls = {name for name, value in vars(protocol).items() if callable(value) and not name.startswith("_")}
    return calls | set(protocol.__annotations__)


def test_the_protocol_lists_the_calls_and_the_constants():
    members = protocol_members(NvmlLibrary)
    assert {"nvmlDeviceGetFieldValues", "NVMLError_GpuIsLost", "NVML_SUCCESS"} <= members
    assert "nvmlDeviceSetPowerManagementLimit" not in members  # the probes only read


def test_the_real_pynvml_has_every_member():
    missing = sorted(name for name in protocol_members(NvmlLibrary) if not hasattr(pynvml, name))
    assert missing == []


def test_the_simulator_implements_every_member(sim_rack):
    nvml = SimNvml(sim_rack("faults: []"), "ct01")
    missing = sorted(name for name in protocol_members(NvmlLibrary) if not hasattr(nvml, name))
    assert missing == []
    # A pynvml function the simulator does not implement is missing, not silently pynvml's own.
    assert not hasattr(nvml, "nvmlDeviceSetPowerManagementLimit") and hasattr(pynvml, "nvmlDeviceSetPowerManagementLimit")
