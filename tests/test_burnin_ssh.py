"""Burn-in over ssh against a real sshd on loopback: 27 trays at 127.0.0.2–28 running the probes
on the simulator. The whole rack; unreachable trays; a run killed midway and resumed."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from opsctl.backend import sim_spec_for
from opsctl.cli.commands.sim import injected_faults
from opsctl.inventory import load_inventory

GPU_FAULTS = ("slow", "throttle", "sdc", "row_remap")
LINK_FAULTS = ("errors", "flap", "down")


def _injected():
    """The GPUs and links the rack07 scenario makes faulty (`opsctl sim faults rack07`)."""
    gpus, links = set(), set()
    for group in injected_faults(sim_spec_for(load_inventory().rack("rack07"))):
        for effect in group["effects"]:
            if effect["kind"] in GPU_FAULTS:
                gpus.add(effect["target"])
            elif effect["kind"] in LINK_FAULTS:
                links.add(effect["target"])
    return gpus, links


@pytest.mark.slow
def test_the_whole_rack_burns_in_over_ssh_and_the_verdict_names_every_fault(rack07_over_ssh):
    result = rack07_over_ssh
    assert result.code == 1, result.err[-3000:]
    summary = result.summary()
    assert summary["verdict"] == "FAIL" and summary["transport"] == "ssh"
    assert [t["status"] for t in summary["trays"]] == ["complete"] * 27
    gpus, links = _injected()
    assert len(gpus) == 4 and len(links) == 5
    # Every injected fault is named, and nothing else is.
    assert set(summary["failing"]["gpus"]) == gpus
    assert set(summary["failing"]["links"]) == links
    assert summary["failing"]["trays"] == [] and summary["failing"]["other"] == []
    # The terminal says it too, with readings, thresholds and sources.
    for name in [*gpus, *links]:
        assert name in result.out
    assert "FAIL (exit 1)" in result.out and "threshold sources:" in result.out
    # Both ends of a bad link were read: the GPU's and the switch tray's, in the NVLink 5 counters a
    # GB200 has (no data-link replay or CRC counter: NVML removed them on Blackwell).
    row = next(r for r in summary["links"] if r["id"] == "rack07/ct05/gpu1/nvl07")
    assert row["deltas"]["rcv_errors"] > 0 and row["switch_deltas"]["rcv_errors"] > 0
    assert "replay_errors" not in row["deltas"] and "replay_errors" not in row["switch_deltas"]
    # The flapping link's XID 149 is charged to the link, not its GPU; no other GPU logs one.
    link_down = next(c for c in summary["checks"] if c["check"] == "xid" and c["value"] == 149)
    assert link_down["component"] == "rack07/ct07/gpu0/nvl13" and link_down["verdict"] == "fail"
    logged = {c["component"]: c["value"] for c in summary["checks"] if c["check"] == "xid" and c["value"]}
    assert set(logged) <= {"rack07/ct07/gpu0/nvl13", "rack07/ct17/gpu1"}  # 149, and the row remap's 63
    # Every judged thing says what, reading, threshold and source.
    for check in summary["checks"]:
        assert check["component"].startswith("rack07") and check["source"] and check["verdict"]


def test_each_trays_raw_json_and_the_journal_are_in_the_run_folder(rack07_over_ssh):
    run = rack07_over_ssh.run
    names = {p.stem for p in (run / "trays").glob("*.json")}
    assert names == {f"ct{i:02d}" for i in range(1, 19)} | {f"st{i}" for i in range(1, 10)}
    document = json.loads((run / "trays" / "ct05.json").read_text())
    assert document["format"] == "opsctl-probe/1" and document["tray"] == "ct05"
    events = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    finished = [e for e in events if e["event"] == "tray_finished"]
    assert len(finished) == 27 and all(e["status"] == "complete" and e["transport"] == "ssh" for e in finished)
    assert events[-1]["event"] == "run_judged" and events[-1]["verdict"] == "FAIL"
    # The spec travelled on stdin: no spec file was written for ssh trays.
    assert not (run / "sim-spec.json").exists()
    snapshot = json.loads((run / "snapshot.json").read_text())
    assert snapshot["rack"] == "rack07" and {link.get("side") for link in snapshot["links"]} == {"gpu", "switch"}


def _healthy_scenario(path, *faults):
    path.write_text("scenario: healthy-with-trouble\nseed: 3\nrack: rack07\nfaults:\n"
                    + "".join(f"  - {fault}\n" for fault in faults))
    return path


def _opsctl(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "opsctl", *map(str, args)], capture_output=True, text=True, timeout=timeout)


def _events(run):
    return [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]


def _not_passed(summary):
    """What a summary holds against its trays, for an assertion's message."""
    return [(c.get("component"), c.get("check"), c.get("reason")) for c in summary["checks"]
            if c.get("verdict") not in ("pass", "warn")] + [t for t in summary["trays"] if t["status"] != "complete"]


