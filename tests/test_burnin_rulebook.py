"""`opsctl burnin` on a simulated GB200 rack judges Blackwell by NVIDIA's rules: each NVLink 5
counter injected on its own link at 0.2/s fails that link (a successful recovery too: DCGM 4.6's
MonitorNVLink5Fields fails any recovery event in its window), the GPU's NVLink data ECC errors fail
that GPU, XIDs 140 and 150 fail their GPU, an XID the catalog lacks never passes, and healthy parts
stay healthy."""

import os
import subprocess
import sys

import pytest

from tests.conftest import CliResult

NVLINK5 = {  # scenario rate key: (link, the check that fails it)
    "rcv_errors_per_s": ("ct02/gpu0/nvl01", "nvlink.rcv_errors"),
    "malformed_packet_errors_per_s": ("ct03/gpu1/nvl02", "nvlink.malformed_packet_errors"),
    "buffer_overrun_errors_per_s": ("ct04/gpu2/nvl03", "nvlink.buffer_overrun_errors"),
    "local_link_integrity_errors_per_s": ("ct06/gpu3/nvl04", "nvlink.local_link_integrity_errors"),
    "effective_errors_per_s": ("ct08/gpu0/nvl05", "nvlink.effective_errors"),
    "recovery_failed_per_s": ("ct10/gpu1/nvl06", "nvlink.link_down_events"),
    "symbol_per_s": ("ct11/gpu2/nvl08", "nvlink.symbol_errors"),
    "rcv_remote_errors_per_s": ("ct12/gpu1/nvl10", "nvlink.rcv_remote_errors"),
    "rcv_general_errors_per_s": ("ct13/gpu0/nvl11", "nvlink.rcv_general_errors"),
    "recovery_successful_per_s": ("ct13/gpu3/nvl09", "nvlink.recovery_successful"),
}
ECC_GPU = "ct15/gpu2"  # its NVLink data ECC errors, counted by NVML over all of its links
XID_GPUS = {140: "ct14/gpu0", 150: "ct16/gpu1", 999: "ct18/gpu2"}


@pytest.fixture(scope="module")
def blackwell_burnin(tmp_path_factory):
    root = tmp_path_factory.mktemp("rulebook")
    faults = [f"  - {{kind: link_errors, link: {link}, {key}: 0.2}}" for key, (link, _) in NVLINK5.items()]
    faults.append(f"  - {{kind: link_errors, link: {ECC_GPU}/nvl03, ecc_data_errors_per_s: 0.2}}")
    faults += [f"  - {{kind: xid, gpu: {gpu}, xid: {xid}, at_s: 3, repeat_s: 4}}" for xid, gpu in XID_GPUS.items()]
    (root / "scenario.yaml").write_text("scenario: nvlink5-rules\nseed: 5\nrack: rack07\nfaults:\n" + "\n".join(faults) + "\n")
    (root / "inventory.yaml").write_text(
        "all:\n  children:\n    rack07:\n      vars:\n        opsctl_model: gb200-nvl72\n        opsctl_transport: local\n"
        f"        opsctl_backend: sim\n        opsctl_scenario: {root / 'scenario.yaml'}\n"
        "      hosts:\n        rack07-ct[01:18]:\n        rack07-st[1:9]:\n")
    # 8 s of load: 0.2/s makes at least one count of each counter in the window, whatever its phase.
    env = {k: v for k, v in os.environ.items() if k != "OPSCTL_INVENTORY"}
    proc = subprocess.run([sys.executable, "-m", "opsctl", "--inventory", str(root / "inventory.yaml"), "burnin", "rack07",
                           "--duration", "8", "--no-ledger", "--out", str(root / "run"), "--json"],
                          capture_output=True, text=True, timeout=900, env=env, cwd=root)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.slow
