"""What triage says of its window (opsctl/localize/window_evidence.py, opsctl/cli/window_progress.py):
each XID with its GPU and meaning, a warning when the window is short for the evidence, and a
line every few seconds while it waits."""

import io
import time

from opsctl.cli.window_progress import WindowProgress
from opsctl.fanout import TrayResult
from opsctl.localize.window_evidence import window_warnings, xids_seen


def _link(gpu, port, **counters):
    return {"gpu": gpu, "port": port, "side": "gpu", "state": "up", **counters}


def test_each_xid_is_named_once_per_gpu_with_how_often_and_the_catalogs_meaning():
    snapshot = {"window_seconds": 60, "links": [], "gpus": [
        {"id": "r/ct07/gpu0", "reachable": True, "xids": [149, {"xid": 149, "time": 1.0}]},
        {"id": "r/ct01/gpu0", "reachable": True, "xids": []}]}
    (seen,) = xids_seen(snapshot)
    assert (seen["gpu"], seen["xid"], seen["count"], seen["name"]) == ("r/ct07/gpu0", 149, 2, "NVLINK_NETIR_ERROR")
    assert seen["meaning"] == "NVLINK: NETIR Error" and seen["action"]


def test_a_default_window_that_saw_steady_evidence_warns_of_nothing():
    # An NVL72's links count NVLink 5 errors (no data-link counter on Blackwell); an HGX's count CRC
    # and replays, CRC one at a time on a healthy link too.
    nvl72 = {"window_seconds": 60.2, "gpus": [{"id": "r/ct05/gpu1", "xids": []}],
             "links": [_link("r/ct05/gpu1", 7, symbol_errors=720, rcv_errors=360), _link("r/ct01/gpu0", 1, rcv_errors=0)]}
    hgx = {"window_seconds": 60.2, "gpus": [{"id": "h/gpu5", "xids": []}],
           "links": [_link("h/gpu5", 7, crc_errors=10800, replay_errors=48), _link("h/gpu0", 1, crc_errors=1)]}
    assert window_warnings(nvl72) == [] and window_warnings(hgx) == []


def test_a_short_window_a_single_drop_a_single_recovery_and_an_xid_without_its_link_are_each_warned():
    # NVLink 5: a drop is a failed recovery (link_down_events), a recovery a successful one.
    snapshot = {"window_seconds": 5.3, "gpus": [{"id": "r/ct07/gpu0", "xids": [149]}, {"id": "r/ct02/gpu0", "xids": [149]}],
                "links": [_link("r/ct07/gpu0", 13, link_down_events=1, recovery_successful=0),
                          _link("r/ct03/gpu1", 2, recovery_successful=1),
                          {"side": "switch", "link": "r/ct07/gpu0/nvl13", "link_down_events": 1}]}
    short, drop, recovery, xid = window_warnings(snapshot)
    assert short.startswith("a 5.3 s window sees only what happens within it") and "--window 60 (the default)" in short
    assert drop == ("went down too few times for a rate: r/ct07/gpu0/nvl13 (1 drop in 5.3 s); a flapping link's rate "
                    "needs several drops: run again with --window 60")
    assert recovery.startswith("one recovery, and no more, in 5.3 s on r/ct03/gpu1/nvl02")
    assert xid.startswith("r/ct02/gpu0 logged NVLink XID 149 but none of its links moved in 5.3 s")


def test_a_single_data_link_recovery_on_nvlink_4_is_warned_and_an_nvlink5_error_is_a_link_that_moved():
    hgx = {"window_seconds": 60, "gpus": [], "links": [_link("h/gpu3", 2, recovery_errors=1)]}
    (recovery,) = window_warnings(hgx)
    assert recovery.startswith("one recovery, and no more, in 60 s on h/gpu3/nvl02")
    # The GPU's NVLink XID has its link: a receive error moved it, though it counts no CRC or replay.
    nvl72 = {"window_seconds": 60, "gpus": [{"id": "r/ct05/gpu1", "xids": [149]}], "links": [_link("r/ct05/gpu1", 7, rcv_errors=3)]}
    assert window_warnings(nvl72) == []


def test_a_single_nvlink5_recovery_is_counted_once_from_the_event_total_and_its_split():
    # A probe's snapshot carries NVML's recovery event total beside the successful and failed halves
    # ("irrespective of the result"): one successful recovery is one recovery, not two; a failed one is a drop.
    snapshot = {"window_seconds": 60, "gpus": [],
                "links": [_link("r/ct03/gpu1", 2, recovery_events=1, recovery_successful=1, link_down_events=0),
                          _link("r/ct04/gpu0", 5, recovery_events=2, recovery_successful=2, link_down_events=0),
                          _link("r/ct07/gpu0", 13, recovery_events=1, recovery_successful=0, link_down_events=1)]}
    drop, recovery = window_warnings(snapshot)
    assert drop.startswith("went down too few times for a rate: r/ct07/gpu0/nvl13 (1 drop in 60 s)")
    assert recovery.startswith("one recovery, and no more, in 60 s on r/ct03/gpu1/nvl02:")


def test_the_window_speaks_every_few_seconds_and_at_once_for_a_tray_not_read():
    class Rack:
        name, trays = "r", ("ct01", "ct02", "ct03")

    out = io.StringIO()
    with WindowProgress(Rack(), 60, out, tick_s=0.05) as progress:
        progress.finished(TrayResult("ct02", "r-ct02", "incomplete", None, None, reason="connection refused"))
        time.sleep(0.5)  # ticks every 0.05 s: some, however busy the machine
        progress.finished(TrayResult("ct01", "r-ct01", "complete", 0, {}))
    lines = out.getvalue().splitlines()
    assert lines[0] == "r: reading 3 tray(s) over a 60 s window …"
    assert lines[1] == "  ct02 not read: connection refused"
    assert any(line.endswith("s left; 0 answered, 2 reading, 1 not read (ct02)") and line.startswith("r: ")
               for line in lines[2:]), lines
    over = io.StringIO()
    with WindowProgress(Rack(), 0.01, over, tick_s=0.05):
        time.sleep(0.3)
    assert "the window is over: waiting for the last readings; 0 answered, 3 reading" in over.getvalue().splitlines()[-1]

def test_localize_prints_each_alternative_under_the_suspect_it_would_replace():
    from rich.console import Console

    from opsctl.localize.render import render_summary

    def suspect(part, score, **more):
        return {"component": part, "score": score, "links": ["l"], "links_through": 18, "repair": "reseat_compute_tray",
                "mttr_hours": 2.35, "gpus_idled": 4, "runbook": "runbooks/link.md", **more}

    result = {"rack": "r", "model": "gb200-nvl72", "status": "faulty", "unread_trays": [], "suspects": [
        suspect("r/ct12/j2", 1.0), suspect("r/ct05/gpu1/nvl07", 0.97), suspect("r/ct17/gpu1", 1.0),
        suspect("r/ct05/j0", 0.02, alternative_to="r/ct05/gpu1/nvl07")]}
    out = Console(width=120, record=True)
    render_summary(result, out)
    rows = [line.split()[0] if not line.strip().startswith("or ") else "or " + line.split()[1]
            for line in out.export_text().splitlines() if " r/" in line]
    assert rows == ["r/ct12/j2", "r/ct05/gpu1/nvl07", "or r/ct05/j0", "r/ct17/gpu1"]

