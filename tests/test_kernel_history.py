"""What the GPUs logged before a run is judged (probes/kernel_history.py): a tray that arrives
with XID 140 in its kernel log is not healthy because the probe looked a second later."""

import os

import pytest

from probes.xid_checks import recorded_xid_checks
from probes.kernel_history import last_resets, read_kernel_history, recorded_xids, since_driver_load
from probes.xids import catalog
from tests.test_snapshot_cli import sim_inventory

LOAD = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.133.20  Release Build"


def xid_line(pci, code):
    return f"NVRM: Xid (PCI:{pci}): {code}, pid='<unknown>', name=<unknown>, Ch 00000008"


def test_only_what_came_after_the_last_driver_load_is_held_against_the_gpu():
    lines = [xid_line("0000:18:00", 79), LOAD, xid_line("0000:18:00", 48), LOAD, xid_line("0000:18:00", 140)]
    assert since_driver_load(lines) == [xid_line("0000:18:00", 140)]
    assert since_driver_load([xid_line("0000:18:00", 79)]) == [xid_line("0000:18:00", 79)]  # no load line: all of it


def test_each_line_goes_to_the_gpu_of_its_bus_whichever_way_the_address_is_spelt():
    lines = [LOAD, xid_line("0000:18:00", 140), xid_line("0000:2a:00", 95), xid_line("0000:99:00", 79)]
    found = recorded_xids(lines, {0: "00000000:18:00.0", 1: "00000000:2A:00.0", 2: "00000000:3B:00.0"})
    assert [[e["xid"] for e in found[i]] for i in (0, 1, 2)] == [[140], [95], []]


def test_a_recorded_xid_is_ruled_by_the_catalog_and_an_unread_log_is_incomplete():
    fail = recorded_xid_checks("gpu0", {"events": [{"xid": 79}], "unread": None}, catalog())
    assert [(c["check"], c["verdict"], c["value"]) for c in fail] == [("xid.recorded", "fail", 79)]
    assert "before this run" in fail[0]["reason"] and "MonitorDevastatingXids" in fail[0]["source"]
    clean = recorded_xid_checks("gpu0", {"events": [], "unread": None}, catalog())
    assert [c["verdict"] for c in clean] == ["pass"]
    unread = recorded_xid_checks("gpu0", {"events": [], "unread": "dmesg: Operation not permitted"}, catalog())
    assert [c["verdict"] for c in unread] == ["incomplete"] and "Operation not permitted" in unread[0]["reason"]


@pytest.mark.slow
def test_health_fails_a_tray_whose_gpu_logged_xid_140_before_it_started(opsctl, tmp_path):
    inventory = sim_inventory(tmp_path, "faults:\n  - {kind: xid, gpu: gpu2, xid: 140, at_s: 0}\n")
    result = opsctl("--inventory", inventory, "health", "lab1/node")
    assert result.code == 1, result.out + result.err
    assert "gpu2" in result.out and "xid.recorded" in result.out and "XID 140" in result.out


@pytest.mark.slow
def test_health_passes_the_same_tray_without_the_xid(opsctl, tmp_path):
    result = opsctl("--inventory", sim_inventory(tmp_path, "seed: 1\n"), "health", "lab1/node")
    assert result.code == 0, result.out + result.err


@pytest.mark.slow
def test_triage_names_a_gpu_that_logged_xid_140_before_its_window_with_the_catalogs_first_step(opsctl, tmp_path):
    inventory = sim_inventory(tmp_path, "faults:\n  - {kind: xid, gpu: gpu2, xid: 140, at_s: 0}\n")
    result = opsctl("--inventory", inventory, "triage", "lab1", "--window", "1", "--no-ledger", "--json")
    assert result.code == 1, result.err
    (fault,) = [s for s in result.json()["suspects"] if not s.get("alternative_to")]
    assert fault["component"] == "lab1/gpu2" and fault["repair"] == "reset_gpu"  # catalog: RESET_GPU first