def test_each_nvlink5_counter_fails_its_own_link(blackwell_burnin):
    assert blackwell_burnin.code == 1, blackwell_burnin.err[-2000:]
    summary = blackwell_burnin.json()
    checks = summary["checks"]
    for key, (link, check) in NVLINK5.items():
        failed = [c for c in checks if c["component"] == f"rack07/{link}" and c["verdict"] == "fail"]
        assert check in {c["check"] for c in failed}, (key, failed)
        assert any("DCGM" in c["source"] for c in failed)
        if key.startswith("recovery"):  # either kind of recovery is one of DCGM's recovery events
            assert "nvlink.recovery_events" in {c["check"] for c in failed}, (key, failed)
    assert set(summary["failing"]["links"]) == {f"rack07/{link}" for link, _ in NVLINK5.values()}
    [ecc] = [c for c in checks if c["check"] == "nvlink.gpu.ecc_data_errors" and c["verdict"] == "fail"]
    assert ecc["component"] == f"rack07/{ECC_GPU}" and "DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL" in ecc["source"]
    # Named as parts to repair: the recovering link (both its ends count the recovery), and the
    # GPU whose NVLink ECC errors name none of its links, its NVLink workflow's reset first.
    assert {f"rack07/{NVLINK5['recovery_successful_per_s'][0]}", f"rack07/{ECC_GPU}"} <= set(summary["failing_parts"])
    [gpu] = [s for s in summary["suspects"] if s["component"] == f"rack07/{ECC_GPU}"]
    assert gpu["repair"] == "reset_gpu_nvlink"


@pytest.mark.slow
def test_xids_140_150_and_one_the_catalog_lacks_fail_their_gpus(blackwell_burnin):
    summary = blackwell_burnin.json()
    assert set(summary["failing"]["gpus"]) == {f"rack07/{gpu}" for gpu in (*XID_GPUS.values(), ECC_GPU)}
    for xid, gpu in XID_GPUS.items():
        [check] = [c for c in summary["checks"] if c["check"] == "xid" and c["value"] == xid]
        assert check["component"] == f"rack07/{gpu}" and check["verdict"] == "fail"
    # No healthy switch chip, tray or GPU is failed alongside.
    assert summary["failing"]["other"] == [] and summary["failing"]["trays"] == []


@pytest.mark.slow
def test_an_nvlink5_xid_is_decoded_from_the_trays_kernel_log(tmp_path, rack07_topology):
    """XID 145 with the registers of a non-fatal RLW_REMAP row is a warning; the same code with a
    fatal row's registers fails; without a line, the most severe row (fail) applies."""
    import json

    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text
    from probes.xids import catalog

    # The simulated GB200 runs driver 570: the sheet's masks for drivers before R575 (v1) apply.
    mask = next(r["intrinfo_v1"] for r in catalog()["nvlink5_decode"] if r["unit"] == "RLW_REMAP")
    intr = int(mask.replace("-", "0"), 2)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(compile_rack_spec(scenario_from_text(
        "faults:\n"
        f"  - {{kind: xid, gpu: ct05/gpu0, xid: 145, at_s: 1, intr_info: {intr:#x}, error_status: 0x100}}\n"
        f"  - {{kind: xid, gpu: ct05/gpu1, xid: 145, at_s: 1, intr_info: {intr:#x}, error_status: 0x40}}\n"
        "  - {kind: xid, gpu: ct05/gpu2, xid: 145, at_s: 1}\n"), rack07_topology).to_dict()))
    proc = subprocess.run([sys.executable, "-m", "probes", "run", "--backend", "sim", "--sim-spec", str(spec), "--tray", "ct05",
                           "--duration", "3", "--probes", "counters", "--json"], capture_output=True, text=True, timeout=120)
    run = json.loads(proc.stdout)
    xid = {gpu["index"]: next(c for c in gpu["checks"] if c["check"] == "xid") for gpu in run["gpus"]}
    assert xid[0]["verdict"] == "warn" and "unit RLW_REMAP" in xid[0]["reason"] and "Non-fatal" in xid[0]["reason"]
    assert xid[1]["verdict"] == "fail" and "unit RLW_REMAP" in xid[1]["reason"] and "Fatal" in xid[1]["reason"]
    assert xid[2]["verdict"] == "fail" and "most severe row" in xid[2]["reason"]
