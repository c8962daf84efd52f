"""`opsctl burnin` at tray depth: on a simulated GB200 rack, a GPU with bad HBM cells, one with
ECC off, one that computes the same wrong GEMM every time, a tray flashed with another VBIOS, and
a link and two GPUs that arrive with totals DCGM fails (a failed recovery, a double-bit ECC count,
memory flagged unrepairable) are each named in `failing_parts` with their repair, and nothing else is; on an HGX server, a
PCIe link trained at half width and a lower generation. The rack-wide comparisons (one
configuration, one golden GEMM result) decide by majority, and cannot decide without one."""

import os
import subprocess
import sys

import pytest

from opsctl.burnin.configuration import configuration_checks
from opsctl.burnin.golden_results import golden_checks
from opsctl.errors import InputError
from tests.conftest import CliResult

GB200_FAULTS = {  # scenario line: the GPUs it must fail, and the repair each gets
    "{kind: hbm_bad_cells, gpu: ct02/gpu1, offset_gib: 120, size_mib: 4}": (["ct02/gpu1"], "rma_gpu"),
    "{kind: ecc_disabled, gpu: ct06/gpu3}": (["ct06/gpu3"], "configure_gpu"),
    "{kind: deterministic_sdc, gpu: ct10/gpu2}": (["ct10/gpu2"], "rma_gpu"),
    "{kind: firmware_mismatch, tray: ct14, vbios: 97.00.A5.00.1B}": ([f"ct14/gpu{i}" for i in range(4)], "configure_gpu"),
    "{kind: c2c_link_down, gpu: ct08/gpu0}": (["ct08/gpu0"], "replace_compute_tray"),  # cut off its Grace CPU
    "{kind: firmware_mismatch, tray: st3, switch_firmware: 35.2014.1100}": (["st3"], "update_switch_firmware"),
    # What a GPU or link arrived with (DCGM 4.6's totals since the driver loaded): NVIDIA's first step.
    "{kind: link_totals, link: ct11/gpu1/nvl05, recovery_failed: 2}": (["ct11/gpu1/nvl05"], "reset_gpu_nvlink"),
    "{kind: volatile_dbe, gpu: ct16/gpu2}": (["ct16/gpu2"], "reset_gpu"),
    "{kind: memory_unrepairable, gpu: ct13/gpu0}": (["ct13/gpu0"], "rma_gpu"),
}


def burnin(root, model, rack, hosts, faults, duration="4"):
    (root / "scenario.yaml").write_text(f"scenario: depth\nseed: 5\nrack: {rack}\nfaults:\n"
                                        + "".join(f"  - {fault}\n" for fault in faults))
    (root / "inventory.yaml").write_text(
        f"all:\n  children:\n    {rack}:\n      vars:\n        opsctl_model: {model}\n        opsctl_transport: local\n"
        f"        opsctl_backend: sim\n        opsctl_scenario: {root / 'scenario.yaml'}\n      hosts:\n"
        + "".join(f"        {host}:\n" for host in hosts))
    env = {k: v for k, v in os.environ.items() if k != "OPSCTL_INVENTORY"}
    proc = subprocess.run([sys.executable, "-m", "opsctl", "--inventory", str(root / "inventory.yaml"), "burnin", rack,
                           "--duration", duration, "--no-ledger", "--out", str(root / "run"), "--json"],
                          capture_output=True, text=True, timeout=900, env=env, cwd=root)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="module")
def gb200_burnin(tmp_path_factory):
    return burnin(tmp_path_factory.mktemp("depth"), "gb200-nvl72", "rack07", ["rack07-ct[01:18]", "rack07-st[1:9]"],
                  list(GB200_FAULTS))


@pytest.mark.slow
def test_each_tray_depth_fault_names_its_gpus_with_their_repair_and_nothing_else(gb200_burnin):
    assert gb200_burnin.code == 1, gb200_burnin.err[-2000:]
    summary = gb200_burnin.json()
    expected = {f"rack07/{gpu}": repair for gpus, repair in GB200_FAULTS.values() for gpu in gpus}
    assert sorted(summary["failing_parts"]) == sorted(expected)
    repairs = {s["component"]: s["repair"] for s in summary["suspects"] if not s.get("alternative_to")}
    assert repairs == expected
    failed = {(c["component"], c["check"]) for c in summary["checks"] if c["verdict"] == "fail"}
    assert ("rack07/ct02/gpu1", "hbm.errors") in failed
    assert ("rack07/ct06/gpu3", "config.ecc_mode") in failed and ("rack07/ct06/gpu3", "rack.configuration") in failed
    assert ("rack07/ct10/gpu2", "gemm.bf16.golden") in failed
    vbios = next(c for c in summary["checks"] if c["component"] == "rack07/ct14/gpu0" and c["check"] == "rack.configuration")
    assert vbios["value"] == {"vbios": "97.00.A5.00.1B"} and vbios["threshold"] == {"vbios": "97.00.A5.00.2F"}
    assert "set it to 97.00.A5.00.2F" in vbios["reason"] and "68 of 72" in vbios["reason"]
    switch = {c["component"]: c for c in summary["checks"] if c["check"] == "switch_tray.firmware"}
    assert switch["rack07/st3"]["verdict"] == "fail" and switch["rack07/st3"]["threshold"] == "35.2014.1204"
    assert switch["rack07/st3"]["value"] == {"sw0": "35.2014.1100", "sw1": "35.2014.1100"}
    assert "16 of the rack's 18 switch chips run 35.2014.1204" in switch["rack07/st3"]["reason"]
    assert {c["verdict"] for component, c in switch.items() if component != "rack07/st3"} == {"pass"} and len(switch) == 9
    hbm = next(c for c in summary["checks"] if c["component"] == "rack07/ct02/gpu1" and c["check"] == "hbm.errors")
    assert "120.000–120.004 GiB" in hbm["reason"] and "DCGM" in hbm["source"]


