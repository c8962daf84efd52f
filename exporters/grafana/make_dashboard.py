"""Writes the Grafana dashboard exporters/grafana/opsctl-rack.json (run it after editing this
file: `python exporters/grafana/make_dashboard.py`; a test checks the JSON is up to date).

Generated rather than hand-written because the NVLink heatmap needs its 18 port columns listed
in order, and every query needs the same rack and tray selectors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent / "opsctl-rack.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
PORTS = 18
SEL = 'rack="$rack", tray=~"$tray"'  # every panel shows the chosen rack and trays
# The NVLink 5 error counters DCGM's MonitorNVLink5Fields fails a link on any increase of.
NVLINK5_ERRORS = ("symbol", "receive", "receive_remote", "receive_general", "malformed_packet", "buffer_overrun",
                  "local_link_integrity", "effective")


def nvlink5_error_rate() -> str:
    """Each link's NVLink 5 errors a second, all counters together (each kept apart by a label until summed)."""
    rates = " or ".join(f'label_replace(rate(opsctl_nvlink_{name}_errors_total{{{SEL}}}[$__rate_interval]), "counter", "{name}", "", "")'
                        for name in NVLINK5_ERRORS)
    return f"sum by (tray, gpu, port) ({rates})"


def xid_events_by_code() -> str:
    """XID events per code in each interval. A code's counter is born at its first event (the
    exporter publishes no zeros), and increase() sees nothing of a series' first sample: a series
    that was not there an interval ago counts its whole value (docs/alerting.md, Querying XIDs)."""
    xids = f"opsctl_gpu_xid_events_total{{{SEL}}}"
    return (f"sum by (xid) ((increase({xids}[$__rate_interval]) and {xids} offset $__rate_interval)"
            f" or ({xids} unless {xids} offset $__rate_interval)) > 0")


class Panels:
    def __init__(self) -> None:
        self.panels: list[dict[str, Any]] = []

    def add(self, kind: str, title: str, targets: list[dict[str, Any]], x: int, y: int, w: int, h: int,
            description: str = "", unit: str | None = None, **extra: Any) -> None:
        field_defaults = {**({"unit": unit} if unit else {}), **extra.pop("defaults", {})}
        panel = {
            "id": len(self.panels) + 1, "type": kind, "title": title, "description": description,
            "datasource": DATASOURCE, "gridPos": {"x": x, "y": y, "w": w, "h": h},
            "targets": [{"refId": chr(ord("A") + i), "datasource": DATASOURCE, **t} for i, t in enumerate(targets)],
            "fieldConfig": {"defaults": field_defaults, "overrides": []},
            **extra,
        }
        self.panels.append(panel)


def query(expr: str, legend: str | None = None, instant: bool = False, table: bool = False) -> dict[str, Any]:
    target: dict[str, Any] = {"expr": expr, "range": not instant, "instant": instant}
    if legend:
        target["legendFormat"] = legend
    if table:
        target["format"] = "table"
    return target


