"""The inventory: Ansible YAML, validated; each mistake one clear error naming file and host."""

import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opsctl.errors import InputError
from opsctl.inventory import DEFAULT_INVENTORY, load_inventory
from tests.conftest import assert_one_line_error


def write(tmp_path, text, name="inventory.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_default_inventory_has_the_simulated_racks():
    inventory = load_inventory(DEFAULT_INVENTORY)
    rack07 = inventory.rack("rack07")
    assert rack07.model.name == "gb200-nvl72" and rack07.backend == "sim" and rack07.transport == "local"
    assert [t.name for t in rack07.trays][:2] == ["ct01", "ct02"] and len(rack07.trays) == 27
    assert rack07.missing_trays == [] and rack07.scenario.exists()
    hgx = inventory.rack("hgx01")
    assert hgx.model.name == "hgx-h100" and [t.name for t in hgx.trays] == ["node"]


def test_ranges_group_vars_and_host_vars(tmp_path):
    path = write(tmp_path, """
        all:
          vars:
            opsctl_transport: ssh
          children:
            fleet:
              vars:
                opsctl_model: gb200-nvl72
              children:
                r1:
                  hosts:
                    r1-ct[01:18]:
                      ansible_user: ops
                    r1-st[1:9]:
                    spare-host:
                      opsctl_tray: st9
                      ansible_host: 10.0.0.9
                      ansible_port: 2222
    """)
    with pytest.raises(InputError, match="hosts r1-st9 and spare-host are both tray st9"):
        load_inventory(path)
    path = write(tmp_path, """
        all:
          vars: {opsctl_transport: ssh}
          children:
            r1:
              vars: {opsctl_model: gb200-nvl72}
              hosts:
                r1-ct[01:17]: {ansible_user: ops}
                node-x: {opsctl_tray: st1, ansible_host: 10.0.0.9, ansible_port: 2222}
    """)
    rack = load_inventory(path).rack("r1")
    assert rack.transport == "ssh" and rack.backend == "nvml"
    assert rack.tray("ct17").user == "ops" and rack.tray("ct17").address == "r1-ct17"
    st1 = rack.tray("st1")
    assert (st1.host, st1.address, st1.port, st1.is_switch) == ("node-x", "10.0.0.9", 2222, True)
    assert rack.missing_trays == ["ct18", "st2", "st3", "st4", "st5", "st6", "st7", "st8", "st9"]


BAD_INVENTORIES = [
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb300}\n      hosts: {r1-ct01: }\n", "group r1: vars.opsctl_model: invalid enum value 'gb300'"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts: {r1-xx: }\n", "host r1-xx: set opsctl_tray"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts: {r1-ct19: }\n", "host r1-ct19"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts: {'bad host': }\n", "host 'bad host' is not a valid name"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72, opsctl_modle: x}\n      hosts: {r1-ct01: }\n", "unknown variable opsctl_modle"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72, opsctl_transport: telnet}\n      hosts: {r1-ct01: }\n", "group r1: vars.opsctl_transport: invalid enum value 'telnet'"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts: {r1-ct01: {ansible_port: 70000}}\n", "host r1-ct01: ansible_port: expected `int` <= 65535"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts: {r1-ct01: {ansible_host: 'a;b'}}\n", "host r1-ct01: ansible_host: expected `str` matching regex"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts:\n        r1-ct01:\n        r1-ct01:\n", "duplicate key 'r1-ct01'"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts: {r1-ct01: }\n    r2:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts: {r1-ct01: }\n", "host r1-ct01 is in rack r1 and in rack r2"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts: [r1-ct01]\n", "group r1: hosts: expected `object | null`, got `array`"),
    ("all: [1, 2]\n", "group all: expected `object`, got `array`"),
    ("- just\n- a list\n", "expected `object`, got `array`"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72\n", "not valid YAML"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts: {'r1-ct[05:01]': }\n", "range start is after its end"),
    ("all:\n  children:\n    r1:\n      vars: {opsctl_model: hgx-h100, opsctl_scenario: x.yaml}\n      hosts: {n: }\n", "only read with opsctl_backend: sim"),
    ("all:\n  children:\n    r1:\n      hostz: {n: }\n", "group r1: object contains unknown field `hostz`"),
]


