"""The rack-wide all-reduce: for real with torch.distributed (gloo on CPUs) across separately
launched node processes, as an orchestrator launches them; and modelled on the simulator."""

import json
import socket
import subprocess
import sys

import pytest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def collective(*args):
    return subprocess.Popen([sys.executable, "-m", "probes", "collective", "--json", *map(str, args)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process, stdin=None):
    out, err = process.communicate(stdin, timeout=240)
    return process.returncode, out, err


def test_two_nodes_all_reduce_for_real_over_gloo():
    pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test installs the CPU wheel)")
    port = free_port()
    nodes = [collective("--device", "cpu", "--nodes", 2, "--node-rank", rank, "--master-port", port,
                        "--size-mb", 1, "--iterations", 3, "--rendezvous-timeout", 120) for rank in (0, 1)]
    results = [finish(node) for node in nodes]
    for rank, (code, out, err) in enumerate(results):
        assert code == 0, err
        document = json.loads(out)
        assert (document["kind"], document["node_rank"], document["world_size"], document["dist_backend"]) == \
            ("collective", rank, 2, "gloo")
        assert document["verified"] is True and document["busbw_gbps"] > 0 and document["status"] == "complete"
        assert [r["rank"] for r in document["ranks"]] == [rank]
        assert [c["check"] for c in document["checks"]] == ["collective.verified"]  # no SKU figure for a CPU


def test_one_node_starts_a_process_per_rank():
    pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test installs the CPU wheel)")
    code, out, err = finish(collective("--device", "cpu", "--nodes", 1, "--gpus-per-node", 2,
                                       "--master-port", free_port(), "--size-mb", 1, "--iterations", 2))
    assert code == 0, err
    document = json.loads(out)
    assert document["world_size"] == 2 and [r["rank"] for r in document["ranks"]] == [0, 1]
    assert all(r["verified"] for r in document["ranks"])


def test_a_node_whose_peers_never_come_is_incomplete():
    pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test installs the CPU wheel)")
    code, out, err = finish(collective("--device", "cpu", "--nodes", 2, "--node-rank", 1, "--master-port", free_port(),
                                       "--size-mb", 1, "--rendezvous-timeout", 3))
    assert code == 3, err
    document = json.loads(out)
    assert document["status"] == "incomplete" and document["checks"][0]["verdict"] == "incomplete"


def spec_text(scenario, topology):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text

    return json.dumps(compile_rack_spec(scenario_from_text(scenario), topology).to_dict())


@pytest.mark.parametrize("scenario, slowest, busbw", [
    ("seed: 2\n", None, 900.0),
    # Two of ct04/gpu3's 18 links down, one more at half speed: 15.5 of 18 links' bandwidth.
    ("faults:\n  - {kind: link_down, link: ct04/gpu3/nvl02}\n  - {kind: link_down, link: ct04/gpu3/nvl03}\n"
     "  - {kind: link_degraded, link: ct04/gpu3/nvl04, factor: 0.5}\n", "ct04/gpu3", 900.0 * 15.5 / 18),
])
def test_the_simulator_models_the_all_reduce_from_link_state(rack07_topology, scenario, slowest, busbw):
    code, out, err = finish(collective("--backend", "sim", "--sim-spec", "-", "--tray", "ct01"),
                            stdin=spec_text(scenario, rack07_topology))
    assert code == 0, err
    document = json.loads(out)
    assert document["world_size"] == 72 and document["verified"] is None
    assert document["busbw_gbps"] == pytest.approx(busbw, rel=0.01)
    if slowest:
        assert document["slowest_gpu"] == slowest
    check = document["checks"][0]
    assert check["check"] == "collective.busbw" and check["threshold"] == 630 and check["verdict"] == "pass"


def test_a_simulated_job_missing_a_tray_is_incomplete(rack07_topology):
    code, out, err = finish(collective("--backend", "sim", "--sim-spec", "-", "--tray", "ct01"),
                            stdin=spec_text("faults: [{kind: tray_unreachable, tray: ct09}]", rack07_topology))
    assert code == 3 and "ct09" in json.loads(out)["errors"][0]
