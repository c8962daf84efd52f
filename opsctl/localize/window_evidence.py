"""What a triage window saw, for the person reading it: each XID with its GPU and the catalog's
meaning, and whether the window was long enough for the evidence it found (or did not find).

    seen = xids_seen(snapshot)            # [{"gpu", "xid", "count", "name", "meaning", "action"}]
    warnings = window_warnings(snapshot)  # ["…: run again with --window 64", …]

A window shows only what happens within it: a link that drops every 15 s is missed by most 5 s
windows, and one event in a window gives no rate. So: a window shorter than the default says so;
a link seen going down, or a recovery seen only once, asks for a window that would see it
several times; a GPU that logged an NVLink XID while none of its links moved asks for a window
that would catch the link too.
"""

from __future__ import annotations

import math
from typing import Any

from opsctl.localize.evidence import COUNTERS
from probes.xids import nvlink_xids, rule

DEFAULT_WINDOW_S = 60.0  # opsctl triage's default (opsctl/cli/commands/snapshot.py passes its own)
# What a link that moved shows: any of the snapshot's counters, on either generation (the
# data-link ones of NVLink 4, which Blackwell does not have, and the NVLink 5 ones). CRC and
# replays also come one at a time on a healthy link (its BER's noise), so only a drop or a
# recovery seen once asks for a longer window.
ERROR_COUNTERS = COUNTERS
SEVERAL = 4  # events a rate is told from: a window that would hold about this many


def _recoveries(link: dict[str, Any]) -> float:
    """The recoveries a link shows: the data-link counter's (NVLink 4) and NVLink 5's recovery
    events, successful or failed (where a snapshot has no event total, its successful ones: its
    failed ones are its drops, link_down_events)."""
    events = link.get("recovery_events")
    nvlink5 = events if isinstance(events, (int, float)) else link.get("recovery_successful") or 0
    return (link.get("recovery_errors") or 0) + nvlink5


def _codes(gpu: dict[str, Any]) -> list[int]:
    """The XID codes of a snapshot's GPU entry: codes, or {"xid": code, "time": …} events."""
    codes = []
    for xid in gpu.get("xids") or []:
        code = xid.get("xid") if isinstance(xid, dict) else xid
        if isinstance(code, int):
            codes.append(code)
    return codes


def xids_seen(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """Each XID the window saw, once per GPU and code, with how often and what NVIDIA's catalog says."""
    seen = []
    for gpu in snapshot.get("gpus") or []:
        codes = _codes(gpu)
        for code in sorted(set(codes)):
            ruling = rule(code)
            seen.append({"gpu": gpu.get("id"), "xid": code, "count": codes.count(code), "name": ruling.mnemonic,
                         "meaning": ruling.meaning, "action": ruling.action})
    return seen


def window_warnings(snapshot: dict[str, Any], default_window_s: float = DEFAULT_WINDOW_S) -> list[str]:
    """One sentence per reason the window may be too short for what it looked for."""
    window = round(float(snapshot.get("window_seconds") or 0), 1)
    longer = f"{max(default_window_s, math.ceil(SEVERAL * window / 10) * 10):g}"
    warnings = []
    if 0 < window < default_window_s:
        warnings.append(f"a {window:g} s window sees only what happens within it: a link that flaps, or a counter "
                        f"that moves, less often than that looks healthy here; before calling the rack healthy, run "
                        f"again with --window {default_window_s:g} (the default) or more")
    moved_gpus, flapped, once = set(), [], []
    for link in snapshot.get("links") or []:
        if link.get("side", "gpu") != "gpu":
            continue
        name = f"{link.get('gpu')}/nvl{int(link.get('port', 0)):02d}"
        if any(isinstance(link.get(c), (int, float)) and link.get(c) for c in ERROR_COUNTERS):
            moved_gpus.add(link.get("gpu"))
        downs = link.get("link_down_events") or 0
        if 0 < downs < SEVERAL:
            flapped.append(f"{name} ({downs:g} drop{'s' if downs > 1 else ''} in {window:g} s)")
        elif not downs and _recoveries(link) == 1:
            once.append(name)
    if flapped:
        warnings.append(f"went down too few times for a rate: {', '.join(flapped)}; a flapping link's rate needs "
                        f"several drops: run again with --window {longer}")
    if once:
        warnings.append(f"one recovery, and no more, in {window:g} s on {', '.join(once)}: one event gives no rate; "
                        f"run again with --window {longer}")
    links_xids = nvlink_xids()
    for gpu in snapshot.get("gpus") or []:
        codes = sorted({c for c in _codes(gpu) if c in links_xids})
        if codes and gpu.get("id") not in moved_gpus:
            warnings.append(f"{gpu.get('id')} logged NVLink XID {', '.join(map(str, codes))} but none of its links moved "
                            f"in {window:g} s: the window missed the link it points at; run again with --window {longer}")
    return warnings