def test_the_exporter_publishes_what_each_gpu_logged_before_it_started(sim_exporter):
    served = sim_exporter("faults:\n  - {kind: xid, gpu: ct03/gpu1, xid: 79, at_s: 0}\n", trays=["ct03"], at_s=5.0)
    samples = served.wait_for(lambda found: any(name == "opsctl_gpu_xid_recorded" for name, _ in found))
    recorded = {(dict(labels)["gpu"], dict(labels)["xid"]): value for (name, labels), value in samples.items()
                if name == "opsctl_gpu_xid_recorded"}
    assert recorded == {("1", "79"): 1.0}  # gpu1 only, once; its siblings logged nothing
    assert [value for (name, _), value in samples.items() if name == "opsctl_exporter_kernel_log_read"] == [1.0]


def test_an_nvlink_xid_from_before_the_window_is_not_link_evidence_for_the_localizer():
    from opsctl.localize.evidence import recorded_gpu_xids

    # 74 and 149 (NVLink) stay the GPU's xid.recorded checks; 79 and 140 are the GPU's own evidence.
    assert recorded_gpu_xids([149, 79, 74, 140]) == [79, 140]


@pytest.mark.slow
@pytest.mark.parametrize("reload_s, held", [(None, True), (-30, False), (-90, True)])
def test_a_driver_reload_after_the_xid_clears_it_and_one_before_does_not(opsctl, tmp_path, reload_s, held):
    # XID 79 at -60 s; the host's driver loaded again at -30 s (a reboot) clears it; at -90 s it
    # came before the XID, which still stands. The simulator writes the driver's load line.
    reload = "" if reload_s is None else f"  - {{kind: driver_reload, tray: node, at_s: {reload_s}}}\n"
    inventory = sim_inventory(tmp_path, f"faults:\n  - {{kind: xid, gpu: gpu5, xid: 79, at_s: -60}}\n{reload}"
                                        "  - {kind: sxid, part: nvs1, sxid: 20034, fatal: true, at_s: -60}\n")
    result = opsctl("--inventory", inventory, "health", "lab1/node", "--json")
    assert result.code == (1 if held else 0), result.out + result.err
    failed = {(c["component"], c["check"]) for c in result.json()["failing"] if c["verdict"] == "fail"}
    assert failed == ({("gpu5", "xid.recorded"), ("nvs1", "nvswitch.sxid.recorded")} if held else set()), failed


def test_the_simulators_kernel_history_is_in_time_order_with_the_drivers_load_line(hgx_topology):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text
    from probes.sim import SimRack

    spec = compile_rack_spec(scenario_from_text(
        "faults:\n  - {kind: xid, gpu: gpu1, xid: 79, at_s: -60}\n  - {kind: driver_reload, tray: node, at_s: -30}\n"
        "  - {kind: xid, gpu: gpu0, xid: 140, at_s: -10}\n"), hgx_topology)
    rack = SimRack(spec)
    lines, why = rack.kernel_history("node", rack.clock.now())
    assert why is None and [line.split(":", 1)[0] for line in lines] == ["NVRM", "NVRM", "NVRM"]
    assert ": 79," in lines[0] and LOAD.split("  ")[0] in lines[1] and ": 140," in lines[2]
    assert since_driver_load(lines) == [lines[2]]


def reset_line(uuid, success="true"):
    return f"GPU reset executed: {uuid}, success: {success}"  # NVIDIA/NVSentinel gpu-reset/gpu_reset.sh's line


