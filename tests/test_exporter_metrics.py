"""The exporter over the simulator: what a scrape shows, and that no GPU can block or break it."""

import json
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest

from probes.sim import SimNvml
from tests.conftest import REPO


def values(samples, name, **labels):
    """Values of `name` whose labels include `labels`, in label order."""
    want = {k: str(v) for k, v in labels.items()}
    found = [(sorted(ls), v) for (n, ls), v in samples.items() if n == name and want.items() <= dict(ls).items()]
    return [v for _, v in sorted(found)]


def value(samples, name, **labels):
    found = values(samples, name, **labels)
    assert len(found) == 1, (name, labels, found)
    return found[0]


def all_up(count):
    return lambda samples: sum(values(samples, "opsctl_gpu_up")) == count


@pytest.mark.slow
def test_a_scrape_of_the_seeded_nvl72_shows_its_faults_and_passes_promtool(sim_exporter):
    text = (REPO / "opsctl/data/scenarios/rack07-seeded.yaml").read_text()
    # The rack at 100 s exactly, read once: 72 GPUs' first reads share this process's CPU.
    served = sim_exporter(text, at_s=100, interval=600, stale_after=900, frozen=True, deadline_s=120)
    samples = served.wait_for(all_up(72), timeout=180)
    body = served.text()
    check = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, text=True)
    assert check.returncode == 0 and not (check.stdout + check.stderr).strip(), check.stdout + check.stderr

    assert len(values(samples, "opsctl_gpu_info")) == 72 and len(values(samples, "opsctl_nvlink_up")) == 1296
    assert value(samples, "opsctl_gpu_info", tray="ct03", gpu=2) == 1
    info = next(dict(ls) for (n, ls) in samples if n == "opsctl_gpu_info" and ("tray", "ct03") in ls and ("gpu", "2") in ls)
    assert info["name"] == "NVIDIA GB200" and info["pci_bus_id"] == "00000018:01:00.0" and info["chassis_serial"]
    assert info["uuid"].startswith("GPU-") and info["driver_version"] == "570.133.20"
    # The cable fault and the three links through ct12's bent pins, and nothing else, above 1e-12.
    bad = {(dict(ls)["tray"], dict(ls)["gpu"], dict(ls)["port"]) for (n, ls), v in samples.items()
           if n == "opsctl_nvlink_effective_bit_error_ratio" and v > 1e-12}
    assert ("ct05", "1", "7") in bad and len(bad) == 4 and sum(1 for t, _, _ in bad if t == "ct12") == 3
    assert value(samples, "opsctl_nvlink_effective_bit_error_ratio", tray="ct05", gpu=1, port=7) == pytest.approx(3e-11)
    # The flapping link has gone down every 15 s from 2 s on: at 2, 17, …, 92 s, seven times by 100 s.
    assert value(samples, "opsctl_nvlink_recoveries_failed_total", tray="ct07", gpu=0, port=13) == 7
    assert values(samples, "opsctl_gpu_row_remap_pending").count(1) == 1
    assert value(samples, "opsctl_gpu_row_remap_pending", tray="ct17", gpu=1) == 1
    # Base units; a total of XIDs from the start for every GPU, a counter per code only once logged.
    assert value(samples, "opsctl_gpu_sm_clock_hertz", tray="ct01", gpu=0) == 345e6
    assert value(samples, "opsctl_gpu_power_limit_watts", tray="ct01", gpu=0) == 1200
    assert values(samples, "opsctl_gpu_all_xid_events_total") == [0] * 72
    assert values(samples, "opsctl_gpu_xid_events_total", xid=145) == []
    assert value(samples, "opsctl_gpu_fabric_state", tray="ct01", gpu=0, state="completed") == 1
    assert set(values(samples, "opsctl_exporter_up")) == {1} and set(values(samples, "opsctl_tray_gpus_visible")) == {4}
    # docs/fleet.md sizes a rack's series from this very scrape: its figures stay within 2% of it.
    import re

    served_all, served_ports = len(samples), sum(1 for (_, ls) in samples if "port" in dict(ls))
    said = re.search(r"serves ([\d,]+),\s+([\d,]+) of them per NVLink port", (REPO / "docs/fleet.md").read_text())
    assert said, "docs/fleet.md no longer says how many series a rack serves"
    said_all, said_ports = (int(n.replace(",", "")) for n in said.groups())
    assert abs(said_all - served_all) <= 0.02 * served_all, (said_all, served_all)
    assert abs(said_ports - served_ports) <= 0.02 * served_ports, (said_ports, served_ports)


