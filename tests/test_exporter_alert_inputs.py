"""Every alert of the shipped rules is fed by the collector: a real Prometheus scrapes the exporter
over simulated trays with one GPU (or link) in each alert's state, and each alert rises for that
GPU. The rules' own promtool tests (tests/test_exporter_rules.py) run on synthetic series; a
family the collector stopped emitting, or a label it renamed, leaves its alert silent here only.

Two trays of each kind: an HGX H100 (NVLink 4) and two GB200 compute trays of rack07 (NVLink 5,
fabric registration); GB200 ct02 carries no fault and must raise nothing.
"""

import pytest
import yaml

from tests.conftest import REPO
from tests.test_exporter_prometheus import api, eventually, free_port

pytestmark = pytest.mark.slow  # a Prometheus and two exporters (a third target nobody serves) for ~30 s

# The simulator starts AT_S seconds before the exporters: faults before it are what the GPUs
# arrive with (recorded XIDs, running totals), faults after it happen while the exporter watches.
AT_S = 20
LATER = AT_S + 2

HGX_FAULTS = f"""
faults:
  - {{kind: ecc, gpu: gpu0, uncorrected: 1, corrected_per_s: 2, start_s: {LATER}}}  # XID 48, remap pending
  - {{kind: row_remap, gpu: gpu1, failure: true, start_s: {LATER}}}                  # XID 64
  - {{kind: thermal_throttle, gpu: gpu2}}
  - {{kind: power_brake, gpu: gpu3}}
  - {{kind: gpu_lost, gpu: gpu4, start_s: {LATER + 4}}}                              # XID 79, after its first reading
  - {{kind: link_down, link: gpu5/nvl02, start_s: {LATER}}}                          # XID 74
  - {{kind: link_errors, gpu: gpu5, port: 3, crc_per_s: 50000, replay_per_s: 5, recovery_per_s: 1, start_s: {LATER}}}
  - {{kind: xid, gpu: gpu6, xid: 62, at_s: {LATER}}}
  - {{kind: xid, gpu: gpu6, xid: 43, at_s: {LATER}}}
  - {{kind: xid, gpu: gpu6, xid: 63, at_s: {LATER}}}
  - {{kind: xid, gpu: gpu6, xid: 119, at_s: {LATER}}}
  - {{kind: xid, gpu: gpu6, xid: 136, at_s: {LATER}}}
  - {{kind: xid, gpu: gpu6, xid: 201, at_s: {LATER}}}
  - {{kind: xid, gpu: gpu6, xid: 95, at_s: 1}}                                       # before the exporter: recorded
  - {{kind: volatile_dbe, gpu: gpu6}}
  - {{kind: link_totals, gpu: gpu6, port: 1, crc: 10}}
  - {{kind: gpu_hang, gpu: gpu7, start_s: {LATER}}}
  - {{kind: sxid, part: nvs2, sxid: 20034, fatal: true, at_s: 1}}                   # in the host's kernel log before the exporter
  - {{kind: sxid, part: nvs1, sxid: 19084, fatal: false, at_s: 1}}
"""
GB200_FAULTS = f"""
faults:
  - {{kind: link_flap, link: ct01/gpu0/nvl01, period_s: 3, down_s: 1, start_s: {LATER}}}
  - {{kind: link_errors, gpu: ct01/gpu0, port: 2, recovery_successful_per_s: 1, symbol_per_s: 50, ber: 1.0e-10, start_s: {LATER}}}
  - {{kind: link_totals, gpu: ct01/gpu0, port: 4, recovery_failed: 3, recovery_successful: 3}}
  - {{kind: fabric_degraded, gpu: ct01/gpu1}}
  - {{kind: link_errors, gpu: ct01/gpu1, port: 5, ecc_data_errors_per_s: 1, rcv_remote_errors_per_s: 1, start_s: {LATER}}}
  - {{kind: xid, gpu: ct01/gpu1, xid: 145, at_s: {LATER}}}
  - {{kind: xid, gpu: ct01/gpu1, xid: 147, at_s: {LATER}}}
  - {{kind: xid, gpu: ct01/gpu1, xid: 149, at_s: {LATER}}}
  - {{kind: fabric_degraded, gpu: ct01/gpu2, state: in_progress, degraded_bw: false}}
  - {{kind: xid, gpu: ct01/gpu2, xid: 154, at_s: {LATER}, recovery_action: drain_p2p}}
  - {{kind: xid, gpu: ct01/gpu3, xid: 154, at_s: {LATER}, recovery_action: node_reboot}}
  - {{kind: memory_unrepairable, gpu: ct01/gpu3}}
  - {{kind: inforom_invalid, gpu: ct01/gpu3}}
  - {{kind: power_unreadable, gpu: ct01/gpu3}}
"""
# CRC errors alert on their rate over 5 minutes, which Prometheus takes over the whole range: a
# series seconds old needs a rate far past the 100/s limit to average above it.
# alert -> the (tray, gpu) it must rise for; None for a tray's or the exporter's alert.
EXPECTED = {
    "OpsctlExporterDown": None,  # a third target nobody serves
    "OpsctlGpuUncorrectableEcc": [("node", "0"), ("node", "6")],
    "OpsctlGpuRowRemapPending": [("node", "0")],
    "OpsctlGpuCorrectedEcc": [("node", "0")],
    "OpsctlGpuRowRemapFailed": [("node", "1")],
    "OpsctlGpuThermalSlowdown": [("node", "2")],
    "OpsctlGpuPowerBrakeSlowdown": [("node", "3")],
    "OpsctlGpuLost": [("node", "4")],
    "OpsctlGpuHung": [("node", "7")],
    "OpsctlNvlinkDown": [("node", "5")],
    "OpsctlNvlinkCrcErrors": [("node", "5")],
    "OpsctlNvlinkReplayErrors": [("node", "5")],
    "OpsctlNvlinkRecoveryErrors": [("node", "5")],
    "OpsctlXidMemoryCritical": [("node", "0"), ("node", "1")],
    "OpsctlXidFellOffBus": [("node", "4")],
    "OpsctlXidNvlink": [("node", "5")],
    "OpsctlXidGpuCritical": [("node", "6")],
    "OpsctlXidGpuWarning": [("node", "6")],
    "OpsctlXidMemoryWarning": [("node", "6")],
    "OpsctlXidGsp": [("node", "6")],
    "OpsctlXidLinkTraining": [("node", "6")],
    "OpsctlXidUnlisted": [("node", "6")],
    "OpsctlXidRecorded": [("node", "6")],
    "OpsctlNvlinkErrorsSinceDriverLoad": [("node", "6")],
    "OpsctlNvswitchFatalSxid": ["hgx01/nvs2"],  # a switch chip's alert: where is its switch label
    "OpsctlNvswitchNonFatalSxid": ["hgx01/nvs1"],
    "OpsctlNvlinkFlapping": [("ct01", "0")],
    "OpsctlNvlinkRecovered": [("ct01", "0")],
    "OpsctlNvlinkRecoveryEvents": [("ct01", "0")],
    "OpsctlNvlink5Errors": [("ct01", "0"), ("ct01", "1")],
    "OpsctlNvlinkHighBer": [("ct01", "0")],
    "OpsctlNvlinkSymbolBer": [("ct01", "0")],  # 50 symbol errors a second: 1e-10, exponent 10
    "OpsctlNvlinkEccDataErrors": [("ct01", "1")],
    "OpsctlNvlinkRecoveryFailedSinceDriverLoad": [("ct01", "0")],
    "OpsctlNvlinkRecoveredSinceDriverLoad": [("ct01", "0")],
    "OpsctlGpuFabricDegraded": [("ct01", "1")],
    "OpsctlXidNvlink5": [("ct01", "1")],
    "OpsctlXidNvlink5Warning": [("ct01", "1")],
    "OpsctlXidNvlinkLinkDown": [("ct01", "1")],
    "OpsctlGpuFabricLimited": [("ct01", "2")],
    "OpsctlGpuRecoveryActionDrain": [("ct01", "2")],
    "OpsctlXidRecoveryAction": [("ct01", "2"), ("ct01", "3")],
    "OpsctlGpuRecoveryAction": [("ct01", "3")],
    "OpsctlGpuMemoryUnrepairable": [("ct01", "3")],
    "OpsctlGpuInforomInvalid": [("ct01", "3")],
    "OpsctlGpuPowerUnreadable": [("ct01", "3")],
}
# Alerts no simulated GPU can raise, each with why; their input is checked as far as it can be.
CANNOT_RAISE = {
    # A hung GPU is published hung at the reader's deadline (OpsctlGpuHung); only a stuck reader
    # lets a reading age past a minute. Its input is checked to be there for every GPU read.
    "OpsctlExporterStale": "only a stuck reader thread raises it",
    # Hopper and Blackwell remap rows and answer NOT_SUPPORTED to the retired-pages calls.
    "OpsctlGpuRetiredPages": "no GPU model opsctl knows retires pages",
    "OpsctlGpuRetirementPending": "no GPU model opsctl knows retires pages",
    # Every simulated GPU enumerates; a GPU gone from the bus before the driver loaded does not.
    "OpsctlGpuMissing": "the simulator cannot hide a GPU from enumeration",
}
PROMETHEUS_CONFIG = """
global: {{scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 1s}}
rule_files: ["{rules}/*.yml"]
scrape_configs:
  - job_name: opsctl
    static_configs: [{{targets: {targets}}}]
"""