def test_a_successful_reset_clears_what_its_gpu_logged_before_it_and_nothing_else():
    uuids = {0: "GPU-aaaa-0000", 1: "GPU-bbbb-1111"}
    pcis = {0: "00000000:18:00.0", 1: "00000000:2A:00.0"}
    lines = [LOAD, xid_line("0000:18:00", 79), xid_line("0000:2a:00", 95), reset_line("GPU-AAAA-0000"),
             xid_line("0000:18:00", 140)]
    found = recorded_xids(lines, pcis, uuids)
    assert [[e["xid"] for e in found[i]] for i in (0, 1)] == [[140], [95]]  # gpu0: what came after; gpu1: all
    failed = recorded_xids([LOAD, xid_line("0000:18:00", 79), reset_line("GPU-aaaa-0000", "false")], pcis, uuids)
    assert [e["xid"] for e in failed[0]] == [79]  # a reset that failed dealt with nothing
    before = recorded_xids([LOAD, reset_line("GPU-aaaa-0000"), xid_line("0000:18:00", 79)], pcis, uuids)
    assert [e["xid"] for e in before[0]] == [79]
    assert last_resets(lines, uuids) == {0: reset_line("GPU-AAAA-0000")}


def test_the_xid_check_says_which_reset_it_counts_from():
    line = reset_line("GPU-aaaa-0000")
    clean = recorded_xid_checks("gpu0", {"events": [], "unread": None, "reset": line}, catalog())
    assert [c["verdict"] for c in clean] == ["pass"] and line in clean[0]["reason"]
    held = recorded_xid_checks("gpu0", {"events": [{"xid": 79}], "unread": None, "reset": line}, catalog())
    assert [c["verdict"] for c in held] == ["fail"] and f"since the GPU's reset ({line})" in held[0]["reason"]


def shim(folder, name, script):
    """A command `name` in `folder` (the test puts it first on PATH) that runs `script`."""
    path = folder / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


def test_the_journal_is_asked_for_the_kernel_and_roots_reset_lines_in_one_query(tmp_path, monkeypatch):
    # A journalctl on PATH that writes down what it was asked and answers with a reset line.
    asked = tmp_path / "argv"
    shim(tmp_path, "journalctl", f"printf '%s\\n' \"$@\" > {asked}\necho '{reset_line('GPU-aaaa-0000')}'\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    lines, why = read_kernel_history(1_700_000_000.0)
    assert why is None and lines == [reset_line("GPU-aaaa-0000")]
    argv = asked.read_text().split("\n")
    assert argv[:6] == ["-b", "-o", "cat", "--no-pager", "--until", "@1700000000"]
    assert argv[6:10] == ["_TRANSPORT=kernel", "+", "SYSLOG_IDENTIFIER=nvsentinel-gpu-reset",
                          "SYSLOG_IDENTIFIER=opsctl-gpu-reset"] and argv[10] == "_UID=0"


def test_a_journal_with_nothing_of_this_boot_is_no_evidence_the_ring_buffer_decides(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    shim(tmp_path, "journalctl", "exit 0\n")  # answers, with nothing: journald not reading the kernel
    (tmp_path / "ring").write_text(xid_line("0000:18:00", 79) + "\n")
    shim(tmp_path, "dmesg", f"cat {tmp_path / 'ring'}\n")
    assert read_kernel_history(1_700_000_000.0) == ([xid_line("0000:18:00", 79)], None)
    shim(tmp_path, "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1\n")
    lines, why = read_kernel_history(1_700_000_000.0)
    assert lines == [] and "no kernel message of this boot" in why and "Operation not permitted" in why


@pytest.mark.slow
@pytest.mark.parametrize("reset, held", [("at_s: -30", False), ("at_s: -90", True), ("at_s: -30, success: false", True)])
def test_a_gpu_reset_after_the_xid_clears_it_and_one_before_or_failed_does_not(opsctl, tmp_path, reset, held):
    inventory = sim_inventory(tmp_path, "faults:\n  - {kind: xid, gpu: gpu5, xid: 79, at_s: -60}\n"
                                        f"  - {{kind: gpu_reset, gpu: gpu5, {reset}}}\n")
    result = opsctl("--inventory", inventory, "health", "lab1/node", "--json")
    assert result.code == (1 if held else 0), result.out + result.err
    failed = {(c["component"], c["check"]) for c in result.json()["failing"] if c["verdict"] == "fail"}
    assert failed == ({("gpu5", "xid.recorded")} if held else set()), failed
