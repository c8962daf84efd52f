"""Fault localization on simulated racks: each snapshot is taken by the tray's own snapshot code
over the simulated NVML, then localized. What must hold: the right part first with a high
score, nothing blamed on a healthy rack, an NVLink XID pointing at its own GPU's links, unread trays
neither healthy nor faulty, Occam both ways, and every suspect saying what to do."""

import json
from pathlib import Path

import pytest

from opsctl.localize import localize_snapshot, localize_verdicts
from opsctl.localize.evidence import nvlink_xid_gpus
from bench.simulated_snapshots import TraySnapshotCache, simulated_snapshot
from opsctl.simulation import compile_rack_spec
from opsctl.simulation.scenario import load_scenario, scenario_from_text

REPO = Path(__file__).resolve().parent.parent
WINDOW_S = 60.0
_CACHE = TraySnapshotCache()  # trays a fault leaves alone are read once for the whole module


def snapshot_of(text, topology, window_s=WINDOW_S):
    spec = compile_rack_spec(scenario_from_text(text), topology)
    return simulated_snapshot(spec, window_s, _CACHE)


def faults_of(result):
    return [s for s in result["suspects"] if "alternative_to" not in s]


def declared(result):
    return {s["component"] for s in faults_of(result)}


@pytest.fixture(scope="module")
def seeded(rack07_topology):
    spec = compile_rack_spec(load_scenario(REPO / "opsctl/data/scenarios/rack07-seeded.yaml"), rack07_topology)
    return localize_snapshot(simulated_snapshot(spec, WINDOW_S, _CACHE), rack07_topology)


REMAP = "rack07/ct17/gpu1"  # rack07's pending row remap: no load needed to see it


@pytest.mark.slow
def test_the_seeded_rack_names_its_three_link_faults(seeded):
    # rack07's scenario: a marginal cable, bent pins in ct12/j2 on 3 links, a flapping link; and
    # the GPU whose row remap is pending (a snapshot sees it; the others need load).
    assert declared(seeded) == {"rack07/ct05/gpu1/nvl07", "rack07/ct12/j2", "rack07/ct07/gpu0/nvl13", REMAP}
    assert all(s["score"] > 0.9 for s in faults_of(seeded))
    connector = next(s for s in faults_of(seeded) if s["kind"] == "connector")
    assert len(connector["links"]) == 3 and connector["links_through"] == 18
    assert seeded["status"] == "faulty" and not seeded["healthy"]


@pytest.mark.slow
def test_the_flapping_links_xid_points_at_its_link_not_its_gpu(seeded):
    # The flap makes its own GPU log XID 149 (and nothing else logs one: NVIDIA documents no echo).
    assert seeded["xids"]["nvlink_xid_gpus"] == ["rack07/ct07/gpu0"]
    assert [s["component"] for s in seeded["suspects"] if s["kind"] == "gpu"] == [REMAP]


@pytest.mark.slow
def test_every_suspect_says_what_to_do_and_why(seeded):
    for s in seeded["suspects"]:
        assert s["action"] and s["mttr_hours"] > 0 and s["gpus_lost_to_training"] == 0
        assert s["gpus_idled"] == (1 if s["component"] == REMAP else 4)
        assert sum(s["mttr_steps"].values()) == pytest.approx(s["mttr_hours"], abs=0.01)
        assert (REPO / s["runbook"]).is_file()
        judged = s["judgement"]
        if s["component"] == REMAP:  # a fault by the rulebook's judgment, not by inference
            assert judged["value"] == s["score"] == 1.0 and "rules.yaml" in judged["source"]
        else:
            assert judged["value"] == s["score"] and judged["threshold"] == 0.5 and "DCGM" in judged["source"]
        assert s["evidence"] and ("rack07/" in s["evidence"][0] or s["evidence"][0].startswith("failed memory.remapped_rows"))
    flap = next(s for s in seeded["suspects"] if s["component"] == "rack07/ct07/gpu0/nvl13")
    # No reading tells a link from its four cables: they are named, so the technician knows which.
    assert len(flap["same_links_as"]) == 4 and all(c.startswith("rack07/cart") for c in flap["same_links_as"])
    assert "drops" in flap["evidence"][0] and "at the GPU end" in flap["evidence"][0] and "at the switch end" in flap["evidence"][0]


# Links differ (the simulator spreads each link's noise lognormally, σ 0.6): at 10 CRC errors a second
# the noisiest of an HGX's 144 links stays below DCGM's 100/s, and at a BER of 1e-13 the noisiest of an
# NVL72's 1,296 below its 1e-12. An NVLink 5 link has no in-spec counted error (DCGM fails any), nor a
# data-link CRC counter: its noise is its BER alone.
@pytest.mark.slow
@pytest.mark.parametrize("rack, noise, field, links", [
    ("hgx", "{crc_per_s: 0.002}", "crc_errors", 144), ("hgx", "{crc_per_s: 10.0, ber: 1.0e-13}", "crc_errors", 144),
    ("rack07", "{ber: 1.0e-15}", "effective_ber", 1296), ("rack07", "{ber: 1.0e-13}", "effective_ber", 1296)])
