"""The example Alertmanager configuration, on a real Alertmanager: one bad NVL72 link pages once,
not once per GPU of the domain."""

import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.conftest import free_port

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "exporters" / "alertmanager.yml"
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")

pytestmark = pytest.mark.skipif(ALERTMANAGER is None, reason="Debian's prometheus-alertmanager is not installed (scripts/test installs it)")


def test_amtool_accepts_the_config():
    result = subprocess.run(["amtool", "check-config", str(CONFIG)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_the_inhibit_rules_name_exists():
    names = {rule["alert"] for path in (REPO / "exporters" / "rules").glob("*.yml")
             for group in yaml.safe_load(path.read_text())["groups"] for rule in group["rules"] if "alert" in rule}
    config = yaml.safe_load(CONFIG.read_text())
    for rule in config["inhibit_rules"]:
        for matcher in rule["source_matchers"] + rule["target_matchers"]:
            pattern = matcher.split("=", 1)[1].lstrip("~").strip('"')
            for name in pattern.split("|"):
                if not name.endswith(".*"):
                    assert name in names, f"{name} is in no rule file"


def _post(url, alerts):
    request = urllib.request.Request(url, data=json.dumps(alerts).encode(), headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()


def test_a_flapping_link_inhibits_its_own_gpus_nvlink_xid_and_no_other(tmp_path):
    port = free_port()
    process = subprocess.Popen(
        [ALERTMANAGER, f"--config.file={CONFIG}", f"--storage.path={tmp_path}", f"--web.listen-address=127.0.0.1:{port}",
         "--cluster.listen-address=", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}/api/v2"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/status", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        alert = lambda name, **labels: {"labels": {"alertname": name, "severity": "critical", **labels}}  # noqa: E731
        _post(f"{base}/alerts", [
            alert("OpsctlNvlinkFlapping", rack="rack07", tray="ct07", gpu="0", port="13"),
            alert("OpsctlXidNvlinkLinkDown", rack="rack07", tray="ct07", gpu="0", xid="149"),
            alert("OpsctlXidNvlink5", rack="rack07", tray="ct15", gpu="0", xid="145"),
            alert("OpsctlXidNvlink5", rack="rack08", tray="ct01", gpu="1", xid="145"),
            # The flapping link's failed recoveries since the driver loaded, and another link's.
            alert("OpsctlNvlinkRecoveryFailedSinceDriverLoad", rack="rack07", tray="ct07", gpu="0", port="13"),
            alert("OpsctlNvlinkRecoveryFailedSinceDriverLoad", rack="rack07", tray="ct07", gpu="0", port="12"),
            # The flapping link's recovery events (the failed recoveries again), and those of a link
            # whose GPU gives no split of them.
            alert("OpsctlNvlinkRecoveryEvents", rack="rack07", tray="ct07", gpu="0", port="13"),
            alert("OpsctlNvlinkRecoveryEvents", rack="rack07", tray="ct07", gpu="0", port="11"),
        ])
        deadline = time.time() + 20
        while True:
            alerts = json.loads(urllib.request.urlopen(f"{base}/alerts", timeout=5).read())
            state = {(a["labels"]["alertname"], a["labels"]["rack"], a["labels"]["tray"], a["labels"].get("port")): a["status"]
                     for a in alerts}
            inhibited = {key for key, status in state.items() if status["inhibitedBy"]}
            if len(state) == 8 and len(inhibited) == 3 or time.time() > deadline:
                break
            time.sleep(0.2)
        # The flapping link's own GPU's XID 149 is explained by the link; an NVLink XID on another
        # GPU of the same rack is that GPU's own (no documented echo), and pages.
        # Its totals since the driver loaded are the same link's (paged once); another link's page.
        assert inhibited == {("OpsctlXidNvlinkLinkDown", "rack07", "ct07", None),
                             ("OpsctlNvlinkRecoveryFailedSinceDriverLoad", "rack07", "ct07", "13"),
                             ("OpsctlNvlinkRecoveryEvents", "rack07", "ct07", "13")}
        assert state[("OpsctlNvlinkRecoveryEvents", "rack07", "ct07", "11")]["state"] == "active"
        assert state[("OpsctlXidNvlink5", "rack07", "ct15", None)]["state"] == "active"
        assert state[("OpsctlXidNvlink5", "rack08", "ct01", None)]["state"] == "active"
        assert state[("OpsctlNvlinkFlapping", "rack07", "ct07", "13")]["state"] == "active"
        assert state[("OpsctlNvlinkRecoveryFailedSinceDriverLoad", "rack07", "ct07", "12")]["state"] == "active"
    finally:
        process.terminate()
        process.wait(timeout=10)
