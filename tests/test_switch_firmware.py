"""NVSwitch firmware in the rack's configuration comparison (opsctl/burnin/switch_firmware.py):
every switch tray's chips run the firmware most of the rack's chips run; an outlier tray fails
with what it should run, no majority is incomplete, one tray alone is not compared; the
simulator's firmware_mismatch on a switch tray sets its chips' firmware and nothing else, and the
failure gets the firmware-update repair with its runbook."""

import pytest

from opsctl.burnin.switch_firmware import switch_firmware_checks
from opsctl.errors import InputError

USUAL, OTHER = "35.2014.1204", "35.2014.1100"


def ports(firmware_by_tray):
    """{(chip id, port): row} of trays st1…, two chips each, two ports a chip."""
    return {(f"rack07/{tray}/sw{chip}", port): {"chip": f"sw{chip}", "switch_port": port, "firmware": version}
            for tray, versions in firmware_by_tray.items() for chip, version in enumerate(versions) for port in (0, 1)}


def verdicts(found):
    return {c.component: c.verdict for c in found}


def test_a_tray_whose_chips_run_another_firmware_fails_with_the_racks_version():
    found = switch_firmware_checks(ports({"st1": [USUAL, USUAL], "st2": [OTHER, OTHER], "st3": [USUAL, USUAL]}))
    assert verdicts(found) == {"rack07/st1": "pass", "rack07/st2": "fail", "rack07/st3": "pass"}
    bad = next(c for c in found if c.component == "rack07/st2")
    assert bad.check == "switch_tray.firmware" and bad.value == {"sw0": OTHER, "sw1": OTHER} and bad.threshold == USUAL
    assert f"4 of the rack's 6 switch chips run {USUAL}" in bad.reason and "opsctl rack rule" in bad.source


def test_one_chip_of_a_tray_differing_fails_its_tray():
    found = switch_firmware_checks(ports({"st1": [USUAL, OTHER], "st2": [USUAL, USUAL]}))
    assert verdicts(found) == {"rack07/st1": "fail", "rack07/st2": "pass"}


def test_no_majority_is_incomplete_and_one_tray_or_no_firmware_is_not_compared():
    assert set(verdicts(switch_firmware_checks(ports({"st1": [USUAL, USUAL], "st2": [OTHER, OTHER]}))).values()) == \
        {"incomplete"}  # half and half: no telling which is right
    assert switch_firmware_checks(ports({"st1": [USUAL, OTHER]})) == []
    assert switch_firmware_checks({("rack07/st1/sw0", 0): {"chip": "sw0"}, ("rack07/st2/sw0", 0): {"chip": "sw0"}}) == []


def test_the_simulators_firmware_mismatch_on_a_switch_tray(rack07_topology):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text
    from probes.sim import SimRack
    from probes.sim.switch import CHIP_FIRMWARE, SimSwitchTray

    spec = compile_rack_spec(scenario_from_text(
        f"faults:\n  - {{kind: firmware_mismatch, tray: st3, switch_firmware: '{OTHER}'}}\n"), rack07_topology)
    rack = SimRack(spec)
    assert {p["firmware"] for p in SimSwitchTray(rack, "st3").read_ports()} == {OTHER}
    assert {p["firmware"] for p in SimSwitchTray(rack, "st4").read_ports()} == {CHIP_FIRMWARE}
    assert all(not gpu.effects for tray in spec.trays for gpu in tray.gpus)  # the compute trays untouched


@pytest.mark.parametrize("fault, message", [
    ("{kind: firmware_mismatch, tray: st3, vbios: x}", "give switch_firmware"),
    ("{kind: firmware_mismatch, tray: ct03, switch_firmware: x}", "give vbios"),
    ("{kind: firmware_mismatch, tray: ct03}", "give vbios"),
    ("{kind: firmware_mismatch, tray: st10, switch_firmware: x}", "unknown compute tray"),
])
def test_the_firmware_a_tray_can_carry_is_the_firmware_of_its_kind(rack07_topology, fault, message):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text

    with pytest.raises(InputError, match=message):
        compile_rack_spec(scenario_from_text(f"faults:\n  - {fault}\n"), rack07_topology)


def test_a_switch_firmware_failure_gets_the_firmware_update_and_its_runbook(rack07_topology):
    from opsctl.localize.gpu_faults import worst_fault
    from opsctl.mttr import load_mttr_model
    from opsctl.runbooks import runbook_for

    fault = worst_fault([{"check": "switch_tray.firmware", "value": {"sw0": OTHER}}])
    repair = load_mttr_model().repair("rack07/st3", rack07_topology, fault.context)
    assert repair.action.name == "update_switch_firmware" and repair.gpus_idled == 72
    assert runbook_for(kind=fault.kind) == "runbooks/switch-firmware.md"
    assert load_mttr_model().repair("rack07/st3", rack07_topology).action.name == "replace_switch_tray"  # a failed tray, as before
