"""The tray's link-health snapshot: NVLink counters read twice a window apart, deltas only,
and the XIDs each GPU logged in between (the tray's part of the link-health snapshot). A switch
tray's snapshot is its ports, the far ends of the same links ("side": "switch").
"""

import time

from probes.counters import link_window, snapshot_link
from probes.nvml_reader import NvmlReader, XidWatcher
from probes.switch_reader import snapshot_port, switch_window

FORMAT = "opsctl-probe/1"


def take_snapshot(nvml, window_s, clock=None, tray=None):
    """The snapshot document body of docs/probe-output.md for the GPUs behind `nvml` (initialised).
    `clock` (now() and sleep()) measures the window and stamps the XIDs: wall time on a tray, a
    simulated clock in benchmarks."""
    now, sleep = (clock.now, clock.sleep) if clock is not None else (time.time, time.sleep)
    reader = NvmlReader(nvml, now=now)
    # No polling thread: the window is spent waiting on NVML's event set, so a simulated clock
    # moves only by that wait, and each XID carries the moment it came.
    watcher = XidWatcher(nvml, reader.handles, now=now).start(poll=False)
    before = reader.read_all(identity=False)
    watcher.collect_for(window_s, sleep)
    after = reader.read_all(identity=False)
    events = watcher.stop()
    links, gpus = [], []
    for first, last in zip(before, after):
        reachable = not (first.lost or last.lost)
        if reachable:
            by_port = {link.port: link for link in first.links}
            links += [snapshot_link(last.index, link_window(by_port[link.port], link, window_s))
                      for link in last.links if link.port in by_port]
        gpus.append({"gpu": last.index, "reachable": reachable,
                     "xids": [{"xid": event["xid"], "time": round(event["time"], 3)}
                              for event in events if event["gpu"] == last.index]})
    return {"format": FORMAT, "kind": "snapshot", "tray": tray, "window_seconds": float(window_s), "links": links, "gpus": gpus,
            "errors": [entry["error"] for entry in watcher.errors]}


def take_switch_snapshot(switch, window_s, clock=None, tray=None):
    """The snapshot document of a switch tray, from a switch reader (probes.switch_reader)."""
    sleep = clock.sleep if clock is not None else time.sleep
    document = {"format": FORMAT, "kind": "snapshot", "tray": tray, "window_seconds": float(window_s), "links": [],
                "gpus": [], "errors": []}
    if not switch.supported:
        document["switch"] = {"supported": False, "reason": switch.reason}
        return document
    before = switch.read()
    sleep(window_s)
    document["links"] = [snapshot_port(row) for row in switch_window(before, switch.read())]
    return document