def test_a_healthy_rack_has_no_suspects_even_with_in_spec_noise(rack07_topology, hgx_topology, rack, noise, field, links):
    topology = rack07_topology if rack == "rack07" else hgx_topology
    snap = snapshot_of(f"seed: 1\nnoise: {noise}\n", topology)
    noisiest = max(link.get(field, 0) for link in snap["links"])
    result = localize_snapshot(snap, topology)
    assert result["suspects"] == [] and result["status"] == "healthy" and result["healthy"]
    assert result["observed"]["links"] == links and noisiest > 0  # noise was there to be ignored


@pytest.mark.slow
def test_a_failed_switch_chip_is_one_fault_not_72(rack07_topology):
    result = localize_snapshot(snapshot_of("seed: 1\nfaults:\n  - {kind: switch_chip_failed, part: st4/sw1, start_s: 5}\n",
                                           rack07_topology), rack07_topology)
    (chip,) = faults_of(result)
    assert chip["component"] == "rack07/st4/sw1" and chip["score"] > 0.95 and len(chip["links"]) == 72
    assert chip["repair"] == "replace_switch_tray" and chip["gpus_idled"] == 72 and chip["gpus_lost_to_training"] == 64
    assert chip["runbook"] == "runbooks/switch-chip.md"
    assert len(result["xids"]["nvlink_xid_gpus"]) == 72  # every GPU lost port 7 at once


@pytest.mark.slow
def test_partial_symptoms_on_a_cartridge_blame_the_cartridge(rack07_topology):
    result = localize_snapshot(snapshot_of("seed: 1\nfaults:\n  - {kind: bad_pins, part: cart2, links: 14}\n", rack07_topology),
                               rack07_topology)
    (cartridge,) = faults_of(result)
    assert cartridge["component"] == "rack07/cart2" and len(cartridge["links"]) == 14 and cartridge["links_through"] == 360
    assert cartridge["repair"] == "replace_cartridge" and 8 <= cartridge["mttr_steps"]["repair_h"] <= 24


@pytest.mark.slow
def test_three_unrelated_links_in_one_cartridge_stay_three_links(rack07_topology):
    """Occam the other way: three bad links with no smaller part in common are three faults,
    not the 360-link cartridge they happen to share."""
    cart2 = set(rack07_topology.components["rack07/cart2"].links)
    chosen, trays, chips = [], set(), set()
    for link_id in sorted(cart2):
        link = rack07_topology.links[link_id]
        if link.tray not in trays and link.switch_tray not in chips:
            chosen.append(link_id)
            trays.add(link.tray)
            chips.add(link.switch_tray)
        if len(chosen) == 3:
            break
    text = "seed: 1\nfaults:\n" + "".join(
        f"  - {{kind: link_errors, link: {link.split('/', 1)[1]}, symbol_per_s: 40, rcv_errors_per_s: 20}}\n" for link in chosen)
    result = localize_snapshot(snapshot_of(text, rack07_topology), rack07_topology)
    assert declared(result) == set(chosen)


@pytest.mark.slow
def test_a_lost_gpu_is_rebooted_as_its_xid_79_says(rack07_topology):
    # The lost GPU logs XID 79: the catalog's RESTART_BM (nvidia-smi -r cannot reach a GPU off the bus).
    result = localize_snapshot(snapshot_of("seed: 1\nfaults:\n  - {kind: gpu_lost, gpu: ct09/gpu2, start_s: 3}\n", rack07_topology),
                               rack07_topology)
    (gpu,) = faults_of(result)
    assert gpu["component"] == "rack07/ct09/gpu2" and gpu["score"] > 0.95
    assert gpu["repair"] == "reboot_machine" and gpu["gpus_idled"] == 4 and gpu["runbook"] == "runbooks/xid-79-fell-off-bus.md"
    assert any("did not answer" in line for line in gpu["evidence"])


@pytest.mark.slow
@pytest.mark.parametrize("fault, action, runbook", [
    ("{kind: xid, gpu: ct11/gpu1, xid: 119, at_s: 4}", "reset_gpu", "runbooks/xid-gsp.md"),
    # XID 64, row remap failure: the catalog's immediate bucket is RESET_GPU (then CONTACT_SUPPORT).
    ("{kind: row_remap, gpu: ct11/gpu1, uncorrected_rows: 1, failure: true}", "reset_gpu", "runbooks/xid-memory.md"),
])
def test_a_gpu_blamed_on_its_own_xid_gets_the_catalogs_action(rack07_topology, fault, action, runbook):
    result = localize_snapshot(snapshot_of(f"seed: 1\nfaults:\n  - {fault}\n", rack07_topology), rack07_topology)
    (gpu,) = faults_of(result)
    assert gpu["component"] == "rack07/ct11/gpu1" and gpu["links"] == [] and gpu["share_of_links_bad"] < 0.05
    assert gpu["repair"] == action and gpu["runbook"] == runbook


