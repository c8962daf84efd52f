"""Fault scenario files: parsed and compiled into effects, or refused with one clear line."""

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opsctl.errors import InputError
from opsctl.inventory import DEFAULT_INVENTORY, load_inventory
from opsctl.simulation import compile_rack_spec, load_scenario
from opsctl.simulation.scenario import FAULT_KINDS, scenario_from_text
from opsctl.simulation.scenario_schema import FAULT_STRUCTS
from probes.sim.spec import RackSpec
from tests.conftest import assert_one_line_error


def compile_text(text, topology):
    return compile_rack_spec(scenario_from_text(text, "s.yaml"), topology)


def effects(spec, gpu_id, port=None):
    for tray in spec.trays:
        for gpu in tray.gpus:
            if gpu.id == gpu_id:
                return gpu.effects if port is None else gpu.links[port].effects
    raise KeyError(gpu_id)


def test_the_seeded_rack07_scenario_compiles(rack07_topology):
    rack = load_inventory(DEFAULT_INVENTORY).rack("rack07")
    spec = compile_rack_spec(load_scenario(rack.scenario), rack07_topology)
    assert spec.rack == "rack07" and spec.sku == "gb200" and len(spec.trays) == 27
    assert [e.kind for e in effects(spec, "rack07/ct05/gpu1", 7)] == ["errors"]
    assert any(e.kind == "sdc" for e in effects(spec, "rack07/ct03/gpu3"))
    pins = [link for tray in spec.trays for gpu in tray.gpus for link in gpu.links
            if any("bad_pins" in e.source for e in link.effects)]
    assert len(pins) == 3 and all(link.port < 9 for link in pins)  # ct12/j2 carries ports 0–8
    # Round trip through JSON, as it travels to a tray.
    assert RackSpec.from_dict(spec.to_dict()) == spec


def test_ids_may_leave_out_the_rack_and_links_may_be_gpu_and_port(rack07_topology):
    a = compile_text("faults:\n  - {kind: link_down, link: rack07/ct02/gpu1/nvl03}\n", rack07_topology)
    b = compile_text("faults:\n  - {kind: link_down, gpu: ct02/gpu1, port: 3}\n", rack07_topology)
    assert a == b
    assert [e.kind for e in effects(a, "rack07/ct02/gpu1", 3)] == ["down"]


def test_a_dropped_link_makes_its_own_gpu_log_the_link_down_xid_and_no_other(rack07_topology):
    # NVIDIA's XID catalog documents no XID that one failing link makes other GPUs log: the
    # simulator injects none.
    spec = compile_text("faults:\n  - {kind: link_down, link: ct02/gpu1/nvl03, start_s: 10}\n", rack07_topology)
    origin = [e.params for e in effects(spec, "rack07/ct02/gpu1") if e.kind == "xid"]
    assert origin == [{"xid": 149, "at_s": 10}]
    others = [e.params for tray in spec.trays for g in tray.gpus if g.id != "rack07/ct02/gpu1"
              for e in g.effects if e.kind == "xid"]
    assert others == []


def test_nvlink5_counter_rates_and_an_xids_recovery_action_are_scenario_keys(rack07_topology):
    text = ("faults:\n  - {kind: link_errors, link: ct02/gpu1/nvl03, rcv_errors_per_s: 0.2, malformed_packet_errors_per_s: 0.2,"
            " buffer_overrun_errors_per_s: 0.2, local_link_integrity_errors_per_s: 0.2, effective_errors_per_s: 0.2,"
            " recovery_failed_per_s: 0.2, recovery_successful_per_s: 0.2}\n"
            "  - {kind: xid, gpu: ct03/gpu0, xid: 154, recovery_action: drain_and_reset}\n")
    spec = compile_text(text, rack07_topology)
    [errors] = [e for e in effects(spec, "rack07/ct02/gpu1", 3) if e.kind == "errors"]
    assert errors.params["rcv_errors_per_s"] == 0.2 and errors.params["recovery_successful_per_s"] == 0.2
    [xid] = [e for e in effects(spec, "rack07/ct03/gpu0") if e.kind == "xid"]
    assert xid.params["recovery_action"] == "drain_and_reset"


