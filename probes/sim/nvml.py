"""The slice of nvidia-ml-py (module `pynvml`) that opsctl calls, answered by a simulated rack.

Same function names and signatures, and the very structs, constants and NVMLError subclasses
of the installed pynvml: code written against `pynvml` runs unchanged on `SimNvml(rack, tray)`.
Names this class does not define are looked up in pynvml, except functions, so a call the
simulator does not implement fails loudly instead of reaching for a driver.

Where a real GPU of the SKU does not support a call, the simulator raises
NVMLError_NotSupported too (the data-link NVLink error counters on Blackwell, as a call and as
field values; the NVLink 5 fields and platform info on Hopper; retired pages on both: they use
row remapping).
"""

from __future__ import annotations

import ctypes
import threading
import types
from typing import TYPE_CHECKING, Any

import pynvml

from probes.nvlink_ber import encode_ber
from probes.sim.hardware import FEC_BINS, SimGpu, SimLink, SimRack
from probes.sim.nvml_config import PCIE_AER_FIELDS, SimNvmlConfiguration, ecc_enabled, gpu_effect
from probes.sim.spec import RackSpec

RECOVERY_ACTION_CODES = {"none": pynvml.NVML_GPU_RECOVERY_ACTION_NONE, "gpu_reset": pynvml.NVML_GPU_RECOVERY_ACTION_GPU_RESET,
                         "node_reboot": pynvml.NVML_GPU_RECOVERY_ACTION_NODE_REBOOT,
                         "drain_p2p": pynvml.NVML_GPU_RECOVERY_ACTION_DRAIN_P2P,
                         "drain_and_reset": pynvml.NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET}
_THROTTLE_BITS = {
    "thermal": pynvml.nvmlClocksEventReasonSwThermalSlowdown | pynvml.nvmlClocksEventReasonHwThermalSlowdown,
    "power_brake": pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown | pynvml.nvmlClocksEventReasonHwSlowdown,
    "power_cap": pynvml.nvmlClocksEventReasonSwPowerCap,
    "hw_slowdown": pynvml.nvmlClocksEventReasonHwSlowdown,
}
_FABRIC_STATES = {
    "not_started": pynvml.NVML_GPU_FABRIC_STATE_NOT_STARTED,
    "in_progress": pynvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS,
    "completed": pynvml.NVML_GPU_FABRIC_STATE_COMPLETED,
}
_FABRIC_FLAG_SHIFTS = {
    "degraded_bw": pynvml.NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW,
    "route_recovery": pynvml.NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_RECOVERY,
    "route_unhealthy": pynvml.NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY,
    "access_timeout_recovery": pynvml.NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ACCESS_TIMEOUT_RECOVERY,
}
# The data-link (DL) error counters, as nvmlDeviceGetNvLinkErrorCounter's counters and as field
# values: a GPU whose SKU has none (Blackwell: SimSku.nvlink_dl_counters) answers NOT_SUPPORTED.
_LEGACY_COUNTERS = {
    pynvml.NVML_NVLINK_ERROR_DL_REPLAY: "replay",
    pynvml.NVML_NVLINK_ERROR_DL_RECOVERY: "recovery",
    pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT: "crc",
}
_DL_FIELDS = {
    pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY: "replay",
    pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY: "recovery",
    pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_CRC: "crc",
}
_NVLINK5_FIELDS = {
    pynvml.NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_SYMBOL_ERRORS,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_SYMBOL_BER,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_MALFORMED_PACKET_ERRORS,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_RCV_ERRORS,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_BUFFER_OVERRUN_ERRORS,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_LOCAL_LINK_INTEGRITY_ERRORS,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_RCV_REMOTE_ERRORS,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_RCV_GENERAL_ERRORS,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_XMIT_BYTES,
    pynvml.NVML_FI_DEV_NVLINK_COUNT_RCV_BYTES,
    *(pynvml.NVML_FI_DEV_NVLINK_COUNT_FEC_HISTORY_0 + k for k in range(FEC_BINS)),
}


_C2C_FIELDS = {pynvml.NVML_FI_DEV_C2C_LINK_COUNT, pynvml.NVML_FI_DEV_C2C_LINK_GET_STATUS,
               pynvml.NVML_FI_DEV_C2C_LINK_GET_MAX_BW, pynvml.NVML_FI_DEV_C2C_LINK_ERROR_INTR,
               pynvml.NVML_FI_DEV_C2C_LINK_ERROR_REPLAY, pynvml.NVML_FI_DEV_C2C_LINK_ERROR_REPLAY_B2B}


