"""The configuration and host-link slice of pynvml, answered by a simulated GPU: ECC, MIG and
persistence mode, power limit, application clocks, PCIe link generation, width and replays.

A mixin of SimNvml (it needs its `_gpu` guard). What the simulator injects here — a tray
flashed with another VBIOS, ECC turned off, a PCIe link trained below its maximum — are the
scenario kinds `firmware_mismatch`, `ecc_disabled` and `pcie_degraded` (effects `firmware`,
`ecc_mode`, `pcie`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pynvml

from probes.sim.host_link import pcie_link
from probes.sim.spec import Effect

# The PCIe AER counters the simulator answers, by the class a `pcie_degraded` fault names.
PCIE_AER_FIELDS = {pynvml.NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS: "correctable",
                   pynvml.NVML_FI_DEV_PCIE_COUNT_NON_FATAL_ERROR: "non_fatal",
                   pynvml.NVML_FI_DEV_PCIE_COUNT_FATAL_ERROR: "fatal"}
APPLICATION_CLOCKS_MHZ = {pynvml.NVML_CLOCK_SM: "sm_clock_max_mhz", pynvml.NVML_CLOCK_MEM: "mem_clock_mhz"}


def gpu_effect(gpu: Any, kind: str) -> Effect | None:
    """The GPU's latest effect of `kind`, or None."""
    found = [effect for effect in gpu.effects if effect.kind == kind]
    return found[-1] if found else None


def ecc_enabled(gpu: Any) -> bool:
    effect = gpu_effect(gpu, "ecc_mode")
    return effect is None or bool(effect.get("enabled", True))


class SimNvmlConfiguration:
    _gpu: Callable[[Any, str], tuple[Any, float]]  # SimNvml's guard: the GPU of a handle, and the time

    def nvmlDeviceGetEccMode(self, handle: Any) -> list[int]:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetEccMode")
        state = pynvml.NVML_FEATURE_ENABLED if ecc_enabled(gpu) else pynvml.NVML_FEATURE_DISABLED
        return [state, state]

    def nvmlDeviceGetPersistenceMode(self, handle: Any) -> int:
        self._gpu(handle, "nvmlDeviceGetPersistenceMode")
        return pynvml.NVML_FEATURE_ENABLED

    def nvmlDeviceGetMigMode(self, device: Any) -> list[int]:
        self._gpu(device, "nvmlDeviceGetMigMode")
        return [pynvml.NVML_DEVICE_MIG_DISABLE, pynvml.NVML_DEVICE_MIG_DISABLE]

    def nvmlDeviceGetPowerManagementLimit(self, handle: Any) -> int:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetPowerManagementLimit")
        return int(gpu.sku.tdp_w * 1000)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: Any) -> int:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetPowerManagementDefaultLimit")
        return int(gpu.sku.tdp_w * 1000)

    def nvmlDeviceGetApplicationsClock(self, handle: Any, type: int) -> int:  # noqa: A002 - pynvml's parameter name
        gpu, _ = self._gpu(handle, "nvmlDeviceGetApplicationsClock")
        return self._application_clock(gpu, type)

    def nvmlDeviceGetDefaultApplicationsClock(self, handle: Any, type: int) -> int:  # noqa: A002
        gpu, _ = self._gpu(handle, "nvmlDeviceGetDefaultApplicationsClock")
        return self._application_clock(gpu, type)

    @staticmethod
    def _application_clock(gpu: Any, clock: int) -> int:
        if clock not in APPLICATION_CLOCKS_MHZ:
            raise pynvml.NVMLError_NotSupported()
        return getattr(gpu.sku, APPLICATION_CLOCKS_MHZ[clock])

    # --- the host link (PCIe) ----------------------------------------------------------------
    def _pcie(self, handle: Any, call: str) -> tuple[tuple[int, int], tuple[int, int]]:
        gpu, _ = self._gpu(handle, call)
        link = pcie_link(gpu)
        if link is None:  # a GPU the simulator gives no PCIe link (none today: GB200 reports Gen5 x16 too)
            raise pynvml.NVMLError_NotSupported()
        return link

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any) -> int:
        return self._pcie(handle, "nvmlDeviceGetCurrPcieLinkGeneration")[1][0]

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any) -> int:
        return self._pcie(handle, "nvmlDeviceGetCurrPcieLinkWidth")[1][1]

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: Any) -> int:
        return self._pcie(handle, "nvmlDeviceGetGpuMaxPcieLinkGeneration")[0][0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any) -> int:
        return self._pcie(handle, "nvmlDeviceGetMaxPcieLinkWidth")[0][1]

    def nvmlDeviceGetPerformanceState(self, handle: Any) -> int:
        """P0, idle or loaded, as NVIDIA's mock-NVML GB200 profile reports its GPUs
        (NVIDIA/k8s-test-infra, mock-nvml-config-gb200.yaml: performance_state P0)."""
        self._gpu(handle, "nvmlDeviceGetPerformanceState")
        return int(pynvml.NVML_PSTATE_0)

    def nvmlDeviceGetPcieReplayCounter(self, handle: Any) -> int:
        self._pcie(handle, "nvmlDeviceGetPcieReplayCounter")
        return 0

    @staticmethod
    def _pcie_aer_field(gpu: Any, fid: int, t: float) -> tuple[int, int]:
        """A PCIe AER counter (nvmlDeviceGetFieldValues): zero on a healthy link; a `pcie_degraded`
        fault's `<class>_per_minute` counts from the simulator's start."""
        if pcie_link(gpu) is None:
            raise pynvml.NVMLError_NotSupported()
        effect = gpu_effect(gpu, "pcie")
        rate = 0.0 if effect is None else float(effect.get(f"{PCIE_AER_FIELDS[fid]}_per_minute", 0.0))
        return pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, int(rate * max(0.0, t) / 60.0)