def test_a_failed_switch_tray_takes_down_its_144_links(rack07_topology):
    spec = compile_text("faults:\n  - {kind: switch_tray_failed, part: st4}\n", rack07_topology)
    down = [(g.id, link.port) for tray in spec.trays for g in tray.gpus for link in g.links
            if any(e.kind == "down" for e in link.effects)]
    assert len(down) == 144 and {port for _, port in down} == {6, 7}


def test_bad_pins_pick_the_same_links_for_the_same_seed(rack07_topology):
    text = "seed: 3\nfaults:\n  - {kind: bad_pins, part: cart2, fraction: 0.01}\n"
    pick = lambda spec: sorted((g.id, link.port) for tray in spec.trays for g in tray.gpus for link in g.links if link.effects)  # noqa: E731
    first, second = pick(compile_text(text, rack07_topology)), pick(compile_text(text, rack07_topology))
    assert first == second and len(first) == 4  # 1% of cartridge 2's 360 links
    other = pick(compile_text(text.replace("seed: 3", "seed: 4"), rack07_topology))
    assert other != first


def test_an_unreachable_tray_is_marked(rack07_topology):
    spec = compile_text("faults:\n  - {kind: tray_unreachable, tray: ct14}\n", rack07_topology)
    assert [t.name for t in spec.trays if t.unreachable] == ["ct14"]


DL_ON_BLACKWELL = [
    ("faults:\n  - {kind: link_errors, link: ct02/gpu1/nvl03, crc_per_s: 180}\n", "faults[0] (link_errors): crc_per_s:"),
    ("faults:\n  - {kind: link_errors, link: ct02/gpu1/nvl03, replay_per_s: 1, symbol_per_s: 3}\n", "faults[0] (link_errors): replay_per_s:"),
    ("faults:\n  - {kind: bad_pins, part: ct12/j2, links: 2, recovery_per_s: 1}\n", "faults[0] (bad_pins): recovery_per_s:"),
    ("faults:\n  - {kind: link_totals, link: ct02/gpu1/nvl03, crc: 3, replay: 1}\n", "faults[0] (link_totals): crc, replay:"),
    ("noise: {crc_per_s: 0.002, ber: 1.0e-15}\n", "noise: crc_per_s:"),
]


@pytest.mark.parametrize("text, where", DL_ON_BLACKWELL)
def test_a_data_link_counter_asked_of_a_blackwell_rack_is_refused_naming_the_nvlink5_keys(rack07_topology, text, where):
    # NVML removed the data-link counters on Blackwell (change log, v560 to v565): a GB200 would count
    # them where nothing reads them, and NVIDIA documents no NVLink 5 counter as their equivalent.
    with pytest.raises(InputError) as error:
        compile_text(text, rack07_topology)
    message = str(error.value)
    assert message.startswith(f"s.yaml: {where}") and "\n" not in message
    assert "NVML removed the DL counters on Blackwell" in message and "gb200" in message
    assert ("recovery_failed, recovery_successful" if "link_totals" in where else "rcv_errors_per_s" if "noise" not in where
            else "ber") in message


@pytest.mark.parametrize("text, where", DL_ON_BLACKWELL)
def test_an_hgx_rack_takes_the_data_link_keys_as_before(hgx_topology, text, where):
    text = text.replace("ct02/gpu1/nvl03", "gpu1/nvl03").replace("part: ct12/j2", "part: baseboard")
    spec = compile_text(text, hgx_topology)
    key = where.rstrip(":").split(": ")[-1].split(",")[0]  # the first data-link key the Blackwell rack refused
    given = [spec.noise] + [e.params for tray in spec.trays for g in tray.gpus for link in g.links for e in link.effects]
    assert any(key in params for params in given), key


@pytest.mark.parametrize("topology, rates", [("rack07_topology", {"symbol_per_s": 80.0, "rcv_errors_per_s": 40.0, "ber": 2e-10}),
                                             ("hgx_topology", {"crc_per_s": 150.0, "replay_per_s": 1.0, "ber": 2e-10})])