def _pointee(struct_or_ref: Any) -> Any:
    """The struct behind byref(struct) — how callers must pass it to the real library."""
    return getattr(struct_or_ref, "_obj", struct_or_ref)


class _EventSet:
    def __init__(self, created_at: float) -> None:
        self.created_at = created_at
        self.registered: dict[str, tuple[SimGpu, Any, float, int]] = {}  # gpu id -> (gpu, handle, registered at, event mask)
        self.delivered: dict[str, int] = {}  # gpu id -> number of XID events already returned


class SimNvml(SimNvmlConfiguration):
    """pynvml over one tray of a simulated rack (or the whole rack, with tray=None)."""

    def __init__(self, rack: SimRack | RackSpec | dict[str, Any], tray: str | None = None) -> None:
        self._rack = rack if isinstance(rack, SimRack) else SimRack(rack)
        self._gpus = self._rack.gpus(tray)
        self._initialized = 0
        self._lock = threading.Lock()
        # Real pynvml handles are ctypes pointers; so are ours, which lets code compare them
        # or read them back from event data exactly as it would with the driver.
        self._structs = [pynvml.struct_c_nvmlDevice_t() for _ in self._gpus]
        self._handles = [ctypes.pointer(s) for s in self._structs]
        self._by_address = {ctypes.addressof(s): gpu for s, gpu in zip(self._structs, self._gpus)}
        self._event_structs: list[Any] = []
        self._event_sets: dict[int, _EventSet] = {}

    def __getattr__(self, name: str) -> Any:
        value = getattr(pynvml, name)  # AttributeError for names pynvml lacks too
        if isinstance(value, types.FunctionType):
            raise AttributeError(f"the simulator does not implement pynvml.{name}")
        self.__dict__[name] = value  # a constant or an error class: looked up once, not at every field a reading decodes
        return value

    @property
    def rack(self) -> SimRack:
        return self._rack

    # --- guards ------------------------------------------------------------------------------
    def _check_init(self) -> None:
        if not self._initialized:
            raise pynvml.NVMLError_Uninitialized()

    def _gpu(self, handle: Any, call: str) -> tuple[SimGpu, float]:
        self._check_init()
        try:
            gpu = self._by_address[ctypes.addressof(handle.contents)]
        except (KeyError, AttributeError, ValueError, TypeError):
            raise pynvml.NVMLError_InvalidArgument() from None
        t = self._rack.now()
        while gpu.nvml_hangs(t):  # a stuck driver: the call blocks until the hang ends, if ever
            self._rack.clock.sleep(1.0)
            t = self._rack.now()
        if gpu.is_lost(t):
            raise pynvml.NVMLError_GpuIsLost()
        if call in gpu.unsupported_calls():
            raise pynvml.NVMLError_NotSupported()
        return gpu, t

    def _link(self, gpu: SimGpu, link: int) -> SimLink:
        if not isinstance(link, int) or not 0 <= link < len(gpu.links):
            raise pynvml.NVMLError_InvalidArgument()
        return gpu.links[link]

    # --- library and system ------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self.nvmlInitWithFlags(0)

    def nvmlInitWithFlags(self, flags: int) -> None:
        with self._lock:
            self._initialized += 1

    def nvmlShutdown(self) -> None:
        with self._lock:
            self._check_init()
            self._initialized -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._check_init()
        return self._rack.spec.driver_version

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._check_init()
        return "13." + self._rack.spec.driver_version

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._check_init()
        return 13000

    nvmlSystemGetCudaDriverVersion_v2 = nvmlSystemGetCudaDriverVersion

    def nvmlDeviceGetCount(self) -> int:
        self._check_init()
        return len(self._gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
        self._check_init()
        if not isinstance(index, int) or not 0 <= index < len(self._gpus):
            raise pynvml.NVMLError_InvalidArgument()
        if self._gpus[index].is_lost(self._rack.now()):
            raise pynvml.NVMLError_GpuIsLost()  # as the driver answers for a GPU that fell off the bus
        return self._handles[index]

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> Any:
        self._check_init()
        for handle, gpu in zip(self._handles, self._gpus):
            if gpu.spec.uuid == uuid:
                return handle
        raise pynvml.NVMLError_NotFound()

    # --- identity ----------------------------------------------------------------------------
    def nvmlDeviceGetName(self, handle: Any) -> str:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetName")
        return gpu.sku.name

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetUUID")
        return gpu.spec.uuid

    def nvmlDeviceGetSerial(self, handle: Any) -> str:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetSerial")
        return gpu.spec.serial

    def nvmlDeviceGetIndex(self, handle: Any) -> int:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetIndex")
        return self._gpus.index(gpu)

    def nvmlDeviceGetModuleId(self, handle: Any, moduleId: Any = ctypes.c_uint()) -> int:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetModuleId")
        return gpu.spec.module_id

    def nvmlDeviceGetPciInfo(self, handle: Any) -> Any:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetPciInfo")
        info = pynvml.nvmlPciInfo_t()
        info.busId = gpu.spec.pci_bus_id.encode()
        info.busIdLegacy = gpu.spec.pci_bus_id.encode()[:15]
        domain, bus, rest = gpu.spec.pci_bus_id.split(":")
        info.domain, info.bus, info.device = int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16)
        info.pciDeviceId = (gpu.sku.pci_device_id << 16) | 0x10DE  # vendor NVIDIA in the low half
        return info

    nvmlDeviceGetPciInfo_v3 = nvmlDeviceGetPciInfo

    def nvmlDeviceGetVbiosVersion(self, handle: Any) -> str:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetVbiosVersion")
        flashed = gpu_effect(gpu, "firmware")  # a tray flashed with another image (firmware_mismatch)
        if flashed is not None:
            return flashed.get("vbios")
        return gpu.sku.vbios_version

    def nvmlDeviceGetInforomImageVersion(self, handle: Any) -> str:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetInforomImageVersion")
        return gpu.sku.inforom_version

    def nvmlDeviceGetBoardPartNumber(self, handle: Any) -> str:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetBoardPartNumber")
        return gpu.sku.board_part_number

    def nvmlDeviceGetCudaComputeCapability(self, handle: Any) -> tuple[int, int]:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetCudaComputeCapability")
        return gpu.sku.compute_capability

    def nvmlDeviceGetMemoryInfo(self, handle: Any, version: Any = None) -> Any:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetMemoryInfo")
        memory = pynvml.c_nvmlMemory_t()
        memory.total = gpu.sku.memory_bytes
        memory.used = 600 * 2**20
        memory.free = memory.total - memory.used
        return memory

    def nvmlDeviceGetPlatformInfo(self, device: Any, platformInfo: Any) -> int:
        gpu, _ = self._gpu(device, "nvmlDeviceGetPlatformInfo")
        platformInfo = _pointee(platformInfo)
        if not gpu.sku.platform_info:
            raise pynvml.NVMLError_NotSupported()
        tray = gpu.tray.spec
        serial = self._rack.spec.chassis_serial.encode()[:16]
        if hasattr(platformInfo, "chassisSerialNumber"):  # v2
            platformInfo.chassisSerialNumber = serial
            platformInfo.slotNumber = bytes([tray.slot])
            platformInfo.trayIndex = bytes([tray.tray_index])
            platformInfo.hostId = bytes([1])
        else:  # v1 names the same fields differently
            platformInfo.rackGuid = serial
            platformInfo.chassisPhysicalSlotNumber = bytes([tray.slot])
            platformInfo.computeSlotIndex = bytes([tray.tray_index])
            platformInfo.nodeIndex = bytes([1])
        platformInfo.peerType = bytes([0])
        platformInfo.moduleId = bytes([gpu.spec.module_id])
        return pynvml.NVML_SUCCESS

    # --- NVLink --------------------------------------------------------------------------------
    def nvmlDeviceGetNvLinkState(self, device: Any, link: int) -> int:
        gpu, t = self._gpu(device, "nvmlDeviceGetNvLinkState")
        return pynvml.NVML_FEATURE_ENABLED if self._link(gpu, link).is_up(t) else pynvml.NVML_FEATURE_DISABLED

    def nvmlDeviceGetNvLinkVersion(self, device: Any, link: int) -> int:
        gpu, _ = self._gpu(device, "nvmlDeviceGetNvLinkVersion")
        self._link(gpu, link)
        return gpu.sku.nvlink_version

    def nvmlDeviceGetNvLinkErrorCounter(self, device: Any, link: int, counter: int) -> int:
        gpu, t = self._gpu(device, "nvmlDeviceGetNvLinkErrorCounter")
        sim_link = self._link(gpu, link)
        if not gpu.sku.nvlink_dl_counters:
            raise pynvml.NVMLError_NotSupported()
        if counter in _LEGACY_COUNTERS:
            return sim_link.counter(_LEGACY_COUNTERS[counter], t)
        if counter in (pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA, pynvml.NVML_NVLINK_ERROR_DL_ECC_DATA):
            return 0
        raise pynvml.NVMLError_InvalidArgument()

    def nvmlDeviceGetNvLinkRemotePciInfo(self, device: Any, link: int) -> Any:
        gpu, _ = self._gpu(device, "nvmlDeviceGetNvLinkRemotePciInfo")
        spec = self._link(gpu, link).spec
        chip = int("".join(ch for ch in spec.remote_switch.rsplit("/", 1)[-1] if ch.isdigit()) or 0)
        tray = spec.remote_switch.split("/")[-2] if spec.remote_switch.count("/") >= 2 else ""
        tray_number = int("".join(ch for ch in tray if ch.isdigit()) or 0)
        info = pynvml.nvmlPciInfo_t()
        bus_id = f"00000000:{(tray_number * 16 + chip) & 0xFF:02X}:00.0"
        info.busId = bus_id.encode()
        info.busIdLegacy = bus_id.encode()[:15]
        info.bus = (tray_number * 16 + chip) & 0xFF
        return info

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: Any, link: int) -> int:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetNvLinkRemoteDeviceType")
        self._link(gpu, link)
        return pynvml.NVML_NVLINK_DEVICE_TYPE_SWITCH

    def nvmlDeviceGetFieldValues(self, handle: Any, fieldIds: list[Any]) -> Any:
        gpu, t = self._gpu(handle, "nvmlDeviceGetFieldValues")
        values = (pynvml.c_nvmlFieldValue_t * len(fieldIds))()
        timestamp = int(self._rack.clock.now() * 1e6)
        unsupported = gpu.unsupported_fields()
        fec: dict[int, list[int]] = {}  # port -> its FEC histogram at t: one computation for the call's 16 bins
        put = ctypes.Structure.__setattr__
        for i, field_id in enumerate(fieldIds):
            try:
                fid, scope = field_id
            except TypeError:
                fid, scope = field_id, 0
            value = values[i]
            # ctypes' own setattr: pynvml's wrapper only encodes str, and a reading sets ~600 fields.
            put(value, "fieldId", fid)
            put(value, "scopeId", scope)
            put(value, "timestamp", timestamp)
            if fid in unsupported:
                put(value, "nvmlReturn", pynvml.NVML_ERROR_NOT_SUPPORTED)
                continue
            try:
                kind, number = self._field(gpu, fid, scope, t, fec)
            except pynvml.NVMLError as error:
                put(value, "nvmlReturn", error.value)
                continue
            put(value, "nvmlReturn", pynvml.NVML_SUCCESS)
            put(value, "valueType", kind)
            if kind == pynvml.NVML_VALUE_TYPE_DOUBLE:
                value.value.dVal = number
            elif kind == pynvml.NVML_VALUE_TYPE_UNSIGNED_INT:
                value.value.uiVal = number
            else:
                value.value.ullVal = number
        return values

    def _field(self, gpu: SimGpu, fid: int, scope: int, t: float, fec: dict[int, list[int]]) -> tuple[int, Any]:
        ull = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
        if fid == pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT:
            return pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, len(gpu.links)
        if fid in (pynvml.NVML_FI_DEV_ECC_SBE_VOL_TOTAL, pynvml.NVML_FI_DEV_ECC_DBE_VOL_TOTAL,
                   pynvml.NVML_FI_DEV_ECC_SBE_AGG_TOTAL, pynvml.NVML_FI_DEV_ECC_DBE_AGG_TOTAL):
            if not ecc_enabled(gpu):
                raise pynvml.NVMLError_NotSupported()
            corrected, uncorrected = gpu.ecc_counts(t)
            lifetime = fid in (pynvml.NVML_FI_DEV_ECC_SBE_AGG_TOTAL, pynvml.NVML_FI_DEV_ECC_DBE_AGG_TOTAL)
            single = fid in (pynvml.NVML_FI_DEV_ECC_SBE_VOL_TOTAL, pynvml.NVML_FI_DEV_ECC_SBE_AGG_TOTAL)
            if single:
                return ull, corrected + (gpu.lifetime_corrected_ecc if lifetime else 0)
            return ull, uncorrected
        if fid == pynvml.NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON:  # the links' rate one way, in MB/s
            return pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, gpu.sku.nvlink_speed_mbps
        if fid in _C2C_FIELDS:
            return self._c2c_field(gpu, fid, scope)
        if fid == pynvml.NVML_FI_DEV_MEMORY_TEMP:
            return pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, gpu.memory_temperature_c(t)
        if fid == pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION:
            return pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, RECOVERY_ACTION_CODES[gpu.recovery_action(t)]
        if fid in PCIE_AER_FIELDS:
            return self._pcie_aer_field(gpu, fid, t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL:  # "total for all Links": no link scope
            if not gpu.sku.nvlink_ecc_data_total:
                raise pynvml.NVMLError_NotSupported()
            return ull, sum(link.counter("ecc_data", t) for link in gpu.links)
        link = self._link(gpu, scope)
        if fid == pynvml.NVML_FI_DEV_NVLINK_GET_STATE:
            state = pynvml.NVML_NVLINK_STATE_ACTIVE if link.is_up(t) else pynvml.NVML_NVLINK_STATE_INACTIVE
            return pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, state
        if fid in _DL_FIELDS:
            if not gpu.sku.nvlink_dl_counters:
                raise pynvml.NVMLError_NotSupported()
            return ull, link.counter(_DL_FIELDS[fid], t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
            return ull, link.traffic["tx"] // 1024  # KiB
        if fid == pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
            return ull, link.traffic["rx"] // 1024
        if fid not in _NVLINK5_FIELDS or not gpu.sku.nvlink5_fields:
            raise pynvml.NVMLError_NotSupported()
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS:
            return ull, link.recovery_failed(t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS:
            return ull, link.recovery_successful(t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS:
            return ull, link.recovery_failed(t) + link.recovery_successful(t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS:
            return ull, link.effective_errors(t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER:
            return ull, encode_ber(link.ber(t))
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_SYMBOL_ERRORS:
            return ull, link.counter("symbol", t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_SYMBOL_BER:
            return ull, encode_ber(link.symbol_ber(t))
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_RCV_ERRORS:
            return ull, link.counter("rcv", t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_MALFORMED_PACKET_ERRORS:
            return ull, link.counter("malformed", t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_BUFFER_OVERRUN_ERRORS:
            return ull, link.counter("buffer_overrun", t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_LOCAL_LINK_INTEGRITY_ERRORS:
            return ull, link.counter("integrity", t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_RCV_REMOTE_ERRORS:
            return ull, link.counter("rcv_remote", t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_RCV_GENERAL_ERRORS:
            return ull, link.counter("rcv_general", t)
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_XMIT_BYTES:
            return ull, link.traffic["tx"]
        if fid == pynvml.NVML_FI_DEV_NVLINK_COUNT_RCV_BYTES:
            return ull, link.traffic["rx"]
        if scope not in fec:
            fec[scope] = link.fec_history(t)
        return ull, fec[scope][fid - pynvml.NVML_FI_DEV_NVLINK_COUNT_FEC_HISTORY_0]

    @staticmethod
    def _c2c_field(gpu: SimGpu, fid: int, scope: int) -> tuple[int, int]:
        """NVLink-C2C (GB200): every link active unless a `c2c_link_down` fault took it down."""
        uint = pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
        if gpu.sku.c2c_links == 0:
            raise pynvml.NVMLError_NotSupported()
        if fid == pynvml.NVML_FI_DEV_C2C_LINK_COUNT:
            return uint, gpu.sku.c2c_links
        if fid in (pynvml.NVML_FI_DEV_C2C_LINK_GET_STATUS, pynvml.NVML_FI_DEV_C2C_LINK_GET_MAX_BW):
            if not 0 <= scope < gpu.sku.c2c_links:
                raise pynvml.NVMLError_InvalidArgument()
            down = gpu_effect(gpu, "c2c_down") is not None
            if fid == pynvml.NVML_FI_DEV_C2C_LINK_GET_STATUS:
                return uint, 0 if down else 1
            return uint, 0 if down else gpu.sku.c2c_mbps
        return pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, 0  # the error counters: no rate is modelled

    # --- memory errors -------------------------------------------------------------------------
    def nvmlDeviceGetTotalEccErrors(self, handle: Any, errorType: int, counterType: int) -> int:
        gpu, t = self._gpu(handle, "nvmlDeviceGetTotalEccErrors")
        if not ecc_enabled(gpu):
            raise pynvml.NVMLError_NotSupported()  # no ECC counts with ECC turned off
        corrected, uncorrected = gpu.ecc_counts(t)
        if errorType == pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED:
            lifetime = gpu.lifetime_corrected_ecc if counterType == pynvml.NVML_AGGREGATE_ECC else 0
            return corrected + lifetime
        if errorType == pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED:
            return uncorrected
        raise pynvml.NVMLError_InvalidArgument()

    def nvmlDeviceGetRemappedRows(self, device: Any) -> tuple[int, int, int, int]:
        gpu, t = self._gpu(device, "nvmlDeviceGetRemappedRows")
        return gpu.remapped_rows(t)

    def nvmlDeviceGetUnrepairableMemoryFlag_v1(self, device: Any) -> int:
        """nvmlUnrepairableMemory_v1_t.unrepairableMemory: set once the GPU holds memory it can no
        longer remap around (a `memory_unrepairable` fault)."""
        gpu, _ = self._gpu(device, "nvmlDeviceGetUnrepairableMemoryFlag_v1")
        return 1 if gpu_effect(gpu, "memory_unrepairable") is not None else 0

    def nvmlDeviceValidateInforom(self, handle: Any) -> None:
        """None for a valid InfoROM; NVML_ERROR_CORRUPTED_INFOROM for one an `inforom_invalid` fault corrupted."""
        gpu, _ = self._gpu(handle, "nvmlDeviceValidateInforom")
        if gpu_effect(gpu, "inforom_invalid") is not None:
            raise pynvml.NVMLError_CorruptedInforom()

    def nvmlDeviceGetRetiredPages(self, device: Any, sourceFilter: int) -> list[int]:
        self._gpu(device, "nvmlDeviceGetRetiredPages")
        raise pynvml.NVMLError_NotSupported()  # Hopper and Blackwell remap rows instead

    def nvmlDeviceGetRetiredPagesPendingStatus(self, device: Any) -> int:
        self._gpu(device, "nvmlDeviceGetRetiredPagesPendingStatus")
        raise pynvml.NVMLError_NotSupported()

    # --- clocks, power, temperature, throttling ------------------------------------------------
    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:
        gpu, t = self._gpu(handle, "nvmlDeviceGetCurrentClocksEventReasons")
        reasons = 0 if gpu.is_busy(t) else pynvml.nvmlClocksEventReasonGpuIdle
        for effect in gpu.active_throttles(t):
            reasons |= _THROTTLE_BITS[effect.get("reason", "thermal")]
        return reasons

    def nvmlDeviceGetViolationStatus(self, device: Any, perfPolicyType: int) -> Any:
        gpu, t = self._gpu(device, "nvmlDeviceGetViolationStatus")
        wanted = {
            pynvml.NVML_PERF_POLICY_THERMAL: ("thermal",),
            pynvml.NVML_PERF_POLICY_POWER: ("power_brake", "power_cap"),
            pynvml.NVML_PERF_POLICY_RELIABILITY: ("hw_slowdown",),
        }.get(perfPolicyType, ())
        seconds = sum(gpu.throttled_seconds(effect, t) for effect in gpu.effects
                      if effect.kind == "throttle" and effect.get("reason", "thermal") in wanted)
        status = pynvml.c_nvmlViolationTime_t()
        status.referenceTime = int(self._rack.clock.now() * 1e9)
        status.violationTime = int(seconds * 1e9)
        return status

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        gpu, t = self._gpu(handle, "nvmlDeviceGetPowerUsage")
        if gpu_effect(gpu, "power_unreadable") is not None:
            raise pynvml.NVMLError_Unknown()  # the sensor answers, but not a reading: DCGM_FR_POWER_UNREADABLE
        return int(gpu.power_w(t) * 1000)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any) -> int:
        gpu, t = self._gpu(handle, "nvmlDeviceGetTotalEnergyConsumption")
        return gpu.energy_mj(t)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetEnforcedPowerLimit")
        return int(gpu.sku.tdp_w * 1000)

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        gpu, t = self._gpu(handle, "nvmlDeviceGetTemperature")
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            raise pynvml.NVMLError_NotSupported()
        return gpu.temperature_c(t)

    def nvmlDeviceGetTemperatureV(self, handle: Any, sensor: int, version: int = pynvml.nvmlTemperature_v1) -> int:
        gpu, t = self._gpu(handle, "nvmlDeviceGetTemperatureV")
        if version != pynvml.nvmlTemperature_v1:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            raise pynvml.NVMLError_NotSupported()
        return gpu.temperature_c(t)

    def nvmlDeviceGetMarginTemperature(self, handle: Any) -> int:
        gpu, t = self._gpu(handle, "nvmlDeviceGetMarginTemperature")
        return gpu.thermal_margin_c(t)

    def nvmlDeviceGetTemperatureThreshold(self, handle: Any, threshold: int) -> int:
        gpu, _ = self._gpu(handle, "nvmlDeviceGetTemperatureThreshold")
        limits = {pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: gpu.sku.slowdown_c,
                  pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX: gpu.sku.memory_slowdown_c}
        if threshold not in limits:
            raise pynvml.NVMLError_NotSupported()
        return int(limits[threshold])

    def nvmlDeviceGetClockInfo(self, handle: Any, type: int) -> int:  # noqa: A002 - pynvml's parameter name
        gpu, t = self._gpu(handle, "nvmlDeviceGetClockInfo")
        if type == pynvml.NVML_CLOCK_SM:
            return gpu.sm_clock_mhz(t)
        if type == pynvml.NVML_CLOCK_MEM:
            return gpu.sku.mem_clock_mhz
        raise pynvml.NVMLError_NotSupported()

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, type: int) -> int:  # noqa: A002
        gpu, _ = self._gpu(handle, "nvmlDeviceGetMaxClockInfo")
        if type == pynvml.NVML_CLOCK_SM:
            return gpu.sku.sm_clock_max_mhz
        if type == pynvml.NVML_CLOCK_MEM:
            return gpu.sku.mem_clock_mhz
        raise pynvml.NVMLError_NotSupported()

    # --- fabric -----------------------------------------------------------------------------------
    def nvmlDeviceGetGpuFabricInfoV(self, device: Any, gpuFabricInfo: Any) -> int:
        gpu, t = self._gpu(device, "nvmlDeviceGetGpuFabricInfoV")
        gpuFabricInfo = _pointee(gpuFabricInfo)
        state, flags = gpu.fabric(t)
        gpuFabricInfo.state = _FABRIC_STATES[state]
        gpuFabricInfo.status = pynvml.NVML_SUCCESS
        gpuFabricInfo.cliqueId = gpu.clique_id(t)
        uuid = bytes.fromhex(self._rack.spec.cluster_uuid)
        for i, byte in enumerate(uuid[: pynvml.NVML_GPU_FABRIC_UUID_LEN]):
            gpuFabricInfo.clusterUuid[i] = byte
        if not gpu.sku.fabric_health:
            gpuFabricInfo.healthMask = 0  # every flag NOT_SUPPORTED on Hopper
            if hasattr(gpuFabricInfo, "healthSummary"):
                gpuFabricInfo.healthSummary = pynvml.NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED
            return pynvml.NVML_SUCCESS
        wrong, disconnected = gpu.fabric_configuration(t)
        code = getattr(pynvml, f"NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_{(wrong or 'none').upper()}")
        mask = code << pynvml.NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_INCORRECT_CONFIGURATION
        for flag, shift in _FABRIC_FLAG_SHIFTS.items():
            mask |= (1 if flags[flag] else 2) << shift  # each flag: 1 TRUE, 2 FALSE
        gfm_shift = getattr(pynvml, "NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_GFM_STATE", None)
        if gfm_shift is not None:  # older nvidia-ml-py (the floor pyproject.toml accepts) has no GFM state bits
            gfm = (pynvml.NVML_GPU_FABRIC_HEALTH_MASK_GFM_STATE_DISCONNECTED if disconnected
                   else pynvml.NVML_GPU_FABRIC_HEALTH_MASK_GFM_STATE_CONNECTED)
            mask |= gfm << gfm_shift
        gpuFabricInfo.healthMask = mask
        if hasattr(gpuFabricInfo, "healthSummary"):
            if flags["route_unhealthy"] or state != "completed" or wrong or disconnected:
                summary = pynvml.NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY
            elif any(flags.values()):
                summary = pynvml.NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY
            else:
                summary = pynvml.NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY
            gpuFabricInfo.healthSummary = summary
        return pynvml.NVML_SUCCESS

    # --- XID events -------------------------------------------------------------------------------
    def nvmlEventSetCreate(self) -> Any:
        self._check_init()
        with self._lock:
            struct = pynvml.struct_c_nvmlEventSet_t()
            self._event_structs.append(struct)
            self._event_sets[ctypes.addressof(struct)] = _EventSet(self._rack.now())
            return ctypes.pointer(struct)

    def _event_set(self, eventSet: Any) -> _EventSet:
        self._check_init()
        try:
            return self._event_sets[ctypes.addressof(eventSet.contents)]
        except (KeyError, AttributeError, ValueError, TypeError):
            raise pynvml.NVMLError_InvalidArgument() from None

    def nvmlDeviceGetSupportedEventTypes(self, handle: Any) -> int:
        self._gpu(handle, "nvmlDeviceGetSupportedEventTypes")
        return pynvml.nvmlEventTypeXidCriticalError | pynvml.nvmlEventTypeDoubleBitEccError

    def nvmlDeviceRegisterEvents(self, handle: Any, eventTypes: int, eventSet: Any) -> None:
        gpu, t = self._gpu(handle, "nvmlDeviceRegisterEvents")
        events = self._event_set(eventSet)
        with self._lock:
            already = gpu.xid_count(t - 1e-9)
            events.registered[gpu.id] = (gpu, handle, t, eventTypes)
            events.delivered[gpu.id] = already  # only XIDs logged after registration arrive

    def nvmlEventSetWait(self, eventSet: Any, timeoutms: int) -> Any:
        return self.nvmlEventSetWait_v2(eventSet, timeoutms)

    def nvmlEventSetWait_v2(self, eventSet: Any, timeoutms: int) -> Any:
        events = self._event_set(eventSet)
        deadline = self._rack.now() + timeoutms / 1000.0
        reached = self._rack.now()
        while True:
            with self._lock:
                found = self._next_event(events, reached)
                if found is not None:
                    return found
                upcoming = self._next_event_time(events, deadline)
            now = self._rack.now()
            if upcoming is None:
                self._rack.clock.sleep(max(0.0, deadline - now))
                raise pynvml.NVMLError_Timeout()
            self._rack.clock.sleep(max(0.0, upcoming - now))
            # The event's own time, not the clock's: clock minus epoch can round an ulp short of
            # it, and a simulated clock far from zero cannot move by an ulp of the difference.
            reached = max(self._rack.now(), upcoming)

    def _next_event(self, events: _EventSet, now: float) -> Any:
        best = None
        for gpu_id, (gpu, handle, _, mask) in events.registered.items():
            if not mask & pynvml.nvmlEventTypeXidCriticalError:
                continue
            event = gpu.xid_at(events.delivered[gpu_id], now)
            if event is not None and (best is None or event[0] < best[0]):
                best = (event[0], gpu_id, handle, event[1])
        if best is None:
            return None
        _, gpu_id, handle, xid = best
        events.delivered[gpu_id] += 1
        data = pynvml.c_nvmlEventData_t()
        data.device = handle
        data.eventType = pynvml.nvmlEventTypeXidCriticalError
        data.eventData = xid
        return data

    def _next_event_time(self, events: _EventSet, deadline: float) -> float | None:
        times = []
        for gpu_id, (gpu, _, _, _) in events.registered.items():
            event = gpu.xid_at(events.delivered[gpu_id], deadline)
            if event is not None:
                times.append(event[0])
        return min(times) if times else None

    def nvmlEventSetFree(self, eventSet: Any) -> None:
        events = self._event_set(eventSet)
        with self._lock:
            self._event_sets = {k: v for k, v in self._event_sets.items() if v is not events}


if TYPE_CHECKING:
    from probes.nvml_library import NvmlLibrary

    def _sim_is_nvml_library(sim: SimNvml) -> NvmlLibrary:
        return sim  # mypy checks here that SimNvml answers the whole NVML seam
