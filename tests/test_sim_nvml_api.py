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


DL_FIELDS = ("NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY", "NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY", "NVML_FI_DEV_NVLINK_ERROR_DL_CRC")
DL_COUNTERS = ("NVML_NVLINK_ERROR_DL_REPLAY", "NVML_NVLINK_ERROR_DL_RECOVERY", "NVML_NVLINK_ERROR_DL_CRC_FLIT")


@pytest.mark.parametrize("rack, tray, supported", [("gb200", "ct01", False), ("h100", None, True)])
def test_only_blackwell_answers_not_supported_for_the_data_link_counters(sim_rack, hgx_topology, rack, tray, supported):
    # NVML API Reference, Change Log, v560 to v565: nvmlDeviceGetNvLinkErrorCounter and the DL_* field
    # ids removed on Blackwell (the simulated GB200 runs driver 570); Hopper keeps them.
    nvml = SimNvml(sim_rack() if rack == "gb200" else sim_rack(topology=hgx_topology), tray)
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    fields = [(getattr(pynvml, name), 3) for name in DL_FIELDS] + [(pynvml.NVML_FI_DEV_NVLINK_COUNT_RCV_ERRORS, 3)]
    answers = [value.nvmlReturn for value in nvml.nvmlDeviceGetFieldValues(handle, fields)]
    dl_answer = pynvml.NVML_SUCCESS if supported else pynvml.NVML_ERROR_NOT_SUPPORTED
    assert answers == [dl_answer] * 3 + [pynvml.NVML_ERROR_NOT_SUPPORTED if supported else pynvml.NVML_SUCCESS]
    for name in DL_COUNTERS:
        if supported:
            assert nvml.nvmlDeviceGetNvLinkErrorCounter(handle, 3, getattr(pynvml, name)) == 0
        else:
            with pytest.raises(pynvml.NVMLError_NotSupported):
                nvml.nvmlDeviceGetNvLinkErrorCounter(handle, 3, getattr(pynvml, name))