def test_bad_pins_without_rates_count_in_the_racks_own_counters(request, topology, rates):
    topology = request.getfixturevalue(topology)
    part = "ct12/j2" if topology.model.is_nvl72 else "baseboard"
    spec = compile_text(f"faults:\n  - {{kind: bad_pins, part: {part}, links: 2}}\n", topology)
    found = [e.params for tray in spec.trays for g in tray.gpus for link in g.links for e in link.effects]
    assert found == [rates] * 2


def test_a_data_link_key_on_the_cli_is_one_line_and_exit_2(opsctl, tmp_path):
    (tmp_path / "dl.yaml").write_text("faults:\n  - {kind: link_errors, link: ct05/gpu1/nvl07, crc_per_s: 180}\n")
    (tmp_path / "inv.yaml").write_text(
        "all:\n  children:\n    rackx:\n      vars:\n        opsctl_model: gb200-nvl72\n        opsctl_transport: local\n"
        "        opsctl_backend: sim\n        opsctl_scenario: dl.yaml\n      hosts:\n        rackx-ct[01:18]:\n"
        "        rackx-st[1:9]:\n")
    result = opsctl("-i", tmp_path / "inv.yaml", "sim", "faults", "rackx")
    assert_one_line_error(result, 2, "crc_per_s", "symbol_per_s, rcv_errors_per_s", "Blackwell")


BAD_SCENARIOS = [
    ("faults:\n  - {kind: meteor_strike}\n", "faults[0].kind: invalid value 'meteor_strike'"),
    ("faults:\n  - {kind: link_down, link: ct02/gpu9/nvl03}\n", "unknown link"),
    ("faults:\n  - {kind: link_down, gpu: ct02/gpu1, port: 18}\n", "port 18 out of range"),
    ("faults:\n  - {kind: link_errors, link: ct02/gpu1/nvl03, crc_per_s: -1}\n", "faults[0].crc_per_s: expected `float` >= 0.0"),
    ("faults:\n  - {kind: link_errors, link: ct02/gpu1/nvl03, crc_per_s: .nan}\n", "faults[0].crc_per_s: expected `float` >= 0.0"),
    ("faults:\n  - {kind: link_errors, link: ct02/gpu1/nvl03, speed: 3}\n", "faults[0]: object contains unknown field `speed`"),
    ("faults:\n  - {kind: slow_gpu, gpu: ct02/gpu1}\n", "faults[0]: object missing required field `factor`"),
    ("faults:\n  - {kind: slow_gpu, gpu: ct02/gpu1, factor: 1.5}\n", "faults[0].factor: expected `float` <= 1.0"),
    ("faults:\n  - {kind: sdc, gpu: ct02/gpu1, probability: yes}\n", "faults[0].probability: expected `float`, got `bool`"),
    ("faults:\n  - {kind: switch_chip_failed, part: st2}\n", "is a switch_tray, expected a switch_chip"),
    ("faults:\n  - {kind: link_flap, link: ct02/gpu1/nvl03, period_s: 5, down_s: 9}\n", "down_s must be shorter"),
    ("faults:\n  - {kind: not_supported, gpu: all, calls: [nvmlDeviceGetWarpSpeed]}\n", "unknown NVML call"),
    ("faults:\n  - {kind: tray_unreachable, tray: ct44}\n", "unknown tray"),
    ("faults: {kind: link_down}\n", "faults: expected `array | null`, got `object`"),
    ("seed: seven\n", "seed: expected `int`, got `str`"),
    ("rack: rack08\n", "written for rack rack08"),
    ("faultz: []\n", "object contains unknown field `faultz`"),
]


@pytest.mark.parametrize("text, message", BAD_SCENARIOS)
def test_bad_scenarios_name_the_fault_and_key(rack07_topology, text, message):
    with pytest.raises(InputError) as error:
        compile_text(text, rack07_topology)
    assert message in str(error.value) and str(error.value).startswith("s.yaml")