def shipped_alerts():
    names = set()
    for path in sorted((REPO / "exporters" / "rules").glob("*.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            names |= {rule["alert"] for rule in group["rules"] if "alert" in rule}
    return names


def test_every_shipped_alert_is_expected_here_or_said_why_not():
    assert set(EXPECTED).isdisjoint(CANNOT_RAISE)
    assert shipped_alerts() == set(EXPECTED) | set(CANNOT_RAISE)


def test_every_alert_rises_for_its_gpu_from_what_the_collector_emits(sim_exporter, hgx_topology, tmp_path):
    import subprocess

    hgx = sim_exporter(HGX_FAULTS, topology=hgx_topology, at_s=AT_S, interval=2)
    gb200 = sim_exporter(GB200_FAULTS, trays=["ct01", "ct02"], at_s=AT_S, interval=2)
    targets = [served.url.split("/")[2] for served in (hgx, gb200)] + [f"127.0.0.1:{free_port()}"]
    config = tmp_path / "prometheus.yml"
    config.write_text(PROMETHEUS_CONFIG.format(rules=REPO / "exporters" / "rules", targets=targets))
    port = free_port()
    with open(tmp_path / "prometheus.log", "w") as log:
        prometheus = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        def raised():
            found = {}
            for alert in api(base, "alerts")["alerts"]:
                labels = alert["labels"]
                where = (labels["tray"], labels["gpu"]) if "gpu" in labels else labels.get("switch")
                found.setdefault(labels["alertname"], set()).add(where)
            raised.last = found
            return all(name in found and (want is None or set(want) <= found[name]) for name, want in EXPECTED.items())

        raised.last = {}
        try:
            eventually(raised, timeout=90)
        except AssertionError as error:
            missing = {name: want for name, want in EXPECTED.items()
                       if name not in raised.last or (want is not None and not set(want) <= raised.last[name])}
            raise AssertionError(f"{error}; not raised: {missing}") from None
        # The healthy GB200 tray raises nothing, and no alert rises where none was placed.
        found = raised.last
        assert not any(where and where[0] == "ct02" for wheres in found.values() for where in wheres), found
        assert set(found) <= set(EXPECTED) | set(CANNOT_RAISE), set(found) - set(EXPECTED)

        # OpsctlExporterStale's input: every GPU publishes the age of its latest reading.
        ages = api(base, "query", query="opsctl_gpu_reading_age_seconds")["result"]
        assert {(a["metric"]["tray"], a["metric"]["gpu"]) for a in ages} == \
            {("node", str(gpu)) for gpu in range(8)} | {(tray, str(gpu)) for tray in ("ct01", "ct02") for gpu in range(4)}
    finally:
        prometheus.terminate()
        prometheus.wait(timeout=30)
