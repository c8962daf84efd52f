"""The NVLink domain test inside `opsctl burnin --probes …,collective` and `opsctl accept` on a
simulated NVL72: each domain fault kind fails the rack with its part in `failing_parts`."""

import json


import pytest

from opsctl.rack_models import model_named
from opsctl.topology import build_topology

pytestmark = pytest.mark.slow  # simulated runs or real processes: seconds a test


def inventory(tmp_path, faults):
    (tmp_path / "domain.yaml").write_text(f"scenario: domain\nseed: 3\nrack: rack12\nfaults:\n{faults}")
    path = tmp_path / "fleet.yaml"
    path.write_text("all:\n  children:\n    rack12:\n      vars:\n        opsctl_model: gb200-nvl72\n"
                    "        opsctl_transport: local\n        opsctl_backend: sim\n        opsctl_scenario: domain.yaml\n"
                    "      hosts:\n        rack12-ct[01:18]:\n        rack12-st[1:9]:\n")
    return path


def test_a_tray_without_imex_and_a_gpu_in_another_clique_stop_the_load_and_are_named(opsctl_process, tmp_path):
    fleet = inventory(tmp_path, "  - {kind: imex_missing, tray: ct04}\n  - {kind: fabric_clique, gpu: ct06/gpu2, clique_id: 9}\n")
    result = opsctl_process("--inventory", fleet, "burnin", "rack12", "--probes", "counters,collective", "--duration", "1",
                            "--json", "--no-ledger", "--out", tmp_path / "run", timeout=600)
    assert result.code == 1, result.err
    summary = result.json()
    assert {"rack12/ct04", "rack12/ct06/gpu2"} <= set(summary["failing_parts"])
    domain = summary["domain"]
    assert domain["ran"] is False and not (tmp_path / "run" / "trays").joinpath("collective").exists()
    reasons = " ".join(domain["not_run_because"])
    assert "rack12/ct04: IMEX nvidia-imex is inactive" in reasons and "rack12/ct06/gpu2 is in clique 9" in reasons
    assert json.loads((tmp_path / "run" / "domain.json").read_text())["collective"] == {}


def test_acceptance_runs_the_domain_and_names_nccl_on_the_network_and_a_degraded_switch_chip(opsctl_process, tmp_path):
    fleet = inventory(tmp_path, "  - {kind: nccl_fallback}\n  - {kind: switch_chip_degraded, part: st3/sw0, factor: 0.5}\n")
    result = opsctl_process("--inventory", fleet, "accept", "rack12", "--duration", "2", "--json", "--no-ledger",
                            "--out", tmp_path / "run", timeout=900)
    assert result.code == 1, result.err
    summary = result.json()
    # NCCL on the network fails the domain (the rack); every link through the degraded chip fails
    # its link-traffic check (it carries half of its siblings' bytes, under the rulebook's 75%).
    chip_links = set(build_topology("rack12", model_named("gb200-nvl72")).components["rack12/st3/sw0"].links)
    assert "rack12" in summary["failing_parts"] and len(chip_links) == 72
    assert chip_links <= set(summary["failing"]["links"]) <= set(summary["failing_parts"])
    # Their failed traffic checks go to the localizer beside their clean counters: the part to
    # repair is the chip, not 72 links one by one.
    named = {s["component"]: s for s in summary["suspects"] if not s.get("alternative_to")}
    assert named["rack12/st3/sw0"]["kind"] == "switch_chip" and not chip_links & set(named)
    assert "rack12/st3/sw0" in summary["failing_parts"] and named["rack12/st3/sw0"]["action"]
    domain = summary["domain"]
    assert domain["ran"] and domain["gpus"] == 72 and set(domain["transport"]["paths"]) == {"NET/IB"}
    failed = {(c["check"], c["component"]) for c in summary["checks"] if c["verdict"] == "fail"}
    assert ("collective.transport", "rack12") in failed and ("collective.all_reduce.busbw.256M", "rack12") in failed
    assert {op for op in domain["results"]} == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}
    report = (tmp_path / "run" / "report.html").read_text()
    assert "The NVLink domain" in report and "NET/IB" in report


def test_the_bisections_slow_tray_is_named_with_its_repair(opsctl_process, tmp_path):
    """ct05/gpu1's 18 links at 85% of their bandwidth: every link carries its GPU's median (no
    traffic check fails) and no counter moves, but the all-reduce by halves narrows to ct05 —
    which the localizer names, with its repair, as nothing smaller on the tray explains it."""
    fleet = inventory(tmp_path, "".join(f"  - {{kind: link_degraded, link: ct05/gpu1/nvl{p:02d}, factor: 0.85}}\n"
                                        for p in range(18)))
    result = opsctl_process("--inventory", fleet, "burnin", "rack12", "--probes", "counters,collective", "--duration", "1",
                            "--json", "--no-ledger", "--out", tmp_path / "run", timeout=600)
    assert result.code == 1, result.err
    summary = result.json()
    assert summary["domain"]["slow_tray"] == "rack12/ct05"
    [tray] = [s for s in summary["suspects"] if not s.get("alternative_to")]
    assert (tray["component"], tray["kind"], tray["runbook"]) == ("rack12/ct05", "compute_tray", "runbooks/compute-tray.md")
    assert tray["action"] and tray["mttr_hours"] > 0 and tray["evidence"][0].startswith("failed collective.bisection: ")
    assert summary["failing_parts"] == ["rack12/ct05"]
