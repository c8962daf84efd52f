"""The metric families of one scrape, built fresh from the trays' latest readings.

Names start with `opsctl_`, use base units (celsius, watts, joules, hertz, seconds, bytes) and
only counters end in `_total` (Prometheus's naming conventions). Every GPU series is labelled
rack, tray, gpu (the index on its tray) and uuid; link series add port and switch (the NVSwitch
chip at the far end, "" where the exporter was not given the rack's topology). Identity is one
`opsctl_gpu_info` series. A value NVML does not give on this GPU is absent, not zero; a GPU that
is lost or stale shows only its identity, status and XID counts, never frozen old measurements.
A per-code XID series exists once the GPU logged the code; the GPU's total over all codes exists
from the start (docs/alerting.md says how to query them). On an HGX host each NVSwitch chip has
its fatal and non-fatal SXid counts since the driver loaded, labelled rack, tray and switch.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from probes.nvlink_ber import ber_parts
from probes.nvml_reader import CLOCK_EVENT_REASONS, FABRIC_HEALTH_FLAGS, FABRIC_STATES, FABRIC_SUMMARIES, RECOVERY_ACTIONS

from exporters.burnin_results import VERDICT_ORDER
from exporters.tray_poller import GPU_STATUSES

if TYPE_CHECKING:
    from probes.nvml_reader import GpuReading, LinkReading

    from exporters.burnin_results import BurninResults, GpuBurnin, TrayBurnin
    from exporters.tray_poller import GpuSample, TrayPoller, TraySample

# name -> the family a scrape fills in
Families = dict[str, "CounterMetricFamily | GaugeMetricFamily"]

TRAY = ("rack", "tray")
SWITCH = TRAY + ("switch",)
GPU = ("rack", "tray", "gpu", "uuid")
LINK = GPU + ("port", "switch")
INFO = GPU + ("name", "serial", "pci_bus_id", "driver_version", "vbios", "inforom", "module_id",
              "chassis_serial", "slot", "tray_index")

# The reader's per-link counters and the metric each becomes (all counters; the NVLink 5 ones absent
# on Hopper, the data-link ones on Blackwell). A counter the reader adds later is exported as
# opsctl_nvlink_<its name>_total.
LINK_COUNTERS = {
    "crc_errors": ("opsctl_nvlink_crc_errors_total", "Flit CRC errors received on the link (data-link counter: NVLink 4 and older)."),
    "replay_errors": ("opsctl_nvlink_replay_errors_total", "Data-link replays: flits resent after an error (NVLink 4 and older)."),
    "recovery_errors": ("opsctl_nvlink_recovery_errors_total", "Data-link recoveries: the link retrained after errors (NVLink 4 and older)."),
    "recovery_successful": ("opsctl_nvlink_recoveries_successful_total", "Link recovery events that succeeded (NVLink 5)."),
    "recovery_failed": ("opsctl_nvlink_recoveries_failed_total", "Link recovery events that failed: each one is the link going down (NVLink 5)."),
    "recovery_events": ("opsctl_nvlink_recovery_events_total", "Link recovery events, successful or failed (NVLink 5)."),
    "effective_errors": ("opsctl_nvlink_effective_errors_total", "Errors left after forward error correction (NVLink 5)."),
    "symbol_errors": ("opsctl_nvlink_symbol_errors_total", "Symbol errors (NVLink 5)."),
    "rcv_errors": ("opsctl_nvlink_receive_errors_total", "Receive errors (NVLink 5)."),
    "malformed_packet_errors": ("opsctl_nvlink_malformed_packet_errors_total", "Malformed packets received (NVLink 5)."),
    "buffer_overrun_errors": ("opsctl_nvlink_buffer_overrun_errors_total", "Receive buffer overruns (NVLink 5)."),
    "local_link_integrity_errors": ("opsctl_nvlink_local_link_integrity_errors_total", "Local link integrity errors (NVLink 5)."),
    "rcv_remote_errors": ("opsctl_nvlink_receive_remote_errors_total", "Packets received with a stomp/EBP marker: RX remote errors (NVLink 5)."),
    "rcv_general_errors": ("opsctl_nvlink_receive_general_errors_total", "Packets received with a header mismatch: RX general errors (NVLink 5)."),
}
# The reader's NVLink counters NVML gives for all of a GPU's links together, and their metrics (GPU labels).
GPU_NVLINK_COUNTERS = {
    "ecc_data_errors": ("opsctl_nvlink_ecc_data_errors_total", "NVLink data ECC errors over all of the GPU's links (NVML's total for all links)."),
}
# The fabric health-mask bits exported: the reader's flags and its incorrect-configuration code
# (true for any code that says the configuration is wrong).
FABRIC_FLAGS = tuple(dict.fromkeys((*FABRIC_HEALTH_FLAGS, "incorrect_configuration")))

# name: (kind, help, labels). Kind is gauge or counter; families are built in this order.
METRICS = {
    # identity and status
    "opsctl_gpu_info": ("gauge", "Identity of a GPU; always 1.", INFO),
    "opsctl_gpu_up": ("gauge", "1 when the GPU was read within the staleness limit and is not lost.", GPU),
    "opsctl_gpu_status": ("gauge", "1 for the GPU's current status: ok, lost (NVML says GPU is lost), stale (a read is hung), starting.", GPU + ("status",)),
    "opsctl_gpu_reading_age_seconds": ("gauge", "Age of the GPU's latest reading.", GPU),
    # health
    "opsctl_gpu_temperature_celsius": ("gauge", "GPU die temperature.", GPU),
    "opsctl_gpu_power_watts": ("gauge", "Power draw.", GPU),
    "opsctl_gpu_power_limit_watts": ("gauge", "Enforced power limit.", GPU),
    "opsctl_gpu_energy_joules_total": ("counter", "Energy consumed since the driver loaded.", GPU),
    "opsctl_gpu_sm_clock_hertz": ("gauge", "Current SM clock.", GPU),
    "opsctl_gpu_sm_clock_max_hertz": ("gauge", "Maximum SM clock.", GPU),
    "opsctl_gpu_memory_clock_hertz": ("gauge", "Current memory clock.", GPU),
    "opsctl_gpu_clocks_event_reason": ("gauge", "1 when this reason is holding the clocks down now (NVML clocks event reasons).", GPU + ("reason",)),
    "opsctl_gpu_clock_violation_seconds_total": ("counter", "Time the clocks were held below target by this policy (NVML violation status).", GPU + ("policy",)),
    "opsctl_gpu_ecc_corrected_errors_total": ("counter", "Corrected (single-bit) ECC errors; volatile since the last driver load, aggregate for the GPU's life.", GPU + ("counter",)),
    "opsctl_gpu_ecc_uncorrected_errors_total": ("counter", "Uncorrected (double-bit) ECC errors; volatile since the last driver load, aggregate for the GPU's life.", GPU + ("counter",)),
    "opsctl_gpu_remapped_rows": ("gauge", "HBM rows remapped, by the kind of error that caused it.", GPU + ("cause",)),
    "opsctl_gpu_row_remap_pending": ("gauge", "1 when a row remap waits for a GPU reset.", GPU),
    "opsctl_gpu_row_remap_failed": ("gauge", "1 when a row remap failed (no spare rows left).", GPU),
    "opsctl_gpu_retired_pages": ("gauge", "Retired memory pages, by cause (GPUs that retire pages instead of remapping rows).", GPU + ("cause",)),
    "opsctl_gpu_retired_pages_pending": ("gauge", "1 when a page retirement waits for a reboot.", GPU),
    "opsctl_gpu_memory_unrepairable": ("gauge", "1 when the GPU flags its memory unrepairable (nvmlDeviceGetUnrepairableMemoryFlag_v1): errors row remapping cannot repair.", GPU),
    "opsctl_gpu_inforom_valid": ("gauge", "1 when the InfoROM validates (nvmlDeviceValidateInforom), 0 when it is corrupt.", GPU),
    "opsctl_gpu_power_readable": ("gauge", "1 when the power reading was read, 0 when nvmlDeviceGetPowerUsage failed (absent where not supported).", GPU),
    "opsctl_gpu_fabric_state": ("gauge", "1 for the GPU's NVLink fabric registration state.", GPU + ("state",)),
    "opsctl_gpu_fabric_health": ("gauge", "1 for the fabric health summary NVML gives for this GPU.", GPU + ("health",)),
    "opsctl_gpu_fabric_health_flag": ("gauge", "1 when this fabric health-mask bit is set; absent when the GPU does not report it.", GPU + ("flag",)),
    "opsctl_gpu_recovery_action": ("gauge", "1 for the recovery action the driver asks for (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): none, gpu_reset, node_reboot, drain_p2p, drain_and_reset.", GPU + ("action",)),
    "opsctl_gpu_all_xid_events_total": ("counter", "XID events since the exporter started, all codes together (0 from the start).", GPU),
    "opsctl_gpu_xid_events_total": ("counter", "XID events since the exporter started, by code (a code's series appears with its first event).", GPU + ("xid",)),
    "opsctl_gpu_xid_last_seen_timestamp_seconds": ("gauge", "Unix time the GPU last logged this XID.", GPU + ("xid",)),
    "opsctl_gpu_xid_recorded": ("gauge", "XIDs the GPU logged before the exporter started, since the NVIDIA driver last loaded (kernel log), by code.", GPU + ("xid",)),
    # NVSwitch chips on the host (HGX): the host kernel log's SXid lines since the driver loaded
    "opsctl_nvswitch_fatal_sxids_total": ("counter", "Fatal SXids the NVSwitch chip logged since the NVIDIA driver loaded (host kernel log; a line that says neither fatal nor non-fatal counts here).", SWITCH),
    "opsctl_nvswitch_non_fatal_sxids_total": ("counter", "Non-fatal SXids the NVSwitch chip logged since the NVIDIA driver loaded (host kernel log).", SWITCH),
    # NVLink, per port
    "opsctl_nvlink_up": ("gauge", "1 when the NVLink link is active, 0 when down.", LINK),
    **{name: ("counter", text, LINK) for name, text in LINK_COUNTERS.values()},
    "opsctl_nvlink_effective_bit_error_ratio": ("gauge", "Effective BER after forward error correction (NVLink 5).", LINK),
    "opsctl_nvlink_symbol_bit_error_ratio": ("gauge", "BER of symbol errors (NVLink 5), decoded from NVML's mantissa and exponent.", LINK),
    "opsctl_nvlink_symbol_ber_exponent": ("gauge", "The symbol BER's decimal exponent as NVML packs it (NVLink 5; BER = mantissa x 10^-exponent): DCGM's floor is an exponent.", LINK),
    **{name: ("counter", text, GPU) for name, text in GPU_NVLINK_COUNTERS.values()},
    # the last burn-in (docs/probe-output.md run document)
    "opsctl_gpu_burnin_verdict": ("gauge", "1 for the verdict of the GPU's last burn-in (worst of its checks).", GPU + ("verdict",)),
    "opsctl_gpu_burnin_gemm_operations_per_second": ("gauge", "Median GEMM throughput of the last burn-in, floating-point operations per second.", GPU + ("dtype",)),
    "opsctl_gpu_burnin_memory_bytes_per_second": ("gauge", "Memory bandwidth of the last burn-in.", GPU),
    "opsctl_gpu_burnin_timestamp_seconds": ("gauge", "Unix time the last burn-in finished.", GPU),
    # the tray and the exporter itself
    "opsctl_tray_gpus_expected": ("gauge", "GPUs the tray's model has.", TRAY),
    "opsctl_tray_gpus_visible": ("gauge", "GPUs NVML enumerates on the tray.", TRAY),
    "opsctl_exporter_up": ("gauge", "1 when the exporter has NVML open on the tray and its XID watcher runs.", TRAY),
    "opsctl_exporter_collect_duration_seconds": ("gauge", "How long the GPU's latest read took.", GPU),
    "opsctl_exporter_collect_errors_total": ("counter", "Reads of the GPU in which an NVML call failed (other than not supported) or the read crashed.", GPU),
    "opsctl_exporter_xid_watch_errors_total": ("counter", "Errors of the tray's XID event watcher.", TRAY),
    "opsctl_exporter_kernel_log_read": ("gauge", "1 when the tray's kernel log was read for the XIDs logged before the exporter started, 0 when it could not be.", TRAY),
    "opsctl_exporter_burnin_result_errors_total": ("counter", "Burn-in result files that could not be read.", ()),
}
_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def link_counter_metric(counter: str) -> str | None:
    """The metric name of a reader link counter (new counters get a name of their own)."""
    known = LINK_COUNTERS.get(counter)
    if known:
        return known[0]
    name = f"opsctl_nvlink_{counter}_total"
    return name if _NAME.fullmatch(name) else None


class RackCollector:
    """A prometheus_client collector over tray pollers: every scrape builds fresh families from
    the latest readings; it never calls NVML itself, so it never blocks on a GPU."""

    def __init__(self, pollers: Iterable[TrayPoller], burnin: BurninResults | None = None) -> None:
        self.pollers = list(pollers)
        self.burnin = burnin

    def describe(self) -> list[Metric]:
        return []  # no collect at registration: there may be no reading yet

    def collect(self) -> list[Metric]:
        now = time.time()
        families = _new_families()
        for poller in self.pollers:
            tray = poller.sample(now)
            burnin = self.burnin.for_tray(tray.tray) if self.burnin is not None else None
            _add_tray(families, tray, burnin)
        if self.burnin is not None and self.burnin.path is not None:
            families["opsctl_exporter_burnin_result_errors_total"].add_metric([], self.burnin.errors)
        return [family for family in families.values() if family.samples]


def _new_families() -> Families:
    families: Families = {}
    for name, (kind, text, labels) in METRICS.items():
        family_class = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
        families[name] = family_class(name, text, labels=list(labels))
    return families


def _add_tray(families: Families, tray: TraySample, burnin: TrayBurnin | None) -> None:
    labels = [tray.rack, tray.tray]
    families["opsctl_exporter_up"].add_metric(labels, 1 if tray.up else 0)
    families["opsctl_exporter_xid_watch_errors_total"].add_metric(labels, tray.xid_watch_errors)
    families["opsctl_exporter_kernel_log_read"].add_metric(labels, 0 if tray.kernel_log_unread else 1)
    if tray.expected_gpus is not None:
        families["opsctl_tray_gpus_expected"].add_metric(labels, tray.expected_gpus)
    if tray.visible_gpus is not None:
        families["opsctl_tray_gpus_visible"].add_metric(labels, tray.visible_gpus)
    for chip, (fatal, non_fatal) in sorted((tray.nvswitch_sxids or {}).items()):
        families["opsctl_nvswitch_fatal_sxids_total"].add_metric(labels + [chip], fatal)
        families["opsctl_nvswitch_non_fatal_sxids_total"].add_metric(labels + [chip], non_fatal)
    for gpu in tray.gpus:
        gpu_burnin = burnin.gpus.get(gpu.index) if burnin is not None else None
        _add_gpu(families, tray, gpu, gpu_burnin, burnin)


def _add_gpu(families: Families, tray: TraySample, gpu: GpuSample, gpu_burnin: GpuBurnin | None,
             burnin: TrayBurnin | None) -> None:
    identity = gpu.identity
    uuid = (identity.uuid if identity is not None else None) or ""
    labels = [tray.rack, tray.tray, str(gpu.index), uuid]
    families["opsctl_gpu_info"].add_metric(labels + _identity_labels(identity, tray.driver_version), 1)
    families["opsctl_gpu_up"].add_metric(labels, 1 if gpu.status == "ok" else 0)
    for status in GPU_STATUSES:
        families["opsctl_gpu_status"].add_metric(labels + [status], 1 if gpu.status == status else 0)
    families["opsctl_exporter_collect_errors_total"].add_metric(labels, gpu.collect_errors)
    reading = gpu.reading  # there is an age exactly when there is a reading; status ok needs one too
    if gpu.age_s is not None and reading is not None:
        families["opsctl_gpu_reading_age_seconds"].add_metric(labels, gpu.age_s)
        families["opsctl_exporter_collect_duration_seconds"].add_metric(labels, reading.read_seconds)
    for code, count in sorted(gpu.recorded_xids.items()):
        families["opsctl_gpu_xid_recorded"].add_metric(labels + [str(code)], count)
    families["opsctl_gpu_all_xid_events_total"].add_metric(labels, sum(count for count, _ in gpu.xids.values()))
    for code, (count, last_seen) in sorted(gpu.xids.items()):
        families["opsctl_gpu_xid_events_total"].add_metric(labels + [str(code)], count)
        if last_seen is not None:
            families["opsctl_gpu_xid_last_seen_timestamp_seconds"].add_metric(labels + [str(code)], last_seen)
    # A result for another board in this slot (the GPU was swapped since) is not this GPU's.
    if gpu_burnin is not None and burnin is not None and (not uuid or not gpu_burnin.uuid or gpu_burnin.uuid == uuid):
        _add_burnin(families, labels, gpu_burnin, burnin.finished)
    if gpu.status == "ok" and reading is not None:
        _add_health(families, labels, reading)
        _add_links(families, labels, reading.links, tray.switch_of, gpu.index)


def _identity_labels(identity: GpuReading | None, driver_version: str | None) -> list[str]:
    """The values of INFO after GPU's labels; "" for what NVML has not told (yet)."""
    def of(name: str) -> Any:
        return getattr(identity, name, None)

    platform = of("platform") or {}
    values = [of("name"), of("serial"), of("pci_bus_id"), driver_version, of("vbios"), of("inforom"), of("module_id"),
              platform.get("chassis_serial"), platform.get("slot"), platform.get("tray_index")]
    return ["" if value is None else str(value) for value in values]