@pytest.mark.slow
def test_xids_are_counted_per_code_with_the_last_time_seen(sim_exporter, hgx_topology):
    scenario = ("faults:\n"
                "  - {kind: xid, gpu: gpu2, xid: 48, at_s: 1.5, repeat_s: 1, count: 3}\n"
                "  - {kind: xid, gpu: gpu5, xid: 13, at_s: 1.5}\n"
                "  - {kind: xid, gpu: gpu5, xid: 201, at_s: 1.6}\n")
    served = sim_exporter(scenario, topology=hgx_topology)
    started = datetime.now().timestamp()
    samples = served.wait_for(lambda s: values(s, "opsctl_gpu_xid_events_total", gpu=2, xid=48) == [3]
                              and values(s, "opsctl_gpu_xid_events_total", gpu=5, xid=201) == [1])
    assert value(samples, "opsctl_gpu_xid_events_total", gpu=5, xid=13) == 1  # counted, though no alert
    assert values(samples, "opsctl_gpu_xid_events_total", gpu=0) == []  # no code logged: no per-code series
    assert value(samples, "opsctl_gpu_all_xid_events_total", gpu=0) == 0
    assert value(samples, "opsctl_gpu_all_xid_events_total", gpu=5) == 2 and value(samples, "opsctl_gpu_all_xid_events_total", gpu=2) == 3
    seen = value(samples, "opsctl_gpu_xid_last_seen_timestamp_seconds", gpu=2, xid=48)
    assert started < seen <= datetime.now().timestamp()
    assert values(samples, "opsctl_gpu_xid_last_seen_timestamp_seconds", gpu=0) == []


@pytest.mark.slow
def test_a_lost_gpu_shows_as_lost_and_the_others_keep_reporting(sim_exporter, hgx_topology):
    # Lost 8 s in: the exporter must have read all eight up first (its first reading comes at once,
    # but a busy machine can take seconds to start it), so that it knows gpu3's identity.
    served = sim_exporter("faults:\n  - {kind: gpu_lost, gpu: gpu3, start_s: 8}\n", topology=hgx_topology)
    served.wait_for(all_up(8))
    samples = served.wait_for(lambda s: values(s, "opsctl_gpu_status", gpu=3, status="lost") == [1])
    assert value(samples, "opsctl_gpu_up", gpu=3) == 0
    assert values(samples, "opsctl_gpu_up").count(1) == 7
    assert values(samples, "opsctl_gpu_temperature_celsius", gpu=3) == []  # no frozen old values
    assert len(values(samples, "opsctl_gpu_temperature_celsius")) == 7
    # It keeps its identity, and its fall (XID 79) is counted.
    uuid = dict(next(ls for (n, ls) in samples if n == "opsctl_gpu_info" and ("gpu", "3") in ls))["uuid"]
    assert uuid.startswith("GPU-")
    assert served.wait_for(lambda s: values(s, "opsctl_gpu_xid_events_total", gpu=3, xid=79) == [1])


