"""The simulator is the slice of nvidia-ml-py that opsctl calls: same names, same parameters,
the very structs, constants and error classes of the installed pynvml."""

import inspect

import pynvml
import pytest

from probes.sim import SimNvml


def public_methods():
    return [name for name, _ in inspect.getmembers(SimNvml, inspect.isfunction) if name.startswith("nvml")]


@pytest.mark.parametrize("name", public_methods())
def test_every_simulated_call_exists_in_pynvml_with_the_same_parameters(name):
    real = getattr(pynvml, name, None)
    assert callable(real), f"pynvml has no {name}"
    simulated = list(inspect.signature(getattr(SimNvml, name)).parameters)[1:]  # drop self
    assert simulated == list(inspect.signature(real).parameters), name


def test_the_slice_covers_every_call_the_probes_make():
    import re
    from pathlib import Path

    source = "\n".join(p.read_text() for p in Path(__import__("probes").__file__).parent.rglob("*.py") if "sim" not in p.parts)
    called = set(re.findall(r"\"(nvml[A-Z]\w+)\"", source)) | set(re.findall(r"nvml\.(nvml[A-Z]\w+)\(", source))
    called = {name for name in called if callable(getattr(pynvml, name, None))}
    assert called, "the probes call NVML somewhere"
    missing = sorted(called - set(public_methods()))
    assert not missing, f"the probes call NVML functions the simulator lacks: {missing}"


def test_constants_structs_and_errors_are_pynvmls_own(sim_rack):
    nvml = SimNvml(sim_rack())
    assert nvml.NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER == pynvml.NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER
    assert nvml.nvmlClocksEventReasonHwPowerBrakeSlowdown == pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown
    assert nvml.c_nvmlGpuFabricInfo_v3_t is pynvml.c_nvmlGpuFabricInfo_v3_t
    assert nvml.NVMLError_GpuIsLost is pynvml.NVMLError_GpuIsLost
    assert issubclass(nvml.NVMLError_NotSupported, pynvml.NVMLError)


def test_unimplemented_calls_fail_loudly_instead_of_reaching_for_a_driver(sim_rack):
    nvml = SimNvml(sim_rack())
    with pytest.raises(AttributeError, match="does not implement pynvml.nvmlDeviceSetPowerManagementLimit"):
        nvml.nvmlDeviceSetPowerManagementLimit


def test_calls_before_init_raise_uninitialized(sim_rack):
    nvml = SimNvml(sim_rack(), "ct01")
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        nvml.nvmlDeviceGetCount()
    nvml.nvmlInit()
    assert nvml.nvmlDeviceGetCount() == 4
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        nvml.nvmlDeviceGetHandleByIndex(4)
