"""The rack-wide collective: for real with torch.distributed (gloo on CPUs) across separately
launched node processes, as an orchestrator launches them — on CPUs, and on simulated trays whose
collectives really run (NumPy through the simulator's own store, no PyTorch) while their time is
modelled from the rack's links."""

import json
import subprocess
import sys

import pytest

from tests.conftest import free_port

pytestmark = pytest.mark.slow  # simulated runs or real processes: seconds a test


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
        assert document["status"] == "complete" and document["wrong_results"] == []
        assert [r["size"] for r in document["results"] if r["operation"] == "all_reduce"] == ["1M"]
        assert all(r["busbw_gbps"] > 0 for r in document["results"])
        assert [r["rank"] for r in document["ranks"]] == [rank]
        assert [c["check"] for c in document["checks"]] == ["collective.verified"]  # no SKU figure for a CPU
        assert {r["operation"] for r in document["results"]} == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}


def test_one_node_starts_a_process_per_rank():
    pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test installs the CPU wheel)")
    code, out, err = finish(collective("--device", "cpu", "--nodes", 1, "--gpus-per-node", 2,
                                       "--master-port", free_port(), "--size-mb", 1, "--iterations", 2))
    assert code == 0, err
    document = json.loads(out)
    assert document["world_size"] == 2 and [r["rank"] for r in document["ranks"]] == [0, 1]
    assert all(r["joined"] and r["error"] is None for r in document["ranks"]) and document["wrong_results"] == []


def test_a_node_whose_peers_never_come_is_incomplete():
    pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test installs the CPU wheel)")
    code, out, err = finish(collective("--device", "cpu", "--nodes", 2, "--node-rank", 1, "--master-port", free_port(),
                                       "--size-mb", 1, "--rendezvous-timeout", 3))
    assert code == 3, err
    document = json.loads(out)
    assert document["status"] == "incomplete" and document["checks"][0]["verdict"] == "incomplete"
    assert document["not_joined"] == ["node0"]  # the rendezvous lives on the first tray, which never came


def spec_file(tmp_path, scenario, topology):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text

    path = tmp_path / "spec.json"
    path.write_text(json.dumps(compile_rack_spec(scenario_from_text(scenario), topology).to_dict()))
    return path


def simulated_job(spec, trays, started, port, *extra):
    return {tray: collective("--backend", "sim", "--sim-spec", spec, "--tray", tray, "--job-trays", ",".join(trays),
                             "--master-port", port, "--sizes", "8K,256M", "--iterations", 1, *extra) for tray in started}


# ct02/gpu1's 18 links at `factor` of their bandwidth: its tray's all-reduces run that much slower.
def degraded_gpu(factor):
    return "faults:\n" + "".join(f"  - {{kind: link_degraded, link: ct02/gpu1/nvl{p:02d}, factor: {factor}}}\n"
                                 for p in range(18))


def test_simulated_trays_run_one_job_for_real_and_the_bisection_names_the_slow_tray(rack07_topology, tmp_path):
    """Three simulated trays, one process each (standing for its 4 GPUs): every collective
    really runs and is verified; the time is modelled from the links, so ct02, 15% slower (the
    margin is 10%), is where the bisection by halves ends."""
    trays = ["ct01", "ct02", "ct03"]
    job = simulated_job(spec_file(tmp_path, degraded_gpu(0.85), rack07_topology), trays, trays, free_port())
    documents = {}
    for tray, process in job.items():
        code, out, err = finish(process)
        assert code == 0, err
        documents[tray] = json.loads(out)
    first = documents["ct01"]
    assert first["gpus"] == 12 and first["world_size"] == 3 and first["transport"]["paths"] == {"P2P/MNNVL": 1}
    assert {(r["operation"], r["size"]) for r in first["results"]} == {(op, size) for op in
                                                                        ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
                                                                        for size in ("8K", "256M")}
    assert all(c["verdict"] == "pass" for d in documents.values() for c in d["checks"])  # verified, above the floor
    rounds = first["bisection"]
    assert [r["slower"] for r in rounds] == [1, 0] and rounds[-1]["halves"][0]["trays"] == ["ct02"]
    slow, fast = rounds[-1]["halves"][0]["busbw_gbps"], rounds[-1]["halves"][1]["busbw_gbps"]
    assert slow == pytest.approx(0.85 * fast, rel=0.02)


def test_a_tray_that_never_joins_is_named_and_the_job_is_incomplete(rack07_topology, tmp_path):
    job = simulated_job(spec_file(tmp_path, "seed: 2\n", rack07_topology), ["ct01", "ct02", "ct03"], ["ct01", "ct02"],
                        free_port(), "--rendezvous-timeout", 10)
    for process in job.values():
        code, out, err = finish(process)
        assert code == 3, err
        document = json.loads(out)
        assert document["status"] == "incomplete" and document["not_joined"] == ["ct03"]
        assert "ct03 never joined" in document["errors"][0]