@pytest.mark.slow
def test_a_hung_nvml_call_stalls_only_its_gpu(sim_exporter, hgx_topology):
    armed, release = threading.Event(), threading.Event()

    class HangingNvml(SimNvml):
        """GPU 2's temperature call hangs once armed, until released: what a sick GPU does."""

        def nvmlDeviceGetTemperatureV(self, handle, *args, **kwargs):
            if armed.is_set() and self.nvmlDeviceGetIndex(handle) == 2:
                release.wait()
            return super().nvmlDeviceGetTemperatureV(handle, *args, **kwargs)

    served = sim_exporter(topology=hgx_topology, interval=0.2, stale_after=1.0, nvml_class=HangingNvml)
    try:
        served.wait_for(all_up(8))
        armed.set()
        samples = served.wait_for(lambda s: values(s, "opsctl_gpu_status", gpu=2, status="stale") == [1])
        assert value(samples, "opsctl_gpu_up", gpu=2) == 0 and values(samples, "opsctl_gpu_up").count(1) == 7
        assert value(samples, "opsctl_gpu_reading_age_seconds", gpu=2) > 1.0
        assert max(v for v in values(samples, "opsctl_gpu_reading_age_seconds") if v <= 1.0) <= 1.0
        release.set()
        served.wait_for(all_up(8))
    finally:
        release.set()


@pytest.mark.slow
def test_parallel_scrapes_each_get_a_whole_document(sim_exporter, hgx_topology):
    # Readings change under the scrapes (every 0.3 s); a GPU turns stale only after 30 s.
    served = sim_exporter(topology=hgx_topology, interval=0.3, stale_after=30)
    served.wait_for(all_up(8))
    with ThreadPoolExecutor(max_workers=8) as pool:
        scrapes = list(pool.map(lambda _: served.samples(), range(16)))
    series = [frozenset(s) for s in scrapes]
    assert len(set(series)) == 1  # values move between scrapes; the series never do
    assert len(values(scrapes[0], "opsctl_nvlink_up")) == 8 * 18


@pytest.mark.slow
def test_what_nvml_does_not_support_is_absent_not_zero(sim_exporter, hgx_topology):
    scenario = ("faults:\n  - {kind: not_supported, gpu: ct03/gpu1, calls: [nvmlDeviceGetPowerUsage],"
                " fields: [NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER]}\n")
    samples = sim_exporter(scenario, trays=["ct03"]).wait_for(all_up(4))
    assert values(samples, "opsctl_gpu_power_watts", gpu=1) == [] and len(values(samples, "opsctl_gpu_power_watts")) == 3
    assert values(samples, "opsctl_nvlink_effective_bit_error_ratio", gpu=1) == []
    assert len(values(samples, "opsctl_nvlink_symbol_bit_error_ratio", gpu=1)) == 18
    assert values(samples, "opsctl_exporter_collect_errors_total") == [0] * 4  # not supported is no error
    # Blackwell: no data-link counters (NVML removed them there), so no such series — not zeros.
    for name in ("opsctl_nvlink_crc_errors_total", "opsctl_nvlink_replay_errors_total", "opsctl_nvlink_recovery_errors_total"):
        assert values(samples, name) == [], name
    assert len(values(samples, "opsctl_nvlink_receive_errors_total")) == 4 * 18
    # Hopper: no NVLink 5 fields, no fabric health bits; the simulated H100 reports no NVLink data ECC total.
    hopper = sim_exporter(topology=hgx_topology).wait_for(all_up(8))
    assert values(hopper, "opsctl_nvlink_effective_bit_error_ratio") == []
    assert values(hopper, "opsctl_nvlink_recoveries_failed_total") == []
    for name in ("opsctl_nvlink_receive_remote_errors_total", "opsctl_nvlink_receive_general_errors_total",
                 "opsctl_nvlink_recovery_events_total", "opsctl_nvlink_symbol_ber_exponent", "opsctl_nvlink_ecc_data_errors_total"):
        assert values(hopper, name) == [], name
    assert values(hopper, "opsctl_gpu_fabric_health_flag") == []
    assert len(values(hopper, "opsctl_nvlink_replay_errors_total")) == 8 * 18


