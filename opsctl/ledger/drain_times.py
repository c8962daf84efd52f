"""Time out of service from the scheduler's view: how long Slurm held nodes drained for a part,
from opsctl's drain to its resume (the `drains` table, opsctl/ledger/drains.py) — measured by
the scheduler, not typed by hand, and reported beside the repair times `opsctl repair close`
records.

One sample is one drain of one part: the nodes one drain took out for it together (a switch
tray's is every compute tray of the rack, one sample), out from the drain until the last of
them was resumed. A drain not resumed by the end of the window is open: it is counted and
listed with its time so far, never dropped; the median counting open drains at their time so
far is a lower bound on the median they will have once resumed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.ledger.intervals import hours_summary, quantile
from opsctl.ledger.parts import Parts, RackFacts
from opsctl.ledger.timestamps import from_epoch, parse_time

if TYPE_CHECKING:
    from opsctl.ledger.fleet_stats import Window
    from opsctl.ledger.store import Record

METHOD = ("time Slurm held a part's nodes drained, from opsctl's drain to the resume of the last of them; "
          "median of the resumed drains with its order-statistic interval; a drain not resumed by the end of "
          "the window is open, counted at its time so far in median_hours_at_least")


def _seconds(text: str) -> float:
    return parse_time(text).timestamp()


@dataclass(frozen=True)
class DrainEpisode:
    """One drain of one part, over the nodes it took out together."""

    rack: str
    part: str
    action: str
    incident_key: str | None
    nodes: tuple[str, ...]
    keys: tuple[str, ...]  # the drains rows
    drained_at: str
    resumed_at: str | None  # the last node's resume; None while any node is still held for the part
    hours: float  # out of service: to the resume, or so far (to `until`) while open

    @property
    def open(self) -> bool:
        return self.resumed_at is None

    def nodes_text(self) -> str:
        """The nodes in a few words: a rack-wide drain is its first and last node."""
        if len(self.nodes) <= 3:
            return ", ".join(self.nodes)
        return f"{len(self.nodes)} nodes ({self.nodes[0]} … {self.nodes[-1]})"

    def to_dict(self) -> dict[str, Any]:
        return {"rack": self.rack, "part": self.part, "action": self.action, "incident_key": self.incident_key,
                "nodes": list(self.nodes), "drained_at": self.drained_at, "resumed_at": self.resumed_at,
                "open": self.open, ("hours_so_far" if self.open else "hours"): round(self.hours, 2),
                "drain_keys": list(self.keys)}


def episodes(rows: Iterable[Record], until_s: float) -> list[DrainEpisode]:
    """The drain episodes of `rows` (drains table records) as of `until_s` (epoch seconds): a
    resume after it is not seen yet. One episode is the rows one drain wrote for one part."""
    groups: dict[tuple[str, str, str, str], list[Record]] = {}
    for row in rows:
        groups.setdefault((row["rack"], row["part"], row["action"], row["drained_at"]), []).append(row)
    found = []
    for (rack, part, action, drained_at), group in groups.items():
        group.sort(key=lambda r: r["node"])
        start = _seconds(drained_at)
        ends = [_seconds(r["resumed_at"]) if r["resumed_at"] else math.inf for r in group]  # not resumed: out still
        still_out = any(end > until_s for end in ends)
        end = until_s if still_out else max(ends)
        incident = next((r["incident_key"] for r in group if r["incident_key"]), None)
        found.append(DrainEpisode(rack, part, action, incident, tuple(r["node"] for r in group),
                                  tuple(r["key"] for r in group), drained_at,
                                  None if still_out else from_epoch(end), max(0.0, end - start) / 3600.0))
    return sorted(found, key=lambda e: (e.drained_at, e.part))


def _kinds(found: Iterable[DrainEpisode], racks: Mapping[str, Record]) -> dict[DrainEpisode, str]:
    """{episode: the kind of part it drained} (a rack-wide drain: 'rack'), by the rack's topology."""
    parts = Parts()
    kinds: dict[DrainEpisode, str] = {}
    for episode in found:
        rack = racks[episode.rack]
        try:
            kinds[episode] = parts.part(episode.part, RackFacts(rack["rack"], rack["model"], rack["gpus"])).kind
        except InputError:  # a part the rack's topology no longer has (an import from another cabling map)
            kinds[episode] = "unknown"
    return kinds


def _summary(found: Sequence[DrainEpisode], confidence: float) -> dict[str, Any]:
    resumed = [e.hours for e in found if not e.open]
    still = [e.hours for e in found if e.open]
    at_least = quantile(resumed + still, 0.5) if still else None  # the open drains at their time so far
    return {
        "drains": len(found),
        "resumed": len(resumed),
        "open": len(still),
        **hours_summary(resumed, confidence),
        "median_hours_at_least": None if at_least is None else round(at_least, 2),
        "open_hours_so_far": sorted(round(h, 2) for h in still),
        "nodes_mean": round(sum(len(e.nodes) for e in found) / len(found), 1),
    }


def drain_statistics(rows: Iterable[Record], racks: Iterable[Record], window: Window, confidence: float,
                     typed_by_action: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The `slurm_drains` section of `opsctl ledger stats`: drains whose drain falls in the
    window, per action (beside the typed repair median of the same action) and per part kind,
    and every drain still open at the window's end."""
    found = episodes([r for r in rows if window.covers_rack(r["rack"]) and window.covers(_seconds(r["drained_at"]))],
                     window.until)
    kinds = _kinds(found, {r["rack"]: r for r in racks})
    by_action: dict[str, list[DrainEpisode]] = {}
    by_kind: dict[str, list[DrainEpisode]] = {}
    for episode in found:
        by_action.setdefault(episode.action, []).append(episode)
        by_kind.setdefault(kinds[episode], []).append(episode)
    actions: dict[str, dict[str, Any]] = {}
    for action, group in sorted(by_action.items()):
        typed = typed_by_action.get(action)
        actions[action] = {**_summary(group, confidence),
                           "typed_repair_median_hours": typed["median_hours"] if typed else None,
                           "typed_repair_interval": typed["interval"] if typed else None}
    return {
        "method": METHOD,
        "by_action": actions,
        "by_kind": {kind: _summary(group, confidence) for kind, group in sorted(by_kind.items())},
        "open": [{**e.to_dict(), "kind": kinds[e]} for e in found if e.open],
    }