def _add_burnin(families: Families, labels: list[str], result: GpuBurnin, finished: float) -> None:
    for verdict in VERDICT_ORDER:
        families["opsctl_gpu_burnin_verdict"].add_metric(labels + [verdict], 1 if result.verdict == verdict else 0)
    for dtype, flops in sorted(result.gemm_flops.items()):
        families["opsctl_gpu_burnin_gemm_operations_per_second"].add_metric(labels + [dtype], flops)
    if result.memory_bytes_per_second is not None:
        families["opsctl_gpu_burnin_memory_bytes_per_second"].add_metric(labels, result.memory_bytes_per_second)
    families["opsctl_gpu_burnin_timestamp_seconds"].add_metric(labels, finished)


def _add_health(families: Families, labels: list[str], r: GpuReading) -> None:
    def put(name: str, value: float | None, scale: float = 1.0) -> None:
        if value is not None:
            families[name].add_metric(labels, value * scale)

    put("opsctl_gpu_temperature_celsius", r.temperature_c)
    put("opsctl_gpu_power_watts", r.power_w)
    put("opsctl_gpu_power_limit_watts", r.power_limit_w)
    put("opsctl_gpu_energy_joules_total", r.energy_j)
    put("opsctl_gpu_sm_clock_hertz", r.sm_clock_mhz, 1e6)
    put("opsctl_gpu_sm_clock_max_hertz", r.sm_clock_max_mhz, 1e6)
    put("opsctl_gpu_memory_clock_hertz", r.mem_clock_mhz, 1e6)
    if r.clocks_event_reasons is not None:
        active = set(r.clocks_event_reasons)
        for reason in CLOCK_EVENT_REASONS:
            families["opsctl_gpu_clocks_event_reason"].add_metric(labels + [reason], 1 if reason in active else 0)
    for policy, seconds in sorted(r.violation_s.items()):
        families["opsctl_gpu_clock_violation_seconds_total"].add_metric(labels + [policy], seconds)
    for key, count in sorted(r.ecc.items()):
        kind, counter = key.split("_", 1)  # corrected_volatile, uncorrected_aggregate, …
        families[f"opsctl_gpu_ecc_{kind}_errors_total"].add_metric(labels + [counter], count)
    if r.remapped_rows is not None:
        rows = r.remapped_rows
        families["opsctl_gpu_remapped_rows"].add_metric(labels + ["correctable"], rows["corrected"])
        families["opsctl_gpu_remapped_rows"].add_metric(labels + ["uncorrectable"], rows["uncorrected"])
        put("opsctl_gpu_row_remap_pending", int(rows["pending"]))
        put("opsctl_gpu_row_remap_failed", int(rows["failure"]))
    if r.retired_pages is not None:
        pages = r.retired_pages
        for cause in ("single_bit", "double_bit"):
            if pages.get(cause) is not None:
                families["opsctl_gpu_retired_pages"].add_metric(labels + [cause], pages[cause])
        if pages.get("pending") is not None:
            put("opsctl_gpu_retired_pages_pending", int(pages["pending"]))
    # What DCGM's health watch reads as it stands (MonitorMemUnrepairableFlag, MonitorInforom,
    # MonitorPower): absent where this NVML does not answer, never a guessed 1.
    if r.memory_unrepairable is not None:
        put("opsctl_gpu_memory_unrepairable", int(r.memory_unrepairable))
    if r.inforom_valid is not None:
        put("opsctl_gpu_inforom_valid", int(r.inforom_valid))
    if r.power_w is not None or "nvmlDeviceGetPowerUsage" in r.errors:  # NOT_SUPPORTED is neither
        put("opsctl_gpu_power_readable", int(r.power_w is not None))
    for counter, count in r.nvlink_gpu.items():
        if counter in GPU_NVLINK_COUNTERS:
            families[GPU_NVLINK_COUNTERS[counter][0]].add_metric(labels, count)
    if r.fabric is not None:
        _add_fabric(families, labels, r.fabric)
    if r.recovery_action is not None:
        actions = list(RECOVERY_ACTIONS.values())
        if r.recovery_action not in actions:  # a code this reader does not know: shown as the reader names it
            actions.append(r.recovery_action)
        for action in actions:
            families["opsctl_gpu_recovery_action"].add_metric(labels + [action], 1 if r.recovery_action == action else 0)