@pytest.mark.slow
def test_a_pcie_link_below_its_best_or_with_uncorrectable_aer_errors_fails_its_hgx_gpu(tmp_path):
    # gpu2: 10 non-fatal AER errors a second, its link at its best; gpu1: correctable ones only (not judged).
    result = burnin(tmp_path, "hgx-h100", "hgx01", ["hgx01-node"], ["{kind: pcie_degraded, gpu: gpu5, width: 8, gen: 4}",
                    "{kind: pcie_degraded, gpu: gpu2, non_fatal_per_minute: 600}",
                    "{kind: pcie_degraded, gpu: gpu1, correctable_per_minute: 600}"], duration="2")
    assert result.code == 1, result.err[-2000:]
    summary = result.json()
    assert summary["failing_parts"] == ["hgx01/gpu2", "hgx01/gpu5"]
    assert {s["repair"] for s in summary["suspects"]} == {"service_host_link"}
    assert {s["runbook"] for s in summary["suspects"]} == {"runbooks/host-link.md"}
    aer = next(c for c in summary["checks"] if c["component"] == "hgx01/gpu2" and c["check"] == "host_link.pcie_aer")
    assert aer["verdict"] == "fail" and aer["value"] >= 20 and "non-fatal" in aer["reason"]
    failed = {c["check"]: c for c in summary["checks"] if c["verdict"] == "fail" and c["component"] == "hgx01/gpu5"}
    assert failed["host_link.h2d_bandwidth"]["value"] < failed["host_link.h2d_bandwidth"]["threshold"]  # x8: half the copies
    assert failed["host_link.pcie_width"]["value"] == 8 and failed["host_link.pcie_width"]["threshold"] == 16
    assert failed["host_link.pcie_generation"]["value"] == 4 and "DCGM_FR_PCIE_GENERATION" in failed["host_link.pcie_generation"]["source"]


def test_pcie_degraded_is_refused_on_gb200_and_firmware_mismatch_on_hgx(rack07_topology, hgx_topology):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text

    with pytest.raises(InputError, match="NVLink-C2C"):
        compile_rack_spec(scenario_from_text("faults:\n  - {kind: pcie_degraded, gpu: ct01/gpu0, width: 8}\n"), rack07_topology)
    with pytest.raises(InputError, match="one server"):
        compile_rack_spec(scenario_from_text("faults:\n  - {kind: firmware_mismatch, tray: hgx01, vbios: x}\n"), hgx_topology)
    with pytest.raises(InputError, match=r"faults\[0\]\.width: invalid enum value 3"):
        compile_rack_spec(scenario_from_text("faults:\n  - {kind: pcie_degraded, gpu: gpu0, width: 3}\n"), hgx_topology)


# --- the rack-wide comparisons, decided by majority ------------------------------------------------
def readings(vbios, checksums=None):
    found = {}
    for index, version in enumerate(vbios):
        found[f"rack07/ct{index // 4 + 1:02d}/gpu{index % 4}"] = {
            "name": "NVIDIA GB200", "configuration": {"vbios": version, "ecc_mode": "enabled"},
            "gemm": {"bf16": {"n": 16384, "seed": 0, "golden_checksum": (checksums or ["c0"] * len(vbios))[index]}}}
    return found


def verdicts(checks):
    return {c.component.removeprefix("rack07/"): c.verdict for c in checks}


def test_one_gpu_in_a_minority_of_one_fails_and_the_rest_pass():
    found = verdicts(configuration_checks(readings(["A", "A", "B"])))
    assert found == {"ct01/gpu0": "pass", "ct01/gpu1": "pass", "ct01/gpu2": "fail"}


def test_without_a_majority_the_configuration_is_undecided_never_a_pass():
    assert set(verdicts(configuration_checks(readings(["A", "A", "B", "B"]))).values()) == {"incomplete"}


def test_a_golden_result_unlike_its_siblings_fails():
    found = verdicts(golden_checks(readings(["A"] * 4, ["c0", "c0", "c0", "c1"])))
    assert found == {"ct01/gpu0": "pass", "ct01/gpu1": "pass", "ct01/gpu2": "pass", "ct01/gpu3": "fail"}
    assert set(verdicts(golden_checks(readings(["A"] * 4, ["c0", "c0", "c1", "c1"]))).values()) == {"incomplete"}
    assert golden_checks(readings(["A"] * 2, ["c0", "c1"])) == []  # two cannot say which is wrong