@pytest.mark.slow
def test_the_rulebooks_readings_are_exported_nvlink5_counters_fabric_bits_and_the_recovery_action(sim_exporter):
    """Every counter, fabric bit and recovery action the rulebook judges has a series for the
    alerts (exporters/rules; tests/test_exporter_rules.py checks their thresholds)."""
    scenario = ("faults:\n  - {kind: xid, gpu: ct03/gpu2, xid: 154, at_s: 0.5, recovery_action: drain_and_reset}\n")
    served = sim_exporter(scenario, trays=["ct03"])
    samples = served.wait_for(lambda s: all_up(4)(s) and values(s, "opsctl_gpu_recovery_action", gpu=2, action="drain_and_reset") == [1])
    for name in ("opsctl_nvlink_symbol_errors_total", "opsctl_nvlink_receive_errors_total",
                 "opsctl_nvlink_malformed_packet_errors_total", "opsctl_nvlink_buffer_overrun_errors_total",
                 "opsctl_nvlink_local_link_integrity_errors_total", "opsctl_nvlink_effective_errors_total",
                 "opsctl_nvlink_recoveries_failed_total", "opsctl_nvlink_recoveries_successful_total",
                 "opsctl_nvlink_recovery_events_total", "opsctl_nvlink_receive_remote_errors_total",
                 "opsctl_nvlink_receive_general_errors_total", "opsctl_nvlink_symbol_ber_exponent"):
        assert len(values(samples, name)) == 4 * 18, name
    # A healthy link's symbol BER is 0; the GPU's NVLink data ECC total, one series per GPU, no port.
    assert set(values(samples, "opsctl_nvlink_symbol_bit_error_ratio")) == {0}
    assert values(samples, "opsctl_nvlink_ecc_data_errors_total") == [0] * 4
    assert all("port" not in dict(ls) for (n, ls) in samples if n == "opsctl_nvlink_ecc_data_errors_total")
    assert len(values(samples, "opsctl_gpu_fabric_health_flag", flag="incorrect_configuration")) == 4
    # One action per GPU is 1: the driver's ask; none where nothing was logged.
    for gpu in range(4):
        assert sum(values(samples, "opsctl_gpu_recovery_action", gpu=gpu)) == 1
    assert value(samples, "opsctl_gpu_recovery_action", gpu=0, action="none") == 1
    assert value(samples, "opsctl_gpu_recovery_action", gpu=2, action="none") == 0


def run_document(tray, finished, gpus):
    return {"format": "opsctl-probe/1", "kind": "run", "tray": tray, "started": finished, "finished": finished,
            "status": "complete", "gpus": gpus, "checks": []}


def burnin_gpu(index, tflops, verdicts, uuid=None):
    return {"index": index, "uuid": uuid, "gemm": {"bf16": {"tflops_median": tflops}, "fp8": {"tflops_median": 2 * tflops}},
            "membw": {"gbps": 6750.0}, "checks": [{"check": "gemm.bf16", "verdict": v} for v in verdicts]}


