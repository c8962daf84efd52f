"""The Grafana dashboard: up to date with its generator, well formed, with the rack and tray
variables, and every panel reading metrics the exporter really serves (or the recording rules)."""

import importlib.util
import json
import re

import yaml

import pytest

from exporters.alert_rules import rule_files
from tests.conftest import REPO

GRAFANA = REPO / "exporters" / "grafana"
PANEL_TYPES = {"stat", "table", "timeseries", "bargauge"}


def dashboard():
    return json.loads((GRAFANA / "opsctl-rack.json").read_text())


def expressions(board):
    return [target["expr"] for panel in board["panels"] for target in panel["targets"]]


def test_the_json_is_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location("make_dashboard", GRAFANA / "make_dashboard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (GRAFANA / "opsctl-rack.json").read_text() == module.render()


def test_panels_and_variables_are_well_formed():
    board = dashboard()
    assert board["uid"] == "opsctl-rack" and board["schemaVersion"] >= 36
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["rack"]["definition"] == "label_values(opsctl_gpu_info, rack)"
    assert '$rack' in variables["tray"]["definition"] and variables["tray"]["multi"] and variables["tray"]["includeAll"]
    ids, cells = set(), set()
    for panel in board["panels"]:
        assert panel["type"] in PANEL_TYPES and panel["id"] not in ids and panel["title"]
        ids.add(panel["id"])
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
        area = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])}
        assert not area & cells, f"{panel['title']} overlaps another panel"
        cells |= area
        assert panel["datasource"]["uid"] == "${datasource}" and panel["targets"]
        for target in panel["targets"]:
            assert target["refId"] and target["expr"]
            if "ALERTS" not in target["expr"]:
                assert 'rack="$rack"' in target["expr"] and 'tray=~"$tray"' in target["expr"], target["expr"]
    heatmap = next(p for p in board["panels"] if p["title"].startswith("NVLink health"))
    matrix = heatmap["transformations"][0]["options"]
    assert (matrix["rowField"], matrix["columnField"]) == ("tray_gpu", "port")
    columns = heatmap["transformations"][2]["options"]["indexByName"]
    assert [name for name, _ in sorted(columns.items(), key=lambda item: item[1])][1:] == [str(p) for p in range(18)]


@pytest.mark.slow
def test_every_metric_on_the_dashboard_is_served(sim_exporter, hgx_topology, tmp_path):
    run = {"format": "opsctl-probe/1", "kind": "run", "tray": "ct03", "finished": "2026-11-30T10:00:00Z",
           "gpus": [{"index": 0, "gemm": {"bf16": {"tflops_median": 1950.0}}, "checks": [{"verdict": "pass"}]}]}
    (tmp_path / "ct03.json").write_text(json.dumps(run))
    # An XID, since a code's counter is served once a GPU logged it.
    served = sim_exporter("seed: 2\nfaults:\n  - {kind: xid, gpu: ct03/gpu1, xid: 13, at_s: 0.5}\n", trays=["ct03"],
                          burnin=tmp_path)
    samples = served.wait_for(lambda s: sum(v for (name, _), v in s.items() if name == "opsctl_gpu_up") == 4
                              and any(name == "opsctl_gpu_burnin_timestamp_seconds" for name, _ in s)
                              and any(name == "opsctl_gpu_xid_events_total" for name, _ in s))
    # An HGX H100 too: the data-link counters' panels read what only NVLink 4 has (Blackwell has none).
    hgx = sim_exporter("seed: 2\n", topology=hgx_topology).wait_for(
        lambda s: sum(v for (name, _), v in s.items() if name == "opsctl_gpu_up") == 8)
    exposed = {name for name, _ in samples} | {name for name, _ in hgx}
    assert "opsctl_nvlink_crc_errors_total" not in {name for name, _ in samples}  # the GB200 tray has none
    recorded = {rule["record"] for path in rule_files() for group in yaml.safe_load(path.read_text())["groups"]
                for rule in group["rules"] if "record" in rule}
    used = {name for expr in expressions(dashboard()) for name in re.findall(r"\bopsctl[_:][a-z0-9_:]+", expr)}
    assert used and used - exposed - recorded == set()
    assert "opsctl:nvlink_fault_bits" in used and {"opsctl_gpu_temperature_celsius", "opsctl_gpu_power_watts",
                                                    "opsctl_gpu_xid_events_total", "opsctl_gpu_fabric_health"} <= used