@pytest.mark.slow
def test_two_faults_at_once(rack07_topology):
    text = ("seed: 1\nfaults:\n  - {kind: switch_chip_failed, part: st2/sw0}\n"
            "  - {kind: bad_pins, part: ct15/j1, links: 4, symbol_per_s: 50, rcv_errors_per_s: 25}\n")
    result = localize_snapshot(snapshot_of(text, rack07_topology), rack07_topology)
    assert declared(result) == {"rack07/st2/sw0", "rack07/ct15/j1"}


def test_an_unread_tray_is_reported_and_the_fault_elsewhere_still_found(rack07_topology, opsctl, tmp_path):
    text = ("seed: 1\nfaults:\n  - {kind: tray_unreachable, tray: ct03}\n"
            "  - {kind: link_errors, link: ct10/gpu3/nvl11, symbol_per_s: 30, rcv_errors_per_s: 15}\n")
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snapshot_of(text, rack07_topology)))
    result = opsctl("localize", path, "--json")
    assert result.code == 1  # a suspect: exit 1 even though a tray was not read
    rack = result.json()["racks"][0]
    assert declared(rack) == {"rack07/ct10/gpu3/nvl11"}
    assert rack["unread_trays"] == ["ct03"] and rack["observed"]["gpus_answered"] == 68
    # ct03's links were still seen from their switch ends.
    assert rack["observed"]["links"] == 1296 and rack["observed"]["switch_side_links"] == 1296


def test_switch_side_counters_find_a_fault_on_an_unread_compute_tray(rack07_topology):
    text = ("seed: 1\nfaults:\n  - {kind: tray_unreachable, tray: ct05}\n"
            "  - {kind: link_flap, link: ct05/gpu2/nvl03, start_s: 2, period_s: 20, down_s: 2}\n")
    result = localize_snapshot(snapshot_of(text, rack07_topology), rack07_topology)
    (link,) = faults_of(result)
    assert link["component"] == "rack07/ct05/gpu2/nvl03" and "at the switch end" in link["evidence"][0]
    assert "GPU end" not in link["evidence"][0] and result["unread_trays"] == ["ct05"]


def test_a_fault_no_one_could_read_is_incomplete_never_healthy(rack07_topology, opsctl, tmp_path):
    """ct05 flaps a link and neither of its ends (ct05, switch tray st2) can be read. Nothing may
    be blamed on the GPUs that were read, and the rack is not called healthy: exit 3."""
    text = ("seed: 1\nfaults:\n  - {kind: tray_unreachable, tray: ct05}\n  - {kind: tray_unreachable, tray: st2}\n"
            "  - {kind: link_flap, link: ct05/gpu2/nvl03, start_s: 2, period_s: 20, down_s: 2}\n")
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snapshot_of(text, rack07_topology)))
    result = opsctl("localize", path, "--json")
    assert result.code == 3
    rack = result.json()["racks"][0]
    assert rack["suspects"] == [] and rack["status"] == "incomplete" and not rack["healthy"]
    assert rack["xids"]["nvlink_xid_gpus"] == []
    assert rack["unread_trays"] == ["ct05", "st2"]
    human = opsctl("localize", path)
    assert human.code == 3 and "not read" in human.out and "ct05, st2" in human.out


def test_hgx_faults_are_repaired_with_the_baseboard(hgx_topology):
    result = localize_snapshot(snapshot_of("seed: 1\nfaults:\n  - {kind: link_down, link: gpu5/nvl07, start_s: 2}\n", hgx_topology),
                               hgx_topology)
    (link,) = faults_of(result)
    assert link["component"] == "hgx01/gpu5/nvl07" and link["repair"] == "replace_baseboard" and link["gpus_idled"] == 8


def test_localizing_from_a_judges_verdicts(rack07_topology):
    """Burn-in hands over per-link verdicts instead of counters."""
    connector = rack07_topology.components["rack07/ct08/j1"]
    verdicts = {link: "pass" for link in rack07_topology.links}
    for link in connector.links[:3]:
        verdicts[link] = "fail"
    result = localize_verdicts(rack07_topology, verdicts)
    assert declared(result) == {"rack07/ct08/j1"}
    assert localize_verdicts(rack07_topology, {link: "pass" for link in rack07_topology.links})["suspects"] == []


def test_every_gpu_that_logs_an_nvlink_xid_points_at_its_own_links():
    t = 1_767_225_600.0
    # No first-to-log rule: NVIDIA's catalog documents no XID that one link makes other GPUs log.
    events = {5: [(149, t)], 6: [(145, t + 0.4)], 7: [(13, t + 2.1)], 9: [(74, None)]}
    assert nvlink_xid_gpus(events) == {5, 6, 9}  # 13 is an application's fault, not an NVLink XID
