"""The link-health snapshot of a tray, and the switch trays that see the same links from the
other end: in code on a simulated clock, and as `python -m probes snapshot|run`."""

import json
import subprocess
import sys

import numpy as np
import pytest

from probes.sim import SimNvml
from probes.sim.switch import SimSwitchTray
from probes.snapshot import take_snapshot
from probes.switch_reader import SimSwitchReader, switch_window

# rack07's marginal cable, in the NVLink 5 counters a GB200 reports (it has no data-link CRC or replay counter).
SEEDED = """
seed: 7
faults:
  - {kind: link_errors, link: ct05/gpu1/nvl07, symbol_per_s: 12, rcv_errors_per_s: 6, ber: 3.0e-11}
  - {kind: link_flap, link: ct07/gpu0/nvl13, start_s: 2, period_s: 30, down_s: 2}
"""


def probe(*args, stdin=None):
    proc = subprocess.run([sys.executable, "-m", "probes", *map(str, args)], capture_output=True, text=True,
                          input=stdin, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_ten_minute_snapshot_on_a_simulated_clock(sim_rack):
    rack = sim_rack(SEEDED)
    nvml = SimNvml(rack, "ct05")
    nvml.nvmlInit()
    document = take_snapshot(nvml, 600, clock=rack.clock, tray="ct05")
    assert rack.now() == pytest.approx(600)  # only the window moved the clock
    assert (document["format"], document["kind"], document["tray"], document["window_seconds"]) == \
        ("opsctl-probe/1", "snapshot", "ct05", 600.0)
    assert len(document["links"]) == 4 * 18
    bad = next(row for row in document["links"] if (row["gpu"], row["port"]) == (1, 7))
    assert bad["symbol_errors"] == pytest.approx(7_200, abs=1) and bad["rcv_errors"] == pytest.approx(3_600, abs=1)
    assert bad["side"] == "gpu" and bad["state"] == "up" and bad["link_down_events"] == 0
    others = [row for row in document["links"] if (row["gpu"], row["port"]) != (1, 7)]
    assert all(row["symbol_errors"] == 0 and row["rcv_errors"] == 0 and row["effective_errors"] == 0 for row in others)
    # Blackwell has no data-link counters (NVML change log, v565): the rows carry none, not zeros.
    assert not any({"crc_errors", "replay_errors", "recovery_errors"} & row.keys() for row in document["links"])
    # The flapping link on ct07 logs its XID on ct07 only: ct05's GPUs log nothing for it.
    assert all(gpu["reachable"] and gpu["xids"] == [] for gpu in document["gpus"])
    # The snapshot carries the effective BER NVLink 5 reports, so triage can judge it.
    assert bad["effective_ber"] == pytest.approx(3.0e-11, rel=0.01)


def test_a_snapshot_carries_what_dcgms_nvlink5_window_reads(sim_rack, rack07_topology):
    """Every GPU-end row has the recovery event total, the RX remote and general errors and the
    symbol BER as NVML packs it; a successful recovery fails its link in the localizer; the GPU's
    NVLink data ECC total, which names no link, is the GPU's own failed check."""
    from opsctl.localize import localize_snapshot
    from opsctl.localize.snapshot import assemble_snapshot
    from opsctl.rack_models import MODELS

    rack = sim_rack("seed: 7\nfaults:\n  - {kind: link_errors, link: ct05/gpu2/nvl04, recovery_successful_per_s: 0.05}\n"
                    "  - {kind: link_errors, link: ct05/gpu3/nvl11, ecc_data_errors_per_s: 0.05}\n")
    nvml = SimNvml(rack, "ct05")
    nvml.nvmlInit()
    switch = SimSwitchReader(SimSwitchTray(rack, "st3"))  # port 4 lands on chip 4: st3/sw0
    before = switch.read()
    document = take_snapshot(nvml, 100, clock=rack.clock, tray="ct05")
    for row in document["links"]:
        assert {"recovery_events", "rcv_remote_errors", "rcv_general_errors", "symbol_ber_raw"} <= row.keys()
    # A recovery retrains the link, so its switch end counts it too (the simulator's model).
    far = next(row for row in switch_window(before, switch.read()) if row["link"] == "ct05/gpu2/nvl04")
    assert far["deltas"]["recovery_successful"] == far["deltas"]["recovery_events"] == 5
    recovered = next(row for row in document["links"] if (row["gpu"], row["port"]) == (2, 4))
    assert recovered["recovery_successful"] == recovered["recovery_events"] == 5 and recovered["link_down_events"] == 0
    assert [gpu["failed_checks"] for gpu in document["gpus"][:3]] == [[], [], []]
    [ecc] = document["gpus"][3]["failed_checks"]
    assert ecc["check"] == "nvlink.gpu.ecc_data_errors" and ecc["value"] == 5
    snapshot = assemble_snapshot("rack07", MODELS["gb200-nvl72"], 100.0, {"ct05": document}, {})
    found = {s["component"]: s for s in localize_snapshot(snapshot, rack07_topology)["suspects"] if "alternative_to" not in s}
    assert set(found) == {"rack07/ct05/gpu2/nvl04", "rack07/ct05/gpu3"}
    assert found["rack07/ct05/gpu3"]["repair"] == "reset_gpu_nvlink"  # the NVLink workflow's first step


def test_a_lost_gpu_is_unreachable_with_no_links(sim_rack):
    rack = sim_rack("faults: [{kind: gpu_lost, gpu: ct02/gpu3, start_s: 5}]")
    nvml = SimNvml(rack, "ct02")
    nvml.nvmlInit()
    document = take_snapshot(nvml, 60, clock=rack.clock)
    assert [gpu["reachable"] for gpu in document["gpus"]] == [True, True, True, False]
    assert {row["gpu"] for row in document["links"]} == {0, 1, 2}
    # XID 79 was logged as the GPU fell off the bus, inside the window.
    assert [x["xid"] for x in document["gpus"][3]["xids"]] == [79]
    assert document["gpus"][3]["xids"][0]["time"] - rack.epoch == pytest.approx(5)


def test_the_switch_end_of_a_link_counts_what_the_gpu_end_counts(sim_rack):
    rack = sim_rack(SEEDED)
    switch = SimSwitchReader(SimSwitchTray(rack, "st4"))  # port 7 lands on chip 7: st4/sw1
    nvml = SimNvml(rack, "ct05")
    nvml.nvmlInit()
    before = switch.read()
    gpu_side = take_snapshot(nvml, 100, clock=rack.clock)
    rows = switch_window(before, switch.read())
    assert len(rows) == 2 * 72 and {row["chip"] for row in rows} == {"sw0", "sw1"}
    seen = next(row for row in rows if row["link"] == "ct05/gpu1/nvl07")
    gpu_row = next(row for row in gpu_side["links"] if (row["gpu"], row["port"]) == (1, 7))
    assert seen["side"] == "switch" and seen["chip"] == "sw1" and seen["switch_port"] == 17  # rack GPU index 17
    assert seen["peer_gpu"] == "ct05/gpu1" and seen["peer_port"] == 7
    for counter in ("symbol_errors", "rcv_errors"):
        assert gpu_row[counter] > 0 and seen["deltas"][counter] == pytest.approx(gpu_row[counter], abs=1)
    assert not {"crc_errors", "replay_errors", "recovery_errors"} & seen["deltas"].keys()  # as the GPU end
    assert seen["effective_ber"] == pytest.approx(3e-11)


def test_the_probes_documents_assembled_are_read_by_the_snapshot_reader(sim_rack):
    """A compute tray's and a switch tray's documents, assembled as `opsctl snapshot` does, fit
    the snapshot schema (it refuses any key it does not know) and both ends of the bad link read."""
    from opsctl.localize.evidence import COUNTERS
    from opsctl.localize.parts import part_index_for
    from opsctl.localize.snapshot import assemble_snapshot, checked_snapshot, parse_snapshot
    from opsctl.rack_models import MODELS
    from probes.snapshot import take_switch_snapshot

    rack = sim_rack(SEEDED)
    nvml = SimNvml(rack, "ct05")
    nvml.nvmlInit()
    documents = {"ct05": take_snapshot(nvml, 100, clock=rack.clock, tray="ct05"),
                 "st4": take_switch_snapshot(SimSwitchReader(SimSwitchTray(rack, "st4")), 100, clock=rack.clock, tray="st4")}
    model = MODELS["gb200-nvl72"]
    index = part_index_for(model)
    document = assemble_snapshot("rack07", model, 100.0, documents, {})
    observation = parse_snapshot(checked_snapshot(document, "assembled"), "assembled", index)
    gpu_end, switch_end = observation.sides["gpu"], observation.sides["switch"]
    link, rcv = index.link_index["ct05/gpu1/nvl07"], COUNTERS.index("rcv_errors")
    assert gpu_end.observed.sum() == 4 * 18 and switch_end.observed.sum() == 2 * 72 and switch_end.observed[link]
    assert gpu_end.counts[link, rcv] == pytest.approx(600, abs=1)  # 6 receive errors a second over 100 s
    assert switch_end.counts[link, rcv] == pytest.approx(gpu_end.counts[link, rcv], abs=1)
    assert np.isnan(gpu_end.counts[:, COUNTERS.index("crc_errors")]).all()  # not reported: not read, never 0


@pytest.mark.slow
def test_switch_trays_from_the_command_line(tmp_path, rack07_topology):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(compile_rack_spec(scenario_from_text(SEEDED), rack07_topology).to_dict()))
    code, out, err = probe("run", "--backend", "sim", "--sim-spec", spec, "--tray", "st4", "--duration", "1", "--json")
    assert code == 1, err
    run = json.loads(out)
    assert run["gpus"] == [] and len(run["switch_links"]) == 144 and run["system"]["switch_tray"]
    failed = [c for c in run["checks"] if c["verdict"] == "fail"]
    assert failed and all(c["component"] == "sw1" and c["link"] == "ct05/gpu1/nvl07" and c["switch_port"] == 17
                          for c in failed)
    assert {c["check"] for c in failed} >= {"nvlink.symbol_errors", "nvlink.rcv_errors", "nvlink.effective_ber"}
    code, out, err = probe("snapshot", "--backend", "sim", "--sim-spec", spec, "--tray", "st7", "--window", "1", "--json")
    assert code == 0, err
    snapshot = json.loads(out)
    assert all(row["side"] == "switch" and "gpu" not in row and "port" not in row for row in snapshot["links"])
    flap = next(row for row in snapshot["links"] if row["link"] == "ct07/gpu0/nvl13")
    assert flap["chip"] == "sw1" and flap["peer_gpu"] == "ct07/gpu0"


