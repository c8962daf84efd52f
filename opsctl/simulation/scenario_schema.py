"""The fault scenario format as msgspec schemas: one Struct per fault kind, told apart by `kind`
(docs/schemas/scenario.schema.json is written from them). opsctl/simulation/scenario.py reads a
file through ScenarioFile and keeps, as code, only what a schema cannot say (a window's end after
its start, a flap shorter than its period).

A field left out is UNSET, not a default: the compiler gives each kind its defaults, and says
what a fault left unsaid from what it said.
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal, Union, get_args

import msgspec
from msgspec import UNSET, UnsetType

from opsctl.input_schema import Fraction

FINITE = sys.float_info.max  # NaN and infinity fail this bound: every rate and time is finite
MAX_WHOLE = 2**32 - 1  # counts, XID codes and the kernel log's 32-bit registers
# What one scenario may ask of the simulator, so that no file makes a probe or an exporter grow
# without bound: a 1 µs flap or XID repeat is a million events a second on every GPU it names.
MAX_FAULTS = 5_000
MIN_REPEAT_S = 1.0  # an XID repeats, a link flaps, at most once a second
MAX_XID_COUNT = 10_000  # repeats of one xid fault

Rate = Annotated[float, msgspec.Meta(ge=0, le=FINITE, description="events per second, finite and ≥ 0")]
Time = Annotated[float, msgspec.Meta(ge=0, le=FINITE, description="seconds since the simulator starts")]
# When a line reached the kernel log: before the simulator started (negative) is what the host
# logged before anything looked, the state a tray arrives in.
Logged = Annotated[float, msgspec.Meta(ge=-FINITE, le=FINITE,
                                       description="seconds since the simulator starts; negative: logged before it")]
Ber = Annotated[Fraction, msgspec.Meta(description="bit error rate, 0 to 1")]
Factor = Annotated[float, msgspec.Meta(gt=0, le=1, description="a fraction of the healthy figure, above 0 and at most 1")]
Whole = Annotated[int, msgspec.Meta(ge=0, le=MAX_WHOLE, description="a whole number, 0 to 2^32 - 1")]
Repeat = Annotated[float, msgspec.Meta(ge=MIN_REPEAT_S, le=FINITE, description="seconds between repeats, at least 1")]
ComponentId = Annotated[str, msgspec.Meta(min_length=1, max_length=256, description=(
    "a component id; the rack may be left out (ct05/gpu1/nvl07 or rack07/ct05/gpu1/nvl07)"))]
GpuId = Annotated[ComponentId, msgspec.Meta(description="a GPU id (ct05/gpu1), or all for every GPU of the rack")]
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
IncorrectConfiguration = Literal["incorrect_sysguid", "incorrect_chassis_sn", "no_partition", "insufficient_nvlinks",
                                 "incompatible_gpu_fw", "invalid_location", "gpu_state_invalid"]
RecoveryAction = Literal["none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset"]  # NVML's nvmlDeviceGpuRecoveryAction_t


class _Fault(msgspec.Struct, tag_field="kind", forbid_unknown_fields=True, kw_only=True):
    """What every fault may carry besides its kind: a name and a note, for people."""

    id: Annotated[str | int, msgspec.Meta(description="a name for the fault, for people")] | UnsetType = UNSET
    note: Annotated[str, msgspec.Meta(description="a note, for people")] | UnsetType = UNSET


class _Timed(_Fault, kw_only=True):
    start_s: Annotated[Time, msgspec.Meta(description="when the fault starts (default 0)")] | UnsetType = UNSET
    end_s: Annotated[Time, msgspec.Meta(description="when it ends, after start_s (default: never)")] | UnsetType = UNSET


class _OnLink(_Timed, kw_only=True):
    link: Annotated[ComponentId, msgspec.Meta(description="the link: ct05/gpu1/nvl07")] | UnsetType = UNSET
    gpu: Annotated[ComponentId, msgspec.Meta(description="the GPU, with port, instead of link")] | UnsetType = UNSET
    port: Annotated[int, msgspec.Meta(ge=0, le=MAX_WHOLE, description="the GPU's NVLink port, with gpu")] | UnsetType = UNSET


class _Rated(_Timed, kw_only=True):
    """Link error rates, each the rate its counter counts at: the data-link counters crc_per_s,
    replay_per_s and recovery_per_s (NVLink 4 and older; refused on a Blackwell rack, whose GPUs
    have none), the NVLink 5 NVML_FI_DEV_NVLINK_COUNT_* counters, and ecc_data_errors_per_s, the
    link's NVLink data ECC errors, which NVML counts only in its GPU's total over all links."""

    crc_per_s: Rate | UnsetType = UNSET
    replay_per_s: Rate | UnsetType = UNSET
    recovery_per_s: Rate | UnsetType = UNSET
    symbol_per_s: Rate | UnsetType = UNSET
    rcv_errors_per_s: Rate | UnsetType = UNSET
    malformed_packet_errors_per_s: Rate | UnsetType = UNSET
    buffer_overrun_errors_per_s: Rate | UnsetType = UNSET
    local_link_integrity_errors_per_s: Rate | UnsetType = UNSET
    effective_errors_per_s: Rate | UnsetType = UNSET
    recovery_failed_per_s: Rate | UnsetType = UNSET
    recovery_successful_per_s: Rate | UnsetType = UNSET
    rcv_remote_errors_per_s: Rate | UnsetType = UNSET
    rcv_general_errors_per_s: Rate | UnsetType = UNSET
    ecc_data_errors_per_s: Rate | UnsetType = UNSET
    ber: Ber | UnsetType = UNSET
    ramp_s: Annotated[Time, msgspec.Meta(description="seconds the rates take to reach their full value")] | UnsetType = UNSET


class _OnPart(_Timed, kw_only=True):
    part: Annotated[ComponentId, msgspec.Meta(description="the part: a cartridge, switch chip or switch tray")]


class _OnGpu(_Fault, kw_only=True):
    gpu: GpuId


class _TimedGpu(_Timed, kw_only=True):
    gpu: GpuId


class _OnTray(_Fault, kw_only=True):
    tray: Annotated[ComponentId, msgspec.Meta(description="the tray: ct05, st2")]


# --- the kinds --------------------------------------------------------------------------------
class LinkErrors(_Rated, tag="link_errors", kw_only=True):
    """A link counting errors at the given rates."""

    link: Annotated[ComponentId, msgspec.Meta(description="the link: ct05/gpu1/nvl07")] | UnsetType = UNSET
    gpu: Annotated[ComponentId, msgspec.Meta(description="the GPU, with port, instead of link")] | UnsetType = UNSET
    port: Annotated[int, msgspec.Meta(ge=0, le=MAX_WHOLE, description="the GPU's NVLink port, with gpu")] | UnsetType = UNSET


class LinkDown(_OnLink, tag="link_down", kw_only=True):
    """A link down (its GPU logs the link-down XID)."""


class LinkFlap(_OnLink, tag="link_flap", kw_only=True):
    """A link going down for down_s every period_s."""

    period_s: Annotated[Repeat, msgspec.Meta(description="seconds between drops (default 60)")] | UnsetType = UNSET
    down_s: Annotated[Time, msgspec.Meta(description="seconds down each time, below period_s (default 5)")] | UnsetType = UNSET


class LinkDegraded(_OnLink, tag="link_degraded", kw_only=True):
    """A link carrying only `factor` of its bandwidth."""

    factor: Factor


class BadPins(_Rated, tag="bad_pins", kw_only=True):
    """A part with bad pins: error rates (a marginal contact by default) or down, on some of the
    links through it, chosen by the seed."""

    part: Annotated[ComponentId, msgspec.Meta(description="the part: a cartridge, switch chip or switch tray")]
    links: Annotated[int, msgspec.Meta(ge=1, le=MAX_WHOLE, description="how many of its links")] | UnsetType = UNSET
    fraction: Annotated[Factor, msgspec.Meta(description="or what fraction of its links (default 0.1)")] | UnsetType = UNSET
    down: Annotated[bool, msgspec.Meta(description="the chosen links are down rather than erring")] | UnsetType = UNSET


class SwitchChipFailed(_OnPart, tag="switch_chip_failed", kw_only=True):
    """A switch chip failed: its links down."""


class SwitchTrayFailed(_OnPart, tag="switch_tray_failed", kw_only=True):
    """A switch tray failed: its links down."""


class SwitchChipDegraded(_OnPart, tag="switch_chip_degraded", kw_only=True):
    """A switch chip whose every link carries only `factor` of its bandwidth."""

    factor: Factor


class Sxid(_Fault, tag="sxid", kw_only=True):
    """An NVSwitch error (SXid) an HGX baseboard's switch chip logs in the host's kernel log, at
    at_s (0, the default: before the probe starts), as the nvidia-nvswitch driver writes it."""

    part: Annotated[ComponentId, msgspec.Meta(description="the HGX switch chip: nvs2")]
    sxid: Annotated[Whole, msgspec.Meta(description="the SXid code: 20034")]
    fatal: Annotated[bool, msgspec.Meta(description="the line says Fatal (true) or Non-fatal (false); "
                                                    "left out: it says neither")] | UnsetType = UNSET
    at_s: Logged | UnsetType = UNSET
    text: Annotated[Text, msgspec.Meta(description="what the line says after the severity")] | UnsetType = UNSET


class DriverReload(_OnTray, tag="driver_reload", kw_only=True):
    """The NVIDIA driver loaded again on a compute tray's host at at_s (a reboot, or the kernel
    module reloaded): its kernel log gets the driver's load line there, and what the tray's GPUs
    and switch chips logged before it is of an earlier life, not held against them. Before the
    probe starts: a negative at_s, after the XIDs it clears."""

    at_s: Logged


class GpuReset(_OnGpu, tag="gpu_reset", kw_only=True):
    """The GPU was reset at at_s (`nvidia-smi -r`, the catalog's RESET_GPU): the journal gets the
    line NVIDIA's NVSentinel reset job writes, "GPU reset executed: <UUID>, success: true", and
    what the GPU logged before it is not held against it. success false: a reset that failed,
    which clears nothing."""

    at_s: Logged
    success: bool | UnsetType = UNSET


class SlowGpu(_TimedGpu, tag="slow_gpu", kw_only=True):
    """A GPU computing at `factor` of its speed."""

    factor: Factor


class ThermalThrottle(_TimedGpu, tag="thermal_throttle", kw_only=True):
    """A GPU that heats up and slows its clocks."""

    clock_factor: Factor | UnsetType = UNSET
    temperature_c: Annotated[float, msgspec.Meta(ge=0, le=FINITE, description="the temperature it reaches, °C")] | UnsetType = UNSET
    after_busy_s: Annotated[Time, msgspec.Meta(description="seconds of load before it throttles")] | UnsetType = UNSET


class PowerBrake(_TimedGpu, tag="power_brake", kw_only=True):
    """A GPU slowed by the power brake."""

    clock_factor: Factor | UnsetType = UNSET
    after_busy_s: Annotated[Time, msgspec.Meta(description="seconds of load before it brakes")] | UnsetType = UNSET


class Ecc(_TimedGpu, tag="ecc", kw_only=True):
    """ECC errors: corrected at a rate, uncorrected (XID 48 and a pending row remap)."""

    corrected_per_s: Rate | UnsetType = UNSET
    uncorrected: Whole | UnsetType = UNSET


class RowRemap(_OnGpu, tag="row_remap", kw_only=True):
    """Remapped rows (XID 63), or a remap that failed (XID 64)."""

    start_s: Time | UnsetType = UNSET
    corrected_rows: Whole | UnsetType = UNSET
    uncorrected_rows: Whole | UnsetType = UNSET
    pending: bool | UnsetType = UNSET
    failure: bool | UnsetType = UNSET


class Xid(_OnGpu, tag="xid", kw_only=True):
    """An XID the GPU logs, once or repeated."""

    xid: Annotated[Whole, msgspec.Meta(description="the XID code")]
    at_s: Logged | UnsetType = UNSET
    repeat_s: Repeat | UnsetType = UNSET
    count: Annotated[int, msgspec.Meta(ge=0, le=MAX_XID_COUNT, description="how many times (at most 10,000)")] | UnsetType = UNSET
    recovery_action: RecoveryAction | UnsetType = UNSET
    # The registers of the kernel log line (XIDs 144-150), 0x… in YAML.
    intr_info: Annotated[Whole, msgspec.Meta(description="the kernel log line's intrinfo register")] | UnsetType = UNSET
    error_status: Annotated[Whole, msgspec.Meta(description="the kernel log line's errorstatus register")] | UnsetType = UNSET


class Sdc(_TimedGpu, tag="sdc", kw_only=True):
    """Silent data corruption: a wrong result with this probability."""

    probability: Fraction


class GpuLost(_OnGpu, tag="gpu_lost", kw_only=True):
    """A GPU fallen off the bus (XID 79)."""

    start_s: Time | UnsetType = UNSET


class GpuHang(_TimedGpu, tag="gpu_hang", kw_only=True):
    """A GPU that stops answering."""

    nvml: Annotated[bool, msgspec.Meta(description="NVML hangs too (default true)")] | UnsetType = UNSET


class NotSupported(_OnGpu, tag="not_supported", kw_only=True):
    """NVML calls and fields the GPU answers NOT_SUPPORTED."""

    calls: Annotated[list[Text], msgspec.Meta(description="nvml… call names")] | UnsetType = UNSET
    fields: Annotated[list[Text], msgspec.Meta(description="NVML_FI_… field names")] | UnsetType = UNSET


class FabricDegraded(_TimedGpu, tag="fabric_degraded", kw_only=True):
    """The GPU's fabric registration (nvmlDeviceGetGpuFabricInfoV) as NVML can report it: the
    health mask's flags (degraded bandwidth unless degraded_bw: false), an incorrect configuration,
    the global fabric manager disconnected, a registration in progress or not started."""

    route_unhealthy: bool | UnsetType = UNSET
    degraded_bw: bool | UnsetType = UNSET
    route_recovery: bool | UnsetType = UNSET
    access_timeout_recovery: bool | UnsetType = UNSET
    incorrect_configuration: Annotated[IncorrectConfiguration, msgspec.Meta(description=(
        "nvml.h NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_*: what is wrong"))] | UnsetType = UNSET
    gfm_disconnected: Annotated[bool, msgspec.Meta(description=(
        "the global fabric manager disconnected (NVML_GPU_FABRIC_HEALTH_MASK_GFM_STATE_DISCONNECTED)"))] | UnsetType = UNSET
    state: Annotated[Literal["not_started", "in_progress"], msgspec.Meta(description=(
        "the registration's state (NVML_GPU_FABRIC_STATE_*), instead of completed"))] | UnsetType = UNSET


class TrayUnreachable(_OnTray, tag="tray_unreachable", kw_only=True):
    """A tray that cannot be reached."""


# The NVLink domain as one job: IMEX not running on a tray, a GPU registered in another clique,
# NCCL taking the network instead of NVLink (no target: the rack's job).
class ImexMissing(_OnTray, tag="imex_missing", kw_only=True):
    """IMEX not running on a compute tray."""


class FabricClique(_OnGpu, tag="fabric_clique", kw_only=True):
    """A GPU registered in another clique."""

    clique_id: Whole


class NcclFallback(_Fault, tag="nccl_fallback", kw_only=True):
    """NCCL taking the network instead of NVLink (the rack's job; no target)."""


# Tray depth: a weak HBM range, a tray flashed with another VBIOS, ECC off, a PCIe link trained
# below its best (HGX), a GPU that computes the same wrong result every time.
class HbmBadCells(_OnGpu, tag="hbm_bad_cells", kw_only=True):
    """A weak HBM range."""

    offset_gib: Annotated[float, msgspec.Meta(ge=0, le=FINITE, description="where it starts, GiB")]
    size_mib: Annotated[float, msgspec.Meta(gt=0, le=FINITE, description="its size, MiB, above 0")]


class FirmwareMismatch(_OnTray, tag="firmware_mismatch", kw_only=True):
    """A compute tray flashed with another VBIOS, or a switch tray with another NVSwitch firmware."""

    vbios: Annotated[str, msgspec.Meta(min_length=1, max_length=256, pattern=r"\S", description=(
        "the VBIOS version a compute tray's GPUs report"))] | UnsetType = UNSET
    switch_firmware: Annotated[str, msgspec.Meta(min_length=1, max_length=256, pattern=r"\S", description=(
        "the firmware version a switch tray's NVSwitch chips report"))] | UnsetType = UNSET


class EccDisabled(_OnGpu, tag="ecc_disabled", kw_only=True):
    """ECC off."""


class PcieDegraded(_OnGpu, tag="pcie_degraded", kw_only=True):
    """A PCIe link trained below its best (HGX)."""

    width: Annotated[Literal[1, 2, 4, 8, 16], msgspec.Meta(description="lanes (default 16)")] | UnsetType = UNSET
    gen: Annotated[int, msgspec.Meta(ge=1, le=6, description="PCIe generation (default 5)")] | UnsetType = UNSET
    # …and its PCIe AER errors, counted at a rate from the start (the classes of NVML's AER fields).
    correctable_per_minute: Annotated[Rate, msgspec.Meta(description="correctable AER errors a minute")] | UnsetType = UNSET
    non_fatal_per_minute: Annotated[Rate, msgspec.Meta(description="non-fatal AER errors a minute")] | UnsetType = UNSET
    fatal_per_minute: Annotated[Rate, msgspec.Meta(description="fatal AER errors a minute")] | UnsetType = UNSET


class DeterministicSdc(_OnGpu, tag="deterministic_sdc", kw_only=True):
    """A GPU that computes the same wrong result every time."""


class C2cLinkDown(_OnGpu, tag="c2c_link_down", kw_only=True):
    """GB200: the GPU's NVLink-C2C link to its Grace CPU inactive."""


# What a GPU arrives with: running totals its driver kept from before the simulator starts, and
# the states DCGM 4.6's health watch reads as they are (probes/running_totals.py judges them).
class LinkTotals(_Fault, tag="link_totals", kw_only=True):
    """A link whose error counters already hold counts when the simulator starts (since the
    driver loaded): DCGM's MonitorNVLinkErrorFields fails or warns on them."""

    link: Annotated[ComponentId, msgspec.Meta(description="the link: ct05/gpu1/nvl07")] | UnsetType = UNSET
    gpu: Annotated[ComponentId, msgspec.Meta(description="the GPU, with port, instead of link")] | UnsetType = UNSET
    port: Annotated[int, msgspec.Meta(ge=0, le=MAX_WHOLE, description="the GPU's NVLink port, with gpu")] | UnsetType = UNSET
    crc: Annotated[Whole, msgspec.Meta(description=(
        "data-link CRC errors (NVML_FI_DEV_NVLINK_ERROR_DL_CRC; NVLink 4 and older, refused on Blackwell)"))] | UnsetType = UNSET
    replay: Annotated[Whole, msgspec.Meta(description=(
        "data-link replays (NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY; NVLink 4 and older, refused on Blackwell)"))] | UnsetType = UNSET
    recovery: Annotated[Whole, msgspec.Meta(description=(
        "data-link recoveries (NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY; NVLink 4 and older, refused on Blackwell)"))] | UnsetType = UNSET
    recovery_failed: Annotated[Whole, msgspec.Meta(description=(
        "NVLink 5 failed recoveries (NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS)"))] | UnsetType = UNSET
    recovery_successful: Annotated[Whole, msgspec.Meta(description=(
        "NVLink 5 successful recoveries (NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS)"))] | UnsetType = UNSET


class VolatileDbe(_OnGpu, tag="volatile_dbe", kw_only=True):
    """Double-bit ECC errors in the volatile count when the simulator starts, without a row remap
    or an XID: DCGM's MonitorMemVolatileDbes fails any."""

    count: Annotated[int, msgspec.Meta(ge=1, le=MAX_WHOLE, description="the count (default 1)")] | UnsetType = UNSET


class MemoryUnrepairable(_OnGpu, tag="memory_unrepairable", kw_only=True):
    """The GPU's memory-unrepairable flag set (nvmlDeviceGetUnrepairableMemoryFlag_v1)."""


class InforomInvalid(_OnGpu, tag="inforom_invalid", kw_only=True):
    """A corrupt InfoROM (nvmlDeviceValidateInforom answers NVML_ERROR_CORRUPTED_INFOROM)."""


class PowerUnreadable(_OnGpu, tag="power_unreadable", kw_only=True):
    """A GPU whose power reading fails (nvmlDeviceGetPowerUsage answers an error, not a value)."""


FaultSpec = Union[
    LinkErrors, LinkDown, LinkFlap, LinkDegraded, BadPins, SwitchChipFailed, SwitchTrayFailed, SlowGpu,
    ThermalThrottle, PowerBrake, Ecc, RowRemap, Xid, Sdc, GpuLost, GpuHang, NotSupported, FabricDegraded,
    TrayUnreachable, ImexMissing, FabricClique, NcclFallback, SwitchChipDegraded, Sxid, HbmBadCells,
    FirmwareMismatch, EccDisabled, PcieDegraded, DeterministicSdc, C2cLinkDown, LinkTotals, VolatileDbe,
    MemoryUnrepairable, InforomInvalid, PowerUnreadable, DriverReload, GpuReset,
]
# kind -> its Struct (tests check these are the kinds of scenario.py FAULT_KINDS)
FAULT_STRUCTS: dict[str, type[_Fault]] = {str(cls.__struct_config__.tag): cls for cls in get_args(FaultSpec)}
TARGET_FIELDS = ("link", "gpu", "port", "part", "tray")
PEOPLE_FIELDS = ("id", "note")


class Noise(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """In-spec noise on every healthy link (default: ber 1e-15, no counted error). crc_per_s and
    replay_per_s are data-link counters: NVLink 4 and older only, refused on a Blackwell rack."""

    crc_per_s: Rate | UnsetType = UNSET
    replay_per_s: Rate | UnsetType = UNSET
    symbol_per_s: Rate | UnsetType = UNSET
    ber: Ber | UnsetType = UNSET


class ScenarioFile(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A fault scenario: what is broken in a simulated rack, and when."""

    scenario: Annotated[str, msgspec.Meta(description="the scenario's name (default: the file's)")] | None = None
    description: Annotated[str, msgspec.Meta(description="what it shows, for people")] | None = None
    seed: Annotated[int, msgspec.Meta(description="the seed of every random choice (serials, chosen pins)")] = 0
    rack: Annotated[str, msgspec.Meta(description="the rack it is written for (default: any)")] | None = None
    noise: Noise | None = None
    faults: Annotated[list[FaultSpec], msgspec.Meta(max_length=MAX_FAULTS, description="the faults, at most 5,000")] | None = None