def _started_in_last_session(run):
    events = _events(run)
    last = max(i for i, e in enumerate(events) if e["event"] == "run_started")
    return {e["tray"] for e in events[last:] if e["event"] == "tray_started"}


@pytest.mark.slow
def test_unreachable_trays_a_killed_run_and_resuming_it(sshd, tmp_path):
    """ct04 is marked unreachable in the simulator (its probe exits 3 and prints nothing); ct05's
    host refuses the connection. The run is killed midway, resumed (INCOMPLETE, exit 3, the
    others' results kept), the two trays are mended, and a second resume completes the rack."""
    scenario = _healthy_scenario(tmp_path / "scenario.yaml", "{kind: tray_unreachable, tray: ct04}")
    inventory = sshd.inventory(tmp_path / "inventory.yaml", scenario=scenario,
                               known_hosts=sshd.write_known_hosts(tmp_path / "known_hosts"),
                               extra_hosts={"ct05": "127.0.0.29"})  # nothing listens there
    run = tmp_path / "run"

    # 1. Killed midway: 27 probes on two cores report seconds apart; kill after the first three.
    # The default 10 s connect timeout, kept by both resumes: ct05's refusal is immediate anyway, and
    # a 3 s one left a healthy tray (ct06) unreachable once, when the whole suite loaded the machine
    # while 24 trays logged in at once.
    process = subprocess.Popen([sys.executable, "-m", "opsctl", "--inventory", inventory, "burnin", "rack07",
                                "--duration", "2", "--out", run],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 240
    finished = []
    while len(finished) < 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
        if (run / "journal.jsonl").exists():
            finished = [e for e in _events(run) if e["event"] == "tray_finished"]
    os.killpg(process.pid, signal.SIGKILL)  # opsctl and its local children: nothing gets to tidy up
    process.communicate()
    kept = {e["tray"] for e in _events(run) if e["event"] == "tray_finished"}
    assert 3 <= len(kept) < 27, kept
    for tray in kept:
        if tray not in ("ct04", "ct05"):  # whole files, never half of one
            assert json.loads((run / "trays" / f"{tray}.json").read_text())["tray"] == tray
    assert not (run / "summary.json").exists()

    # 2. Resumed: only the trays without a result run; two stay unreachable: INCOMPLETE, exit 3.
    resumed = _opsctl("burnin", "--resume", run, "--json")
    assert resumed.returncode == 3, resumed.stderr[-3000:]
    done_before = kept - {"ct04", "ct05"}
    assert not (_started_in_last_session(run) & done_before)
    assert f"resuming: {len(done_before)} tray(s) already have a result" in resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["verdict"] == "INCOMPLETE" and summary["exit_code"] == 3
    trays = {t["tray"]: t for t in summary["trays"]}
    assert trays["ct04"]["status"] == "incomplete" and trays["ct04"]["exit_code"] == 3 and "unreachable" in trays["ct04"]["reason"]
    assert trays["ct05"]["status"] == "incomplete" and "connection refused" in trays["ct05"]["reason"]
    assert summary["failing"]["trays"] == ["rack07/ct04", "rack07/ct05"], _not_passed(summary)
    assert all(t["status"] == "complete" for name, t in trays.items() if name not in ("ct04", "ct05"))
    assert summary["failing"]["gpus"] == [] and summary["failing"]["links"] == []
    # Their GPUs are unobserved, not healthy; their links were read at the switch end only.
    assert {g["tray"] for g in summary["gpus"] if g["verdict"] == "unobserved"} == {"ct04", "ct05"}
    far_end_only = {r["gpu"].split("/")[1] for r in summary["links"] if r["state"] is None and r["switch_deltas"] is not None}
    assert far_end_only == {"ct04", "ct05"}

    # 3. Mended (ct05 at a live address, ct04 no longer unreachable): only those two run again.
    _healthy_scenario(scenario)
    inventory.write_text(inventory.read_text().replace("'127.0.0.29'", f"'{sshd.addresses[4]}'"))
    final = _opsctl("burnin", "--resume", run, "--json")
    assert final.returncode == 0, final.stderr[-3000:]
    assert _started_in_last_session(run) == {"ct04", "ct05"}
    summary = json.loads(final.stdout)
    assert summary["verdict"] == "PASS" and [t["status"] for t in summary["trays"]] == ["complete"] * 27
    assert len(list((run / "trays").glob("*.json"))) == 27