@pytest.mark.slow
def test_the_last_burn_in_of_each_gpu(sim_exporter, tmp_path):
    results = tmp_path / "runs"
    (results / "older").mkdir(parents=True)
    (results / "older" / "ct03.json").write_text(json.dumps(run_document("ct03", "2026-11-29T10:00:00Z", [
        burnin_gpu(0, 1500.0, ["fail"])])))
    (results / "ct03.json").write_text(json.dumps(run_document("ct03", "2026-11-30T10:00:00Z", [
        burnin_gpu(0, 1951.2, ["pass", "pass"]),
        burnin_gpu(1, 1900.0, ["pass", "fail", "warn"]),
        burnin_gpu(2, 1950.0, []),
        burnin_gpu(3, 1950.0, ["pass"], uuid="GPU-of-a-board-swapped-out-since"),
    ])))
    (results / "snapshot.json").write_text(json.dumps({"format": "opsctl-probe/1", "kind": "snapshot", "tray": "ct03"}))
    (results / "torn.json").write_text('{"format": "opsctl-probe/1", "kind": "run", "tray"')
    served = sim_exporter(trays=["ct03"], burnin=results)
    samples = served.wait_for(all_up(4))
    assert value(samples, "opsctl_gpu_burnin_gemm_operations_per_second", gpu=0, dtype="bf16") == pytest.approx(1951.2e12)
    assert value(samples, "opsctl_gpu_burnin_gemm_operations_per_second", gpu=0, dtype="fp8") == pytest.approx(3902.4e12)
    assert value(samples, "opsctl_gpu_burnin_memory_bytes_per_second", gpu=0) == pytest.approx(6.75e12)
    assert value(samples, "opsctl_gpu_burnin_timestamp_seconds", gpu=0) == datetime.fromisoformat("2026-11-30T10:00:00+00:00").timestamp()
    verdicts = {g: [v for v in ("pass", "warn", "fail", "incomplete")
                    if values(samples, "opsctl_gpu_burnin_verdict", gpu=g, verdict=v) == [1]] for g in range(4)}
    assert verdicts == {0: ["pass"], 1: ["fail"], 2: ["incomplete"], 3: []}  # nothing judged is no pass
    assert value(samples, "opsctl_exporter_burnin_result_errors_total") == 1  # the torn file; the snapshot is no error
    # A newer run replaces it without a restart.
    (results / "again.json").write_text(json.dumps(run_document("ct03", "2026-11-30T12:00:00Z", [burnin_gpu(0, 1960.0, ["warn"])])))
    samples = served.wait_for(lambda s: values(s, "opsctl_gpu_burnin_verdict", gpu=0, verdict="warn") == [1])
    assert values(samples, "opsctl_gpu_burnin_verdict", gpu=1) == []


def test_a_burn_in_path_that_does_not_exist_yet_is_said_once_and_read_when_it_comes(tmp_path, caplog):
    from exporters.burnin_results import BurninResults
    results = BurninResults(tmp_path / "runs")
    with caplog.at_level("WARNING", logger="opsctl.exporter"):
        results.refresh()
        results.refresh()
    assert [r.getMessage() for r in caplog.records] == [f"no burn-in results at {tmp_path / 'runs'} yet: its metrics appear once a run writes there"]
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "ct03.json").write_text(json.dumps(run_document("ct03", "2026-11-30T10:00:00Z", [burnin_gpu(0, 1950.0, ["pass"])])))
    results.refresh()
    assert results.for_tray("ct03").gpus[0].verdict == "pass"


def test_the_hosts_sxids_are_counted_per_switch_chip_fatal_and_non_fatal_since_the_driver_loaded():
    from exporters.tray_poller import TrayPoller

    poller = TrayPoller("hgx01", "node", None, nvswitch_chips=[f"hgx01/nvs{i}" for i in range(4)])
    load = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.161.08  Release Build"
    fatal = "nvidia-nvswitch2: SXid (PCI:0000:c4:00.0): 20034, Fatal, Link 28 LTSSM Fault Up"
    non_fatal = "nvidia-nvswitch1: SXid (PCI:0000:c3:00.0): 19084, Non-fatal, Link 29 AN1 Heartbeat Timeout Error"
    unstated = "nvidia-nvswitch3: SXid (PCI:0000:c5:00.0): 10002, Severity 5 Engine instance 00"
    poller._read_sxids(([fatal, load, non_fatal, non_fatal, unstated], None))  # the fatal one is before the reload
    assert poller.sample().nvswitch_sxids == {"hgx01/nvs0": (0, 0), "hgx01/nvs1": (0, 2), "hgx01/nvs2": (0, 0),
                                              "hgx01/nvs3": (1, 0)}  # unstated counts as fatal, as the check fails it
    poller._read_sxids(([], "dmesg: Operation not permitted"))  # an unreadable log keeps the last counts
    assert poller.sample().nvswitch_sxids["hgx01/nvs1"] == (0, 2)
    assert TrayPoller("rack07", "ct01", None).sample().nvswitch_sxids is None  # no NVSwitch on a GB200 compute tray
