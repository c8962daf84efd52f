"""The configuration and host-link slice of pynvml, answered by a simulated GPU: ECC, MIG and
persistence mode, power limit, application clocks, PCIe link generation, width and replays.

A mixin of SimNvml (it needs its `_gpu` guard). What the simulator injects here — a tray
flashed with another VBIOS, ECC turned off, a PCIe link trained below its maximum — are the
scenario kinds `firmware_mismatch`, `ecc_disabled` and `pcie_degraded` (effects `firmware`,
`ecc_mode`, `pcie`).
"""

import pynvml

# The simulated GPUs' PCIe link at its best (generation, width): an HGX GPU's host link. A
# GB200 GPU reaches its Grace CPU over NVLink-C2C, and the simulator answers NOT_SUPPORTED.
PCIE_MAX = {"h100": (5, 16), "h200": (5, 16), "b200": (5, 16)}
APPLICATION_CLOCKS_MHZ = {pynvml.NVML_CLOCK_SM: "sm_clock_max_mhz", pynvml.NVML_CLOCK_MEM: "mem_clock_mhz"}


def gpu_effect(gpu, kind):
    """The GPU's latest effect of `kind`, or None."""
    found = [effect for effect in gpu.effects if effect.kind == kind]
    return found[-1] if found else None


def ecc_enabled(gpu):
    effect = gpu_effect(gpu, "ecc_mode")
    return effect is None or bool(effect.get("enabled", True))


class SimNvmlConfiguration:
    def nvmlDeviceGetEccMode(self, handle):
        gpu, _ = self._gpu(handle, "nvmlDeviceGetEccMode")
        state = pynvml.NVML_FEATURE_ENABLED if ecc_enabled(gpu) else pynvml.NVML_FEATURE_DISABLED
        return [state, state]

    def nvmlDeviceGetPersistenceMode(self, handle):
        self._gpu(handle, "nvmlDeviceGetPersistenceMode")
        return pynvml.NVML_FEATURE_ENABLED

    def nvmlDeviceGetMigMode(self, device):
        self._gpu(device, "nvmlDeviceGetMigMode")
        return [pynvml.NVML_DEVICE_MIG_DISABLE, pynvml.NVML_DEVICE_MIG_DISABLE]

    def nvmlDeviceGetPowerManagementLimit(self, handle):
        gpu, _ = self._gpu(handle, "nvmlDeviceGetPowerManagementLimit")
        return int(gpu.sku.tdp_w * 1000)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle):
        gpu, _ = self._gpu(handle, "nvmlDeviceGetPowerManagementDefaultLimit")
        return int(gpu.sku.tdp_w * 1000)

    def nvmlDeviceGetApplicationsClock(self, handle, type):  # noqa: A002 - pynvml's parameter name
        gpu, _ = self._gpu(handle, "nvmlDeviceGetApplicationsClock")
        return self._application_clock(gpu, type)

    def nvmlDeviceGetDefaultApplicationsClock(self, handle, type):  # noqa: A002
        gpu, _ = self._gpu(handle, "nvmlDeviceGetDefaultApplicationsClock")
        return self._application_clock(gpu, type)

    @staticmethod
    def _application_clock(gpu, clock):
        if clock not in APPLICATION_CLOCKS_MHZ:
            raise pynvml.NVMLError_NotSupported()
        return getattr(gpu.sku, APPLICATION_CLOCKS_MHZ[clock])

    # --- the host link (PCIe) ----------------------------------------------------------------
    def _pcie(self, handle, call):
        gpu, t = self._gpu(handle, call)
        best = PCIE_MAX.get(gpu.rack.spec.sku)
        if best is None:
            raise pynvml.NVMLError_NotSupported()
        effect = gpu_effect(gpu, "pcie")
        current = best if effect is None else (int(effect.get("gen", best[0])), int(effect.get("width", best[1])))
        return best, current

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle):
        return self._pcie(handle, "nvmlDeviceGetCurrPcieLinkGeneration")[1][0]

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle):
        return self._pcie(handle, "nvmlDeviceGetCurrPcieLinkWidth")[1][1]

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle):
        return self._pcie(handle, "nvmlDeviceGetGpuMaxPcieLinkGeneration")[0][0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle):
        return self._pcie(handle, "nvmlDeviceGetMaxPcieLinkWidth")[0][1]

    def nvmlDeviceGetPcieReplayCounter(self, handle):
        self._pcie(handle, "nvmlDeviceGetPcieReplayCounter")
        return 0