def red_when(threshold: float) -> dict[str, Any]:
    return {"thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}, {"color": "red", "value": threshold}]}}


def link_heatmap() -> dict[str, Any]:
    """The rack's 72 GPUs × 18 ports, each cell the link's fault bits (exporters/rules/recording.yml)."""
    corner = "tray_gpu\\port"
    mappings = [
        {"type": "value", "options": {"0": {"text": "ok", "color": "green", "index": 0}}},
        {"type": "value", "options": {"1": {"text": "errors", "color": "yellow", "index": 1}}},
        {"type": "range", "options": {"from": 2, "to": 3, "result": {"text": "BER", "color": "orange", "index": 2}}},
        {"type": "range", "options": {"from": 4, "to": 7, "result": {"text": "down", "color": "red", "index": 3}}},
    ]
    return {
        "targets": [query(f'label_join(opsctl:nvlink_fault_bits{{{SEL}}}, "tray_gpu", "/gpu", "tray", "gpu")',
                          instant=True, table=True)],
        "transformations": [
            {"id": "groupingToMatrix", "options": {"columnField": "port", "rowField": "tray_gpu", "valueField": "Value"}},
            {"id": "sortBy", "options": {"sort": [{"field": corner, "desc": False}]}},
            {"id": "organize", "options": {
                "indexByName": {corner: 0, **{str(p): p + 1 for p in range(PORTS)}},
                "renameByName": {corner: "GPU \\ port"}, "excludeByName": {}}},
        ],
        "defaults": {"mappings": mappings, "custom": {"align": "center", "cellOptions": {"type": "color-background"}},
                     **red_when(4)},
        "options": {"showHeader": True, "cellHeight": "sm", "footer": {"show": False}},
    }


def dashboard() -> dict[str, Any]:
    p = Panels()
    # Top row: the rack at a glance.
    p.add("stat", "GPUs up", [query(f"sum(opsctl_gpu_up{{{SEL}}})", instant=True)], 0, 0, 4, 4,
          "GPUs read within the staleness limit and not lost.")
    p.add("stat", "GPUs lost or stale", [query(f'count(opsctl_gpu_status{{{SEL}, status=~"lost|stale"}} == 1) or vector(0)', instant=True)],
          4, 0, 4, 4, "Lost: NVML says GPU is lost. Stale: its NVML calls hang.", defaults=red_when(1))
    p.add("stat", "NVLink links down", [query(f"count(opsctl_nvlink_up{{{SEL}}} == 0) or vector(0)", instant=True)],
          8, 0, 4, 4, "Inactive links (NVIDIA expects 18 active per GB200 GPU).", defaults=red_when(1))
    p.add("stat", "Links with BER > 1e-12", [query(f"count(opsctl_nvlink_effective_bit_error_ratio{{{SEL}}} > 1e-12) or vector(0)", instant=True)],
          12, 0, 4, 4, "Effective BER above 1e-12 fails a link (DCGM health rule: NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp).", defaults=red_when(1))
    p.add("stat", "Alerts firing", [query('count(ALERTS{alertstate="firing", rack="$rack"}) or vector(0)', instant=True)],
          16, 0, 4, 4, "opsctl alerts firing for this rack.", defaults=red_when(1))
    p.add("stat", "Oldest reading", [query(f"max(opsctl_gpu_reading_age_seconds{{{SEL}}})", instant=True)],
          20, 0, 4, 4, "Age of the oldest GPU reading; above 60 s the exporter's NVML calls hang.", unit="s", defaults=red_when(60))
    # The heatmap.
    heat = link_heatmap()
    p.add("table", "NVLink health: GPUs × ports", heat["targets"], 0, 4, 24, 24,
          "Each cell is one link: ok, errors (in 5 min: replays or recoveries on NVLink 4; NVLink 5 errors or a link recovery, "
          "successful or failed), "
          "BER (effective BER above 1e-12), down. "
          "From the recording rule opsctl:nvlink_fault_bits.",
          defaults=heat["defaults"], transformations=heat["transformations"], options=heat["options"])
    # Per tray.
    p.add("timeseries", "Temperature per tray (hottest GPU)", [query(f"max by (tray) (opsctl_gpu_temperature_celsius{{{SEL}}})", "{{tray}}")],
          0, 28, 12, 8, unit="celsius")
    p.add("timeseries", "Power per tray", [query(f"sum by (tray) (opsctl_gpu_power_watts{{{SEL}}})", "{{tray}}")],
          12, 28, 12, 8, unit="watt")
    p.add("timeseries", "XIDs over time", [query(xid_events_by_code(), "XID {{xid}}")],
          0, 36, 12, 8, "XID events by code; what each asks for is in NVIDIA's XID catalog (docs/sources.md). "
          "A code's counter appears with a GPU's first event of it: a series new in the interval counts whole.",
          defaults={"custom": {"drawStyle": "bars", "fillOpacity": 80, "stacking": {"mode": "normal"}}})
    p.add("bargauge", "Fabric health (GPUs)", [query(f"count by (health) (opsctl_gpu_fabric_health{{{SEL}}} == 1)", "{{health}}", instant=True),
                                               query(f"count by (state) (opsctl_gpu_fabric_state{{{SEL}}} == 1)", "state {{state}}", instant=True)],
          12, 36, 6, 8, "NVLink fabric health summary and registration state per GPU.")
    p.add("bargauge", "Clock slowdown reasons (GPUs)", [query(f"count by (reason) (opsctl_gpu_clocks_event_reason{{{SEL}, reason!=\"gpu_idle\"}} == 1)", "{{reason}}", instant=True)],
          18, 36, 6, 8, "GPUs whose clocks are held down now, by reason.")
    # Each NVLink generation's own error counters: Blackwell has no data-link replay, recovery or CRC counter.
    p.add("timeseries", "NVLink 4 replays and recoveries (top 10 links)",
          [query(f"topk(10, rate(opsctl_nvlink_replay_errors_total{{{SEL}}}[$__rate_interval]) + rate(opsctl_nvlink_recovery_errors_total{{{SEL}}}[$__rate_interval]))",
                 "{{tray}}/gpu{{gpu}} port {{port}}")], 0, 44, 8, 8, "Data-link replays and recoveries (Hopper): DCGM fails a link on any.", unit="ops")
    p.add("timeseries", "NVLink 4 CRC errors (top 10 links)",
          [query(f"topk(10, rate(opsctl_nvlink_crc_errors_total{{{SEL}}}[$__rate_interval]))", "{{tray}}/gpu{{gpu}} port {{port}}")],
          8, 44, 8, 8, "Data-link CRC errors (Hopper): DCGM fails a link at 100 a second.", unit="ops")
    p.add("timeseries", "NVLink 5 errors (top 10 links)",
          [query(f"topk(10, {nvlink5_error_rate()})", "{{tray}}/gpu{{gpu}} port {{port}}")],
          16, 44, 8, 8, "Symbol, receive, receive remote, receive general, malformed-packet, buffer-overrun, local-link-integrity "
          "and effective errors together (Blackwell): DCGM fails a link on any.", unit="ops")
    # The last burn-in and the exporter itself.
    p.add("bargauge", "Last burn-in: bf16 GEMM TFLOPS", [query(f'opsctl_gpu_burnin_gemm_operations_per_second{{{SEL}, dtype="bf16"}} / 1e12', "{{tray}}/gpu{{gpu}}", instant=True)],
          0, 52, 12, 10, "Median GEMM throughput of each GPU's last burn-in (the tray probe's run document).")
    p.add("bargauge", "Last burn-in: verdicts (GPUs)", [query(f"count by (verdict) (opsctl_gpu_burnin_verdict{{{SEL}}} == 1)", "{{verdict}}", instant=True)],
          12, 52, 6, 10)
    p.add("timeseries", "Exporter: reading age and read time", [
        query(f"max by (tray) (opsctl_gpu_reading_age_seconds{{{SEL}}})", "age {{tray}}"),
        query(f"max by (tray) (opsctl_exporter_collect_duration_seconds{{{SEL}}})", "read {{tray}}"),
        query(f"sum by (tray) (increase(opsctl_exporter_collect_errors_total{{{SEL}}}[$__rate_interval]))", "errors {{tray}}")],
          18, 52, 6, 10, unit="s")
    return {
        "uid": "opsctl-rack",
        "title": "opsctl: GPU rack",
        "description": "One rack from the opsctl exporter: NVLink heatmap, temperatures and power per tray, XIDs, fabric, burn-in.",
        "tags": ["opsctl", "gpu", "nvlink"],
        "editable": True,
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "timezone": "",
        "annotations": {"list": [{"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True,
                                  "hide": True, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard"}]},
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus", "hide": 0},
            {"name": "rack", "label": "rack", "type": "query", "datasource": DATASOURCE, "refresh": 1, "sort": 1,
             "definition": "label_values(opsctl_gpu_info, rack)",
             "query": {"qryType": 1, "query": "label_values(opsctl_gpu_info, rack)", "refId": "rack"}},
            {"name": "tray", "label": "tray", "type": "query", "datasource": DATASOURCE, "refresh": 1, "sort": 1,
             "multi": True, "includeAll": True, "allValue": ".*",
             "current": {"text": ["All"], "value": ["$__all"]},
             "definition": 'label_values(opsctl_gpu_info{rack="$rack"}, tray)',
             "query": {"qryType": 1, "query": 'label_values(opsctl_gpu_info{rack="$rack"}, tray)', "refId": "tray"}},
        ]},
        "panels": p.panels,
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    OUTPUT.write_text(render())
    print(OUTPUT)
