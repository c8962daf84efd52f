"""A real Prometheus (Debian's `prometheus`) scrapes `opsctl exporter` on loopback, with the
shipped alert rules: faults injected into the simulator show in PromQL and raise their alerts."""

import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from opsctl.rack_models import model_named
from opsctl.topology import build_topology
from tests.conftest import REPO
from tests.test_exporter_dashboard import dashboard, expressions

pytestmark = pytest.mark.slow  # simulated runs or real processes: seconds a test

INVENTORY = """
all:
  children:
    lab01:
      vars:
        opsctl_model: hgx-h100
        opsctl_transport: local
        opsctl_backend: sim
        opsctl_scenario: lab01.yaml
      hosts:
        lab01-node:
"""
SCENARIO = """
scenario: lab01-faults
seed: 3
faults:
  - {kind: link_down, link: gpu3/nvl02, start_s: 2}   # logs XID 74 on gpu3 as it drops
  - {kind: ecc, gpu: gpu5, uncorrected: 1}
"""
PROMETHEUS_CONFIG = """
global: {{scrape_interval: 1s, evaluation_interval: 1s}}
rule_files: ["{rules}/*.yml"]
scrape_configs:
  - job_name: opsctl
    static_configs: [{{targets: ["127.0.0.1:{port}"]}}]
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_exporter(tmp_path):
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    (tmp_path / "lab01.yaml").write_text(SCENARIO)
    process = subprocess.Popen(
        [sys.executable, "-m", "opsctl", "--inventory", tmp_path / "inventory.yaml", "exporter", "--rack", "lab01",
         "--listen", "127.0.0.1", "--port", "0", "--interval", "0.5", "--stale-after", "30", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    text = ""
    for line in process.stdout:  # the start document, then it serves until stopped
        text += line
        if line.rstrip() == "}":
            return process, json.loads(text)
    raise AssertionError(f"the exporter did not start: {process.wait()} {process.stderr.read()}")


def start_prometheus(tmp_path, exporter_port):
    config = tmp_path / "prometheus.yml"
    config.write_text(PROMETHEUS_CONFIG.format(rules=REPO / "exporters" / "rules", port=exporter_port))
    port = free_port()
    log = open(tmp_path / "prometheus.log", "w")
    process = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    return process, f"http://127.0.0.1:{port}"


def api(base, path, **params):
    url = f"{base}/api/v1/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())["data"]


def eventually(check, timeout=60.0):
    """check()'s first true result; check gets the Prometheus alerts seen last, for the failure message."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
        except OSError:  # Prometheus still starting
            result = None
        if result:
            return result
        assert time.monotonic() < deadline, f"Prometheus never showed what the test waits for ({check.__name__})"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """The exporter and a Prometheus scraping it; both stopped at the end."""
    tmp_path = tmp_path_factory.mktemp("prometheus")
    exporter, started = start_exporter(tmp_path)
    prometheus, base = start_prometheus(tmp_path, started["port"])
    try:
        # Serving before any test asks: each test must hold on its own, in whatever order it runs.
        eventually(lambda: api(base, "status/buildinfo"))
        yield base
    finally:
        for process in (prometheus, exporter):
            process.terminate()
        exporter.wait(timeout=30)
        prometheus.wait(timeout=30)
        assert exporter.returncode == 0, exporter.stderr.read()


def test_injected_faults_reach_promql_and_raise_their_alerts(scraped):
    down = eventually(lambda: api(scraped, "query", query='opsctl_nvlink_up{job="opsctl"} == 0')["result"])
    assert [(s["metric"]["gpu"], s["metric"]["port"]) for s in down] == [("3", "2")]
    expected_switch = build_topology("lab01", model_named("hgx-h100")).link_for("lab01/gpu3", 2).switch
    assert down[0]["metric"]["switch"] == expected_switch and down[0]["metric"]["tray"] == "node"

    xids = eventually(lambda: api(scraped, "query", query="opsctl_gpu_xid_events_total > 0")["result"])
    assert [(s["metric"]["gpu"], s["metric"]["xid"], s["value"][1]) for s in xids] == [("3", "74", "1")]

    # The ECC fault also leaves a row remap pending (for: 5m, so pending here).
    # The ECC fault's XID came before the exporter started: the GPU also arrives with it recorded.
    # The link's drop leaves its NVLink 4 recovery total above 0, which DCGM fails as it stands.
    wanted = {("OpsctlNvlinkDown", "3"), ("OpsctlXidNvlink", "3"), ("OpsctlGpuUncorrectableEcc", "5"),
              ("OpsctlGpuRowRemapPending", "5"), ("OpsctlXidRecorded", "5"), ("OpsctlNvlinkErrorsSinceDriverLoad", "3")}

    def raised():
        alerts = api(scraped, "alerts")["alerts"]
        found = {(a["labels"]["alertname"], a["labels"].get("gpu")) for a in alerts if a["state"] in ("pending", "firing")}
        raised.last = found
        return alerts if wanted <= found else None

    raised.last = None
    try:
        alerts = eventually(raised)
    except AssertionError as error:
        raise AssertionError(f"{error}; raised: {raised.last}") from None
    # Nothing else: the other GPUs and links are healthy, and the exporter is up.
    assert {(a["labels"]["alertname"], a["labels"].get("gpu")) for a in alerts} == wanted
    for alert in alerts:
        assert alert["annotations"]["runbook_url"].startswith("runbooks/") and alert["annotations"]["source"]
    link = next(a for a in alerts if a["labels"]["alertname"] == "OpsctlNvlinkDown")
    assert link["labels"]["port"] == "2" and link["labels"]["severity"] == "critical"


def test_the_dashboards_queries_run_and_the_heatmap_has_every_link(scraped):
    def as_grafana_sends(expr):
        return expr.replace("$rack", "lab01").replace("$tray", ".*").replace("$__rate_interval", "1m")

    for expr in expressions(dashboard()):
        api(scraped, "query", query=as_grafana_sends(expr))  # HTTP 400 on a query Prometheus cannot parse
    heatmap = next(e for e in expressions(dashboard()) if "opsctl:nvlink_fault_bits" in e)
    cells = eventually(lambda: api(scraped, "query", query=as_grafana_sends(heatmap))["result"])
    assert len(cells) == 8 * 18  # every link of the 8 GPUs, healthy ones included
    by_cell = {(c["metric"]["tray_gpu"], c["metric"]["port"]): float(c["value"][1]) for c in cells}
    assert by_cell[("node/gpu3", "2")] >= 4  # the link that is down
    assert {v for cell, v in by_cell.items() if cell[0] != "node/gpu3"} == {0.0}
