"""The repair model: action, hours and GPUs idled per part, overridable by the user's file."""

import pytest

from opsctl.errors import InputError
from opsctl.mttr import load_mttr_model
from tests.conftest import REPO, assert_one_line_error


def test_default_repairs_follow_the_published_figures(rack07_topology, hgx_topology):
    model = load_mttr_model()
    tray = model.repair("rack07/ct03", rack07_topology)
    assert tray.action.name == "replace_compute_tray" and 1 <= tray.action.hours["repair_h"] <= 4
    assert tray.gpus_idled == 4 and tray.gpus_lost_to_training == 0  # 8 spares cover a tray
    switch = model.repair("rack07/st3/sw1", rack07_topology)
    assert switch.action.out_of_service == "rack" and switch.gpus_idled == 72 and switch.gpus_lost_to_training == 64
    cartridge = model.repair("rack07/cart2", rack07_topology)
    assert 8 <= cartridge.action.hours["repair_h"] <= 24 and cartridge.mttr_hours > switch.mttr_hours
    assert model.repair("rack07/st3/j0", rack07_topology).action.name == "reseat_switch_tray"
    assert model.repair("rack07/ct03/j0", rack07_topology).action.name == "reseat_compute_tray"
    link = model.repair("rack07/ct03/gpu2/nvl05", rack07_topology)
    assert link.gpus_idled == 4
    board = model.repair("hgx01/gpu3", hgx_topology)
    assert board.action.name == "replace_baseboard" and board.action.hours["repair_h"] < 2 and board.gpus_idled == 8


def test_a_user_file_overrides_one_step(tmp_path, rack07_topology):
    path = tmp_path / "mttr.yaml"
    path.write_text("actions:\n  replace_cartridge:\n    repair_h: 30\n")
    model = load_mttr_model(path)
    assert model.actions["replace_cartridge"].hours["repair_h"] == 30
    assert model.actions["replace_cartridge"].hours["drain_h"] == 0.5  # the rest stays


@pytest.mark.parametrize("text, message", [
    ("actions:\n  reset_gpu:\n    repair_h: -1\n", "repair_h (hours) must be a number at least 0"),
    ("parts:\n  link: teleport\n", "unknown action 'teleport'"),
    ("actions:\n  reset_gpu:\n    out_of_service: planet\n", "out_of_service must be one of"),
    ("bogus: 1\n", "unknown key(s) bogus"),
])
def test_bad_override_files_are_refused(tmp_path, text, message):
    path = tmp_path / "mttr.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        load_mttr_model(path)
    assert message in str(error.value)


@pytest.mark.parametrize("hours, message", [
    (".nan", "must be a finite number, got nan"), (".inf", "must be a finite number, got inf"),
    ("-.inf", "must be a finite number, got -inf"), ("-0.5", "must be a number at least 0 and below 10000, got -0.5"),
    ("10000", "must be a number at least 0 and below 10000, got 10000"),
])
def test_a_repair_time_that_is_no_time_is_refused_in_one_line(opsctl, tmp_path, hours, message):
    path = tmp_path / "mttr.yaml"
    path.write_text(f"actions:\n  replace_switch_tray:\n    repair_h: {hours}\n")
    scenario = REPO / "scenarios" / "llama4-16k-gb200-mtbi2000-spares-charged.yaml"
    assert_one_line_error(opsctl("tco", "run", scenario, "--mttr-config", path), 2,
                          "actions.replace_switch_tray.repair_h (hours)", message)
    path.write_text("actions:\n  replace_switch_tray:\n    repair_h: 9999.5\n")  # just inside the bound: priced
    assert opsctl("tco", "run", scenario, "--mttr-config", path, "--json").code == 0


def test_a_gpu_is_repaired_as_its_xids_call_for(rack07_topology, hgx_topology):
    model = load_mttr_model()
    # Blamed on its links alone: its tray is replaced; on its own XIDs: the XID catalog's action.
    assert model.repair("rack07/ct03/gpu1", rack07_topology).action.name == "replace_compute_tray"
    reset = model.repair("rack07/ct03/gpu1", rack07_topology, "reset")
    assert reset.action.name == "reset_gpu" and reset.gpus_idled == 1 and reset.mttr_hours < 2
    rma = model.repair("rack07/ct03/gpu1", rack07_topology, "rma")
    assert rma.action.name == "rma_gpu" and rma.gpus_idled == 4 and 1 <= rma.action.hours["repair_h"] <= 4
    # An HGX GPU is not replaced alone: the baseboard is.
    assert model.repair("hgx01/gpu2", hgx_topology, "rma").action.name == "replace_baseboard"
    assert model.repair("hgx01/gpu2", hgx_topology, "reset").action.name == "reset_gpu"


def test_the_context_of_a_connector_is_its_tray_unless_given(rack07_topology):
    model = load_mttr_model()
    assert model.repair("rack07/st3/j0", rack07_topology).gpus_idled == 72
    assert model.action_for("connector", "gb200-nvl72", "compute_tray").name == "reseat_compute_tray"
