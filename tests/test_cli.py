"""The CLI as users and scripts meet it: JSON output, exit codes, one-line errors."""

import pytest

from tests.conftest import assert_one_line_error


@pytest.mark.slow
def test_topology_show_json_is_the_contract_document(opsctl):
    result = opsctl("topology", "show", "rack07", "--json")
    assert result.code == 0
    document = result.json()
    kinds = {}
    for component in document["components"]:
        kinds[component["kind"]] = kinds.get(component["kind"], 0) + 1
    assert (kinds["gpu"], kinds["compute_tray"], kinds["switch_tray"], kinds["switch_chip"]) == (72, 18, 9, 18)
    assert len(document["links"]) == 1296
    assert all(link["switch"].endswith(f"/sw{link['port'] % 2}") for link in document["links"])
    for component in document["components"]:
        if component["kind"] in ("connector", "cartridge"):
            assert component["links"], component["id"]


def test_topology_show_part(opsctl):
    result = opsctl("topology", "show", "rack07", "--part", "cart3", "--json")
    assert result.code == 0 and result.json()["kind"] == "cartridge" and len(result.json()["links"]) == 288
    assert_one_line_error(opsctl("topology", "show", "rack07", "--part", "cart9"), 2, "no component 'cart9'")


def test_topology_table_is_readable(opsctl):
    result = opsctl("topology", "show", "hgx01")
    assert result.code == 0 and "switch_chip" in result.out and "hgx01/baseboard" in result.out


def test_sim_faults_lists_the_seeded_faults(opsctl):
    result = opsctl("sim", "faults", "rack07", "--json")
    assert result.code == 0
    sources = [group["source"] for group in result.json()["faults"]]
    assert sources[0] == "faults[0] (link_errors)" and len(sources) == 7
    assert opsctl("sim", "faults", "hgx01", "--json").json()["faults"] == []


def test_sim_spec_feeds_a_tray(opsctl, tmp_path):
    out = tmp_path / "spec.json"
    assert opsctl("sim", "spec", "hgx01", "-o", out).code == 0
    from probes.sim import RackSpec
    import json

    assert RackSpec.from_dict(json.loads(out.read_text())).sku == "h100"


def test_usage_errors_are_one_line_and_exit_2(opsctl):
    assert_one_line_error(opsctl("topology", "show"), 2, "Missing argument 'RACK'")
    assert_one_line_error(opsctl("topology", "show", "rack07", "--bogus"), 2, "--bogus")
    assert_one_line_error(opsctl("nonsense"), 2, "No such command")


@pytest.mark.slow
def test_a_real_process_prints_no_traceback_on_bad_input(opsctl_process, tmp_path):
    bad = tmp_path / "inv.yaml"
    bad.write_text("all:\n  children:\n    r:\n      vars: {opsctl_model: gb200-nvl72}\n      hosts: {r-ct01: , r-ct01: }\n")
    assert_one_line_error(opsctl_process("--inventory", bad, "topology", "show", "r"), 2, "duplicate key 'r-ct01'")
    ok = opsctl_process("topology", "show", "hgx01", "--json")
    assert ok.code == 0 and '"model": "hgx-h100"' in ok.out


def test_every_command_module_imports_and_is_named_like_its_module():
    from opsctl.cli import cli

    names = cli.list_commands(None)
    assert {"inventory", "topology", "sim"} <= set(names)
    for name in names:
        assert cli.get_command(None, name).name == name