# Generated scenarios: any mix of known and unknown keys and values compiles or is an InputError.
_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 100), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=8), st.sampled_from(["ct02/gpu1/nvl03", "ct05/gpu0", "st3/sw1", "cart1", "ct07", "all"]),
                    st.lists(st.sampled_from(["nvmlDeviceGetPowerUsage", "NVML_FI_DEV_NVLINK_COUNT_SYMBOL_BER", "x"]), max_size=2))
_fault_keys = sorted({k for struct in FAULT_STRUCTS.values() for k in struct.__struct_fields__} | {"bogus"})
_faults = st.fixed_dictionaries({"kind": st.sampled_from(sorted(FAULT_KINDS) + ["nope"])},
                                optional={k: _values for k in _fault_keys})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(faults=st.lists(_faults, max_size=4), seed=st.one_of(st.integers(0, 10**6), st.text(max_size=3)))
@pytest.mark.slow
def test_generated_scenarios_compile_or_fail_cleanly(rack07_topology, faults, seed):
    text = yaml.safe_dump({"seed": seed, "faults": faults})
    try:
        compile_text(text, rack07_topology)
    except InputError as error:
        assert "\n" not in str(error) and str(error).startswith("s.yaml")


def test_every_fault_kind_of_the_format_has_one_handler_in_the_compiler():
    from opsctl.simulation.compiler import FAULT_HANDLERS
    from opsctl.simulation.scenario import FAULT_KINDS

    assert set(FAULT_HANDLERS) == set(FAULT_KINDS)


def test_every_fault_kind_has_its_schema_naming_its_target():
    from opsctl.simulation.scenario_schema import TARGET_FIELDS

    assert set(FAULT_STRUCTS) == set(FAULT_KINDS)
    for kind, target in FAULT_KINDS.items():
        fields = set(FAULT_STRUCTS[kind].__struct_fields__) & set(TARGET_FIELDS)
        assert fields == {"link": {"link", "gpu", "port"}, None: set()}.get(target, {target}), kind


@pytest.mark.parametrize("fault, message", [
    ("{kind: link_down, link: ct02/gpu1/nvl03, start_s: 5, end_s: 5}", "end_s must be after start_s"),
    ("{kind: link_flap, link: ct02/gpu1/nvl03, period_s: 5, down_s: 5}", "down_s must be shorter than period_s"),
    ("{kind: bad_pins, part: cart1, links: 2, fraction: 0.5}", "give links or fraction, not both"),
    ("{kind: bad_pins, part: cart1, links: 0}", "faults[0].links: expected `int` >= 1"),
    ("{kind: link_degraded, gpu: ct02/gpu1, factor: 0.5}", "give link (an id) or gpu and port"),
    ("{kind: hbm_bad_cells, gpu: ct02/gpu1, offset_gib: 1, size_mib: 0}", "faults[0].size_mib: expected `float` > 0.0"),
    ("{kind: pcie_degraded, gpu: ct02/gpu1, width: 3}", "faults[0].width: invalid enum value 3"),
    ("{kind: xid, gpu: ct02/gpu1, xid: 4294967296}", "faults[0].xid: expected `int` <= 4294967295"),
])
def test_the_rules_between_keys_and_the_bounds_are_one_line(fault, message):
    with pytest.raises(InputError) as error:
        scenario_from_text(f"faults:\n  - {fault}\n", "s.yaml")
    assert message in str(error.value) and str(error.value).startswith("s.yaml") and "\n" not in str(error.value)


def test_the_bounds_themselves_are_accepted():
    scenario = scenario_from_text("faults:\n  - {kind: link_down, link: ct02/gpu1/nvl03, start_s: 5, end_s: 5.001}\n"
                                  "  - {kind: slow_gpu, gpu: ct02/gpu1, factor: 1}\n"
                                  "  - {kind: bad_pins, part: cart1, links: 1}\n"
                                  "  - {kind: xid, gpu: ct02/gpu1, xid: 4294967295}\n")
    assert [fault.params for fault in scenario.faults] == [{"start_s": 5.0, "end_s": 5.001}, {"factor": 1.0}, {"links": 1},
                                                          {"xid": 4294967295}]