def _add_fabric(families: Families, labels: list[str], fabric: dict[str, Any]) -> None:
    for state in FABRIC_STATES.values():
        families["opsctl_gpu_fabric_state"].add_metric(labels + [state], 1 if fabric["state"] == state else 0)
    for summary in FABRIC_SUMMARIES.values():
        families["opsctl_gpu_fabric_health"].add_metric(labels + [summary], 1 if fabric["summary"] == summary else 0)
    for flag in FABRIC_FLAGS:
        value = fabric["health"].get(flag)
        if value is not None:
            families["opsctl_gpu_fabric_health_flag"].add_metric(labels + [flag], 1 if value else 0)


def _add_links(families: Families, gpu_labels: list[str], links: Sequence[LinkReading],
               switch_of: dict[tuple[int, int], str], gpu_index: int) -> None:
    up = families["opsctl_nvlink_up"]
    effective_ber = families["opsctl_nvlink_effective_bit_error_ratio"]
    symbol_ber = families["opsctl_nvlink_symbol_bit_error_ratio"]
    for link in links:
        labels = gpu_labels + [str(link.port), switch_of.get((gpu_index, link.port), "")]
        if link.state is not None:
            up.add_metric(labels, 1 if link.state == "up" else 0)
        for counter, value in link.counters.items():
            name = link_counter_metric(counter)
            if name is None:
                continue
            if name not in families:  # a counter the reader learned after this module was written
                families[name] = CounterMetricFamily(name, f"NVLink {counter.replace('_', ' ')} (from the NVML reader).", labels=list(LINK))
            families[name].add_metric(labels, value)
        if link.effective_ber is not None:
            effective_ber.add_metric(labels, link.effective_ber)
        if link.symbol_ber is not None:
            symbol_ber.add_metric(labels, link.symbol_ber)
        if link.symbol_ber_raw is not None:  # DCGM judges the packed exponent, which the decoded ratio does not keep
            families["opsctl_nvlink_symbol_ber_exponent"].add_metric(labels, ber_parts(link.symbol_ber_raw)[1])
