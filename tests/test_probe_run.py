"""`python -m probes run` on simulated trays, as a real process: a healthy tray passes, each
injected fault is named in the document, a lost GPU fails alone, a probe past its timeout is
incomplete, and bad usage or a missing NVML library is one line and exit 2."""

import json
import subprocess
import sys

import pytest

FAULTY = """
seed: 3
faults:
  - {kind: slow_gpu, gpu: ct03/gpu0, factor: 0.8}
  - {kind: xid, gpu: ct03/gpu0, xid: 119, at_s: 1.0}
  - {kind: thermal_throttle, gpu: ct03/gpu1, after_busy_s: 0.4, clock_factor: 0.7, temperature_c: 93}
  - {kind: link_degraded, link: ct03/gpu1/nvl09, factor: 0.4}
  - {kind: sdc, gpu: ct03/gpu2, probability: 0.05}
  - {kind: link_errors, link: ct03/gpu3/nvl04, symbol_per_s: 20, rcv_errors_per_s: 10, ber: 5.0e-11}
  - {kind: ecc, gpu: ct03/gpu3, corrected_per_s: 1, uncorrected: 1, start_s: 1.0}
"""


@pytest.fixture
def spec_file(tmp_path, rack07_topology):
    """The compiled simulator spec of a scenario, written as `opsctl sim spec` writes it.
    `hang` names GPUs whose compute calls never return once they have computed for 0.3 s."""
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text

    def write(text="seed: 1\n", topology=None, hang=()):
        spec = compile_rack_spec(scenario_from_text(text), topology or rack07_topology).to_dict()
        for tray in spec["trays"]:
            for gpu in tray["gpus"]:
                if gpu["id"] in hang:
                    gpu["effects"].append({"kind": "hang", "params": {"after_busy_s": 0.3}, "source": "test"})
        path = tmp_path / f"spec-{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps(spec))
        return path

    return write