def test_a_real_switch_tray_says_it_cannot_be_read():
    code, out, err = probe("run", "--tray", "st3", "--duration", "1", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["switch"]["supported"] is False and "NVOS" in document["switch"]["reason"]
    assert document["checks"] == [] and document["skipped"][0]["what"] == "switch ports"
    code, out, err = probe("snapshot", "--tray", "st3", "--window", "1", "--json")
    assert code == 0 and json.loads(out)["links"] == [] and json.loads(out)["switch"]["supported"] is False


@pytest.mark.slow
def test_the_snapshot_command_on_a_compute_tray(tmp_path, rack07_topology):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text

    spec = json.dumps(compile_rack_spec(scenario_from_text(SEEDED), rack07_topology).to_dict())
    code, out, err = probe("snapshot", "--backend", "sim", "--sim-spec", "-", "--tray", "ct05", "--window", "2",
                           "--json", stdin=spec)
    assert code == 0, err
    document = json.loads(out)
    # The window is measured: at least the 2 s asked for, longer on a loaded machine; the count is
    # the link's 12 symbol errors a second over the window as it was.
    window = document["window_seconds"]
    assert document["tray"] == "ct05" and 2.0 <= window < 10
    # A GPU's counts are over its own window (its two readings), which a loaded machine may stretch
    # past the tray's median.
    own = next(gpu["window_seconds"] for gpu in document["gpus"] if gpu["gpu"] == 1)
    bad = next(row for row in document["links"] if (row["gpu"], row["port"]) == (1, 7))
    assert 2.0 <= own < 10 and 10 <= bad["symbol_errors"] / own <= 14
    code, out, err = probe("snapshot", "--backend", "sim", "--sim-spec", "-", "--tray", "ct05", "--window", "1", stdin=spec)
    assert code == 0 and "snapshot of tray ct05" in out and "'port': 7" in out  # the summary names the bad link
