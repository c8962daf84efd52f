"""Every NVLink link of the rack after a burn-in: what its two ends read over the window, and
its verdict — including the links nobody could read, which are not healthy but unobserved.

The GPU end comes from the compute tray's probe document (`counters.links`); the switch end,
where a switch tray reported its port counters, from that tray's document. The same rows make
the link-health snapshot, which is what the localizer reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opsctl.burnin.checks import Check, worst
from opsctl.localize.snapshot import SNAPSHOT_FORMAT
from probes.counters import SNAPSHOT_COUNTERS  # snapshot counter -> the probe's delta that carries it

if TYPE_CHECKING:
    from opsctl.topology.graph import Topology

UNOBSERVED = "unobserved"


@dataclass
class LinkRow:
    id: str  # rack07/ct03/gpu2/nvl05
    gpu: str
    gpu_index: int  # rack GPU index: the heatmap's row
    port: int  # the heatmap's column
    switch: str
    switch_port: int
    verdict: str = UNOBSERVED  # pass | warn | fail | incomplete | unobserved
    state: str | None = None
    deltas: dict = field(default_factory=dict)
    effective_ber: float | None = None
    symbol_ber_raw: int | None = None  # the symbol BER as NVML packs it, which DCGM's floor judges
    switch_deltas: dict | None = None  # the switch end's counter deltas, where a switch tray reported them
    switch_state: str | None = None
    reasons: list = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "gpu": self.gpu, "port": self.port, "switch": self.switch, "switch_port": self.switch_port,
                "verdict": self.verdict, "state": self.state, "deltas": self.deltas, "effective_ber": self.effective_ber,
                "switch_deltas": self.switch_deltas, "switch_state": self.switch_state, "reasons": self.reasons}


def link_rows(topology: Topology, gpu_readings: dict[str, dict[str, Any]],
              switch_readings: dict[tuple[str, int], dict[str, Any]], checks: list[Check]) -> list[LinkRow]:
    """One LinkRow per link of the topology.

    gpu_readings: GPU id -> that GPU's entry of its tray's probe document (observed GPUs only);
    switch_readings: (switch chip id, switch port) -> that port's row of its switch tray's
    document (`switch_links`); checks: every Check."""
    by_component: dict[str, list[Check]] = {}
    for check in checks:
        by_component.setdefault(check.component, []).append(check)
    rows = []
    for link in topology.links.values():
        row = LinkRow(id=link.id, gpu=link.gpu, gpu_index=link.gpu_index, port=link.port, switch=link.switch,
                      switch_port=link.switch_port)
        reading = _port_reading(gpu_readings.get(link.gpu), link.port)
        if reading is not None:
            row.state = reading.get("state")
            row.deltas = {k: v for k, v in (reading.get("deltas") or {}).items() if isinstance(v, (int, float))}
            row.effective_ber = reading.get("effective_ber")
            row.symbol_ber_raw = reading.get("symbol_ber_raw")
        far_end = switch_readings.get((link.switch, link.switch_port))
        if far_end is not None:
            row.switch_deltas = far_end.get("deltas") or {}
            row.switch_state = far_end.get("state")
        mine = by_component.get(link.id, [])
        row.reasons = [c.reason for c in mine if c.verdict != "pass" and c.reason]
        if reading is not None or far_end is not None or mine:
            row.verdict = worst(c.verdict for c in mine) if mine else "pass"
        rows.append(row)
    return rows


def _port_reading(gpu: Any, port: int) -> dict[str, Any] | None:
    if not isinstance(gpu, dict):
        return None
    for entry in (gpu.get("counters") or {}).get("links") or []:
        if isinstance(entry, dict) and entry.get("port") == port:
            return entry
    return None


def rack_snapshot(rack: str, model: str, window_s: float, rows: list[LinkRow], gpus: list[dict[str, Any]],
                  trays: list[dict[str, Any]], link_checks: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The link-health snapshot of the burn-in window (input of `opsctl localize`), with
    the fields the localizer also reads: each end of a link (`side`), the effective and symbol BER, XIDs
    with their time, which trays answered, and the checks a link failed on its own measurement.

    gpus: [{"id", "reachable", "xids": [{"xid", "time"}]}] of the GPUs whose tray reported;
    trays: [{"tray", "status", "error"}]; link_checks: {link id: [{"check", "value", "reason"}]}.
    Links nobody read are left out, as the snapshot format says: absent is 'not observed', not healthy."""
    links = []
    link_checks = link_checks or {}
    for row in rows:
        entries: list[dict[str, Any]] = []
        if row.state is not None or row.deltas:
            entries.append(_snapshot_entry(row, "gpu", row.state, row.deltas, row.effective_ber, row.symbol_ber_raw))
        if row.switch_deltas is not None:
            entries.append(_snapshot_entry(row, "switch", row.switch_state, row.switch_deltas, None))
        if row.id in link_checks:  # on one end's entry (a bare one when neither end's counters were read)
            entries = entries or [{"gpu": row.gpu, "port": row.port, "side": "gpu"}]
            entries[0]["failed_checks"] = link_checks[row.id]
        links += entries
    return {"format": SNAPSHOT_FORMAT, "rack": rack, "model": model, "window_seconds": window_s,
            "links": links, "gpus": gpus, "trays": trays}


def _snapshot_entry(row: LinkRow, side: str, state: str | None, deltas: dict[str, Any], ber: float | None,
                    symbol_ber_raw: int | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"gpu": row.gpu, "port": row.port, "side": side, "state": state or "up"}
    for counter, source in SNAPSHOT_COUNTERS.items():
        if source in deltas:
            entry[counter] = deltas[source]
    if ber is not None:
        entry["effective_ber"] = ber
    if symbol_ber_raw is not None:
        entry["symbol_ber_raw"] = symbol_ber_raw
    return entry