def probe(*args, stdin=None, timeout=120):
    proc = subprocess.run([sys.executable, "-m", "probes", *map(str, args)], capture_output=True, text=True,
                          input=stdin, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def run_tray(spec, tray, *extra):
    code, out, err = probe("run", "--backend", "sim", "--sim-spec", spec, "--tray", tray, "--json", *extra)
    return code, (json.loads(out) if out.strip() else None), err


def failing(document):
    """{(check, component)} of every failed check, tray-level and per GPU."""
    checks = document["checks"] + [c for gpu in document["gpus"] for c in gpu["checks"]]
    return {(c["check"], c["component"]) for c in checks if c["verdict"] == "fail"}


def one_line(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.slow
def test_a_healthy_tray_passes_with_the_whole_document(spec_file):
    code, doc, err = run_tray(spec_file(), "ct04", "--duration", "2")
    assert code == 0, (err, failing(doc))
    assert (doc["format"], doc["kind"], doc["tray"], doc["backend"], doc["status"]) == \
        ("opsctl-probe/1", "run", "ct04", "sim", "complete")
    assert doc["system"]["gpu_count"] == 4 and doc["system"]["references"] == "probes/references/gb200.yaml"
    assert set(doc["probes"]) == {"gemm", "membw", "nvlink", "pulse", "hbm"} and all(p["status"] == "complete" for p in doc["probes"].values())
    for gpu in doc["gpus"]:
        assert gpu["name"] == "NVIDIA GB200" and gpu["uuid"].startswith("GPU-") and gpu["platform"]["tray_index"] == 3
        for dtype in ("bf16", "fp8"):
            gemm = gpu["gemm"][dtype]
            assert gemm["verified"] and gemm["mismatches"] == 0 and gemm["checks"] > 100 and gemm["finished"]
            assert gemm["tflops_median"] > 0 and len(gemm["tflops_windows"]) >= 3
        assert gpu["under_load"]["samples"] > 0 and gpu["under_load"]["clocks_event_reasons"] == []
        assert gpu["membw"]["gbps"] > 5375
        assert set(gpu["nvlink"]["peer_gbps"]) == {str(i) for i in range(4)} - {str(gpu["index"])}
        assert len(gpu["nvlink"]["link_gbps"]) == 18
        assert len(gpu["counters"]["links"]) == 18 and gpu["counters"]["window_s"] >= 2
        assert gpu["before"]["links"] and gpu["after"]["links"]
        for c in gpu["checks"]:  # every judged result says what, the reading, the threshold, the source
            assert c["verdict"] == "pass" and c["source"] and c["reason"] and c["component"].startswith("gpu")
        names = {c["check"] for c in gpu["checks"]}
        assert {"gemm.bf16.mismatches", "gemm.bf16.tflops", "gemm.bf16.tflops.peers", "gemm.bf16.drop_pct",
                "gemm.fp8.tflops", "membw.gbps", "nvlink.peer_gbps", "nvlink.link_traffic", "nvlink.symbol_errors",
                "nvlink.rcv_errors", "nvlink.effective_ber", "nvlink.state", "nvlink.link_count", "nvlink.counters_read",
                "under_load.clocks_event_reasons", "fabric.health", "xid"} <= names
        # A GB200 reports no data-link counter (NVML change log, v565): nothing judged on them, and
        # their absence is what NVLink 5 reports, not missing evidence.
        assert not names & {"nvlink.crc_errors", "nvlink.replay_errors", "nvlink.recovery_errors"}
        read = next(c for c in gpu["checks"] if c["check"] == "nvlink.counters_read")
        assert "crc_errors, replay_errors, recovery_errors not reported" in read["reason"] and "v560 and v565" in read["source"]


@pytest.mark.slow
def test_each_injected_fault_is_named(spec_file):
    code, doc, err = run_tray(spec_file(FAULTY), "ct03", "--duration", "2")
    assert code == 1, err
    found = failing(doc)
    expected = {
        ("gemm.bf16.tflops.peers", "gpu0"),  # slow GPU
        ("xid", "gpu0"),  # XID 119, GSP RPC timeout
        ("gemm.bf16.drop_pct", "gpu1"),  # throttling under load…
        ("under_load.clocks_event_reasons", "gpu1"),  # …and NVML says why
        ("nvlink.link_traffic", "gpu1/nvl09"),  # the degraded link carries less
        ("gemm.bf16.mismatches", "gpu2"),  # silent data corruption
        ("nvlink.symbol_errors", "gpu3/nvl04"),  # the bad link
        ("nvlink.rcv_errors", "gpu3/nvl04"),
        ("nvlink.effective_ber", "gpu3/nvl04"),
        ("ecc.uncorrected_volatile", "gpu3"),  # ECC
        ("memory.remapped_rows", "gpu3"),
    }
    assert expected <= found, expected - found
    gpus = doc["gpus"]
    assert not any(c for c in found if c[1].startswith("gpu2/") or c[1].startswith("gpu0/"))
    sdc = next(c for c in gpus[2]["checks"] if c["check"] == "gemm.bf16.mismatches")
    assert sdc["value"] > 0 and "silent data corruption" in sdc["reason"] and sdc["threshold"] == 0
    xids = {c["value"]: c for c in gpus[3]["checks"] if c["check"] == "xid"}
    assert xids[48]["verdict"] == "fail" and "double-bit ECC" in xids[48]["reason"]
    throttle = next(c for c in gpus[1]["checks"] if c["check"] == "under_load.clocks_event_reasons")
    assert "hw_thermal_slowdown" in throttle["value"] and "93" in throttle["reason"]
    # The healthy GPUs' own figures stay clean.
    assert gpus[0]["gemm"]["bf16"]["verified"] and gpus[3]["gemm"]["bf16"]["verified"]


@pytest.mark.slow
def test_a_gpu_lost_mid_run_fails_alone_and_the_others_finish(spec_file):
    code, doc, err = run_tray(spec_file("faults: [{kind: gpu_lost, gpu: ct03/gpu1, start_s: 1.0}]"), "ct03",
                              "--duration", "2")
    assert code == 1, err
    lost = doc["gpus"][1]
    assert lost["lost"] and "fallen off the bus" in lost["lost_reason"]
    assert {("gpu.lost", "gpu1"), ("gemm.device", "gpu1")} <= failing(doc)
    for gpu in (doc["gpus"][0], doc["gpus"][2], doc["gpus"][3]):
        assert gpu["gemm"]["bf16"]["finished"] and gpu["gemm"]["fp8"]["finished"] and gpu["membw"]["gbps"] > 0
        assert "1" not in gpu["nvlink"]["peer_gbps"]  # no copies to a GPU that is gone
        assert not any(v == "fail" for v in (c["verdict"] for c in gpu["checks"]))
    assert doc["status"] == "complete"


@pytest.mark.slow
def test_a_probe_past_its_timeout_is_incomplete_and_keeps_what_finished(spec_file):
    code, doc, err = run_tray(spec_file(), "ct02", "--duration", "4", "--timeout", "1.5", "--probes", "gemm,membw")
    assert code == 3, err
    assert doc["status"] == "incomplete" and doc["probes"]["gemm"]["status"] == "incomplete"
    assert "timeout" in doc["probes"]["gemm"]["error"]
    assert any(c["verdict"] == "incomplete" and c["check"] == "probe.gemm" for c in doc["checks"])
    # The GEMM windows measured before the stop, and the probes after it, are in the document.
    assert all(gpu["gemm"]["bf16"]["tflops_windows"] for gpu in doc["gpus"])
    assert all(gpu["membw"]["gbps"] > 0 for gpu in doc["gpus"])


@pytest.mark.slow
def test_a_hung_gpu_leaves_the_run_incomplete_and_the_process_still_ends(spec_file):
    code, doc, err = run_tray(spec_file(hang=("rack07/ct03/gpu2",)), "ct03", "--duration", "2", "--timeout", "1.5",
                              "--probes", "gemm,counters")
    assert code == 3, err
    hung = doc["gpus"][2]
    assert any(c["verdict"] == "incomplete" and c["check"] == "gemm.finished" for c in hung["checks"])
    assert hung["gemm"]["bf16"]["finished"] is False and hung["gemm"]["bf16"]["checks"] > 0  # what it did before
    assert all(doc["gpus"][i]["gemm"]["fp8"]["finished"] for i in (0, 1, 3))


@pytest.mark.slow
def test_an_hgx_h100_node_reads_through_the_legacy_counters(spec_file, hgx_topology):
    # From 2 s on, after the first reading: replays before it would also be a total it arrived with.
    code, doc, err = run_tray(spec_file("faults: [{kind: link_errors, gpu: gpu5, port: 3, replay_per_s: 2, start_s: 2}]",
                                        topology=hgx_topology), "node", "--duration", "4", "--probes", "gemm,counters")
    assert code == 1, err
    assert len(doc["gpus"]) == 8 and doc["system"]["references"] == "probes/references/h100.yaml"
    assert failing(doc) == {("nvlink.replay_errors", "gpu5/nvl03")}
    assert doc["gpus"][0]["counters"]["links"][0]["effective_ber"] is None  # NVLink 4 gives no BER


@pytest.mark.slow
def test_counters_alone_read_a_window_of_the_duration(spec_file):
    # Faults from 3 s on: after the first reading (XIDs count from when the watch starts), which
    # comes well before that however loaded the machine (the simulator's clock starts as the
    # probe opens its tray).
    code, doc, err = run_tray(spec_file("faults:\n"
                                        "  - {kind: link_flap, link: ct07/gpu0/nvl13, start_s: 3, period_s: 30, down_s: 1}\n"
                                        "  - {kind: link_down, link: ct07/gpu2/nvl01, start_s: 3}\n"),
                              "ct07", "--duration", "5", "--probes", "counters")
    assert code == 1, err
    assert doc["probes"] == {} and doc["gpus"][0]["counters"]["window_s"] >= 5
    # The flap was over by the second reading: its failed recovery still counts.
    assert {("nvlink.link_down_events", "gpu0/nvl13"), ("xid", "gpu0")} <= failing(doc)
    # A down link is the link's failure; its GPU still reports all 18 links and is not failed.
    assert ("nvlink.state", "gpu2/nvl01") in failing(doc)
    # Its XID 149 and its fabric's "bandwidth degraded" are the GPU's readings here; the rack
    # judge charges both to the failing link (test_burnin_judge).
    assert {name for name, component in failing(doc) if component == "gpu2"} == {"xid", "fabric.health"}
    [fabric] = [c for c in doc["gpus"][2]["checks"] if c["check"] == "fabric.health"]
    assert fabric["value"] == ["degraded_bw", "summary limited_capacity"]
    [count] = [c for c in doc["gpus"][2]["checks"] if c["check"] == "nvlink.link_count"]
    assert count["verdict"] == "pass" and count["value"] == 18 and "port 1" in count["reason"]
    # The other GPUs of the tray log nothing for those links.
    assert [c["verdict"] for c in doc["gpus"][1]["checks"] if c["check"] == "xid"] == ["pass"]


@pytest.mark.slow
def test_the_spec_can_come_on_stdin_and_an_unreachable_tray_is_down(spec_file):
    spec = spec_file("faults: [{kind: tray_unreachable, tray: ct06}]").read_text()
    code, out, err = probe("run", "--backend", "sim", "--sim-spec", "-", "--tray", "ct06", "--json", stdin=spec)
    assert code == 3 and out == "" and "unreachable" in one_line(err)
    code, out, err = probe("run", "--backend", "sim", "--sim-spec", "-", "--tray", "ct01", "--json", "--duration", "1",
                           "--probes", "counters", stdin=spec)
    assert code == 0 and json.loads(out)["tray"] == "ct01", err


@pytest.mark.parametrize("args, fragment", [
    (["run", "--probes", "gemm,burn"], "unknown probe 'burn'"),
    (["run", "--duration", "-1"], "must be a finite number above 0"),
    (["run", "--backend", "sim", "--tray", "ct01"], "needs --sim-spec"),
    (["run", "--backend", "sim", "--sim-spec", "/nonexistent.json", "--tray", "ct01"], "cannot read the simulator spec"),
    (["snapshot", "--backend", "sim", "--sim-spec", "SPEC", "--tray", "ct99"], "has no tray 'ct99'"),
    (["run", "--backend", "sim", "--sim-spec", "SPEC", "--tray", "ct01", "--references", "/nonexistent.yaml"],
     "/nonexistent.yaml"),
    (["run", "--backend", "sim", "--sim-spec", "SPEC", "--tray", "ct01", "--references", "REFS:foo: 1"],
     "unknown key 'foo'"),
    (["run", "--backend", "sim", "--sim-spec", "SPEC", "--tray", "ct01", "--references", "REFS:gemm: [1, 2"],
     "not valid YAML (line 2"),
    (["run", "--backend", "sim", "--sim-spec", "SPEC", "--tray", "ct01", "--references",
      "REFS:gemm: {bf16: {min_tflops: 2400}}"], "gemm.bf16 needs a source"),
    (["run", "--backend", "sim", "--sim-spec", "SPEC", "--tray", "ct01", "--references",
      "REFS:membw: {min_gbps: -5, source: x}"], "membw.min_gbps must be a positive number"),
    (["run", "--backend", "sim", "--sim-spec", "SPEC", "--tray", "ct01", "--references", "REFS:sku: mine"],
     "no figure to judge against"),
    (["run", "--gemm-size", "8"], "must be at least 16"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_usage_is_one_line_and_exit_2(spec_file, tmp_path, args, fragment):
    # A references file that would judge nothing (or the wrong thing) is refused before any load.
    spec = str(spec_file())
    refs = tmp_path / "refs.yaml"
    for a in args:
        if a.startswith("REFS:"):
            refs.write_text(a[len("REFS:"):] + "\n")
    code, out, err = probe(*[spec if a == "SPEC" else str(refs) if a.startswith("REFS:") else a for a in args])
    assert code == 2 and out == ""
    assert fragment in one_line(err)


def test_without_an_nvml_library_it_suggests_the_simulator():
    code, out, err = probe("run", "--json")
    assert code == 2 and out == ""
    assert "--backend sim" in one_line(err) and "NVML" in err