@pytest.mark.parametrize("text, message", BAD_INVENTORIES)
def test_bad_inventories_are_one_clear_error(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as error:
        load_inventory(path)
    assert message in str(error.value)
    assert str(path) in str(error.value)


def test_a_bad_inventory_on_the_command_line_exits_2_with_one_line(tmp_path, opsctl):
    path = write(tmp_path, BAD_INVENTORIES[0][0])
    assert_one_line_error(opsctl("--inventory", path, "inventory", "list"), 2, "gb300", str(path))
    assert_one_line_error(opsctl("--inventory", tmp_path / "nope.yaml", "inventory", "list"), 2, "no such file")


def test_unknown_rack_names_the_known_ones(opsctl):
    assert_one_line_error(opsctl("inventory", "show", "rack99"), 2, "unknown rack 'rack99'", "rack07")
    assert_one_line_error(opsctl("inventory", "show", "../etc"), 2, "not valid")


def test_environment_variable_selects_the_inventory(tmp_path, opsctl, monkeypatch):
    path = write(tmp_path, "all:\n  children:\n    lab:\n      vars: {opsctl_model: hgx-h200, opsctl_backend: sim, opsctl_transport: local}\n      hosts: {lab-node: }\n")
    monkeypatch.setenv("OPSCTL_INVENTORY", str(path))
    from opsctl.cli import run

    assert run(["inventory", "list", "--json"]) == 0


def test_inventory_commands_print_json(opsctl):
    listed = opsctl("inventory", "list", "--json")
    assert listed.code == 0
    assert {r["rack"] for r in listed.json()["racks"]} == {"rack07", "hgx01"}
    shown = opsctl("inventory", "show", "rack07", "--json").json()
    assert shown["model"] == "gb200-nvl72" and len(shown["tray_list"]) == 27
    assert shown["tray_list"][0]["id"] == "rack07/ct01"


# Generated inventories: whatever the shape, the answer is a rack or one InputError.
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 70000), st.text(max_size=12),
                     st.sampled_from(["gb200-nvl72", "hgx-h100", "ssh", "local", "sim", "nvml", "ct01", "st3"]))
_keys = st.sampled_from(["all", "children", "hosts", "vars", "r1", "r1-ct01", "r1-ct[01:03]", "r1-st2", "node",
                         "opsctl_model", "opsctl_transport", "opsctl_backend", "opsctl_tray", "ansible_port",
                         "ansible_host", "opsctl_scenario", "x y", "opsctl_bogus"])
_trees = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(_keys, inner, max_size=4)), max_leaves=25)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=_trees)
@pytest.mark.slow
def test_generated_inventories_load_or_fail_cleanly(tmp_path, tree):
    import yaml

    path = tmp_path / "generated.yaml"
    path.write_text(yaml.safe_dump(tree))
    try:
        load_inventory(path)
    except InputError as error:
        assert "\n" not in str(error) and str(path) in str(error)


def test_the_guides_example_inventory_is_one_opsctl_accepts(tmp_path):
    # The inventory an operator copies from the operator guide must load as it stands.
    readme = (Path(__file__).parent.parent / "docs" / "operator-guide.md").read_text()
    start = readme.index("```yaml\nall:\n") + len("```yaml\n")
    (tmp_path / "fleet.yaml").write_text(readme[start:readme.index("```", start)])
    rack = load_inventory(tmp_path / "fleet.yaml").racks["rack12"]
    trays = {tray.name: tray.host for tray in rack.trays}
    assert len(trays) == 27 and trays["ct07"] == "10.20.0.77" and trays["ct08"] == "rack12-ct08"


def test_the_schema_knows_the_variables_and_models_the_code_reads():
    from typing import get_args

    from opsctl.inventory import KNOWN_OPSCTL_VARS
    from opsctl.inventory_schema import Model, Variables
    from opsctl.rack_models import MODELS

    assert {name for name in Variables.__struct_fields__ if name.startswith("opsctl_")} == KNOWN_OPSCTL_VARS
    assert set(get_args(Model)) == set(MODELS)


def test_a_port_at_its_bound_is_read_and_one_past_it_refused(tmp_path):
    text = "all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts: {r1-ct01: {ansible_port: %d}}\n"
    assert load_inventory(write(tmp_path, text % 65535)).rack("r1").tray("ct01").port == 65535
    with pytest.raises(InputError, match="host r1-ct01: ansible_port: expected `int` <= 65535"):
        load_inventory(write(tmp_path, text % 65536))
    with pytest.raises(InputError, match="host r1-ct01: ansible_port: expected `int` >= 1"):
        load_inventory(write(tmp_path, text % 0))


def test_variables_opsctl_does_not_read_are_inherited_untouched(tmp_path):
    path = write(tmp_path, "all:\n  vars: {site_color: blue}\n  children:\n    r1:\n"
                           "      vars: {opsctl_model: gb200-nvl72}\n      hosts: {r1-ct01: }\n")
    assert load_inventory(path).rack("r1").vars["site_color"] == "blue"
