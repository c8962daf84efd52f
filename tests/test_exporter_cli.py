"""`opsctl exporter` as users meet it: rule files for their site, and one-line errors."""

import socket
import subprocess

import pynvml
import pytest
import yaml

from exporters.alert_rules import rule_files, runbook_file
from tests.conftest import assert_one_line_error

NVML_RACK = """
all:
  children:
    rack12:
      vars: {opsctl_model: gb200-nvl72, opsctl_backend: nvml}
      hosts:
        rack12-ct[01:18]:
"""


def runbook_urls(path):
    return [rule["annotations"]["runbook_url"] for group in yaml.safe_load(path.read_text())["groups"]
            for rule in group["rules"] if "alert" in rule]


@pytest.mark.parametrize("base", ["https://git.example.com/ops/opsctl/blob/main/", "https://wiki.example.com/x?page=ops #1: runbooks"])
@pytest.mark.slow
def test_rules_are_written_with_the_sites_runbook_base(opsctl, tmp_path, base):
    result = opsctl("exporter", "rules", "-o", tmp_path / "rules", "--runbook-base", base, "--json")
    assert result.code == 0, result.err
    written = [tmp_path / "rules" / p.name for p in rule_files()]
    assert result.json()["files"] == [str(p) for p in written]
    check = subprocess.run(["promtool", "check", "rules", *written], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    for shipped, copy in zip(rule_files(), written):
        urls = runbook_urls(copy)
        assert urls == [base.rstrip("/") + "/" + url for url in runbook_urls(shipped)]
        assert [runbook_file(url) for url in urls] == [runbook_file(url) for url in runbook_urls(shipped)]


def test_rules_need_a_directory(opsctl, tmp_path):
    (tmp_path / "taken").write_text("")
    assert_one_line_error(opsctl("exporter", "rules", "-o", tmp_path / "taken"), 2, "is a file")
    assert_one_line_error(opsctl("exporter", "rules", "-o", tmp_path / "taken" / "rules"), 2, "cannot write rule files")


def test_bad_racks_and_trays_are_one_line_errors(opsctl, tmp_path):
    assert_one_line_error(opsctl("exporter", "--rack", "rack99"), 2, "unknown rack 'rack99'")
    assert_one_line_error(opsctl("exporter", "--rack", "rack07", "--tray", "st1"), 2, "holds no GPUs")
    assert_one_line_error(opsctl("exporter", "--rack", "rack07", "--port", "70000"), 2, "--port")
    assert_one_line_error(opsctl("exporter"), 2, "is not a tray of any rack", "--rack rack07")
    assert_one_line_error(opsctl("exporter", "--rack", "rack07", "--interval", "5", "--stale-after", "5"), 2,
                          "must be longer than --interval")


def test_a_taken_port_is_a_one_line_error(opsctl):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = opsctl("exporter", "--rack", "hgx01", "--listen", "127.0.0.1", "--port", port)
    assert_one_line_error(result, 2, f"cannot listen on 127.0.0.1 port {port}")


def test_real_gpus_without_a_driver_point_to_the_simulator(opsctl, tmp_path):
    try:
        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver")
    except pynvml.NVMLError:
        pass
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(NVML_RACK)
    result = opsctl("--inventory", inventory, "exporter", "--rack", "rack12", "--tray", "ct03")
    assert_one_line_error(result, 2, "no NVML library", "--rack rack07")


def test_a_tray_the_scenario_makes_unreachable_shows_as_a_down_exporter(opsctl, tmp_path):
    from exporters.metrics import RackCollector
    from opsctl.cli.commands.exporter import pollers_for
    from opsctl.inventory import load_inventory

    (tmp_path / "down.yaml").write_text("faults:\n  - {kind: tray_unreachable, tray: ct02}\n")
    (tmp_path / "inventory.yaml").write_text(
        "all:\n  children:\n    r1:\n      vars: {opsctl_model: gb200-nvl72, opsctl_backend: sim, opsctl_scenario: down.yaml}\n"
        "      hosts:\n        r1-ct[01:18]:\n")
    rack = load_inventory(tmp_path / "inventory.yaml").rack("r1")
    pollers, backend = pollers_for(rack, ["ct01", "ct02"])
    assert backend == "sim" and [p.down_reason for p in pollers] == [None, "unreachable (simulated fault)"]
    samples = {(s.name, s.labels.get("tray")): s.value for family in RackCollector(pollers[1:]).collect() for s in family.samples}
    assert samples[("opsctl_exporter_up", "ct02")] == 0
    assert (samples[("opsctl_tray_gpus_visible", "ct02")], samples[("opsctl_tray_gpus_expected", "ct02")]) == (0, 4)
