"""The rack judgment charges each symptom to the one part that explains it: a GPU whose own link
fails is not failed for the XID or the degraded fabric that link makes it report — whatever the
moment it was read — and a GPU with a failure of its own still is."""

import pytest

from opsctl.burnin.checks import Check
from opsctl.burnin.rack_judge import _failing, _link_symptoms_to_their_links

GPU = "rack07/ct07/gpu0"
LINK = f"{GPU}/nvl13"
BAD = {"fail"}


def link_down():
    return Check("nvlink.link_down_events", LINK, "fail", 2, 1, "in window", ">=")


def judged(topology, *checks):
    moved = _link_symptoms_to_their_links(list(checks), BAD, topology)
    return moved, _failing(moved, BAD, topology)


@pytest.mark.parametrize("symptom", [
    Check("xid", GPU, "fail", 149, "RESET_GPU", "XID", "logged"),
    Check("xid", GPU, "fail", 145, "RESET_GPU", "XID", "logged"),
    Check("fabric.health", GPU, "fail", ["degraded_bw", "summary limited_capacity"], "completed", "fabric state", "!="),
    Check("fabric.health", GPU, "fail", ["degraded_bw"], "completed", "fabric state", "!="),
    # The flap was down for part of the peer copies: 17 of 18 links, 5.6% below the rack median.
    Check("rack.nvlink_gbps", GPU, "fail", 850.0, 855.0, "GB/s", "<"),
    Check("nvlink.peer_gbps", GPU, "fail", 600.0, 630.0, "GB/s", "<"),
])
def test_a_symptom_of_the_gpus_failing_link_is_the_links(rack07_topology, symptom):
    moved, failing = judged(rack07_topology, link_down(), symptom)
    assert failing["gpus"] == [] and failing["links"] == [LINK]
    assert moved[1].component == LINK and GPU in moved[1].reason


@pytest.mark.parametrize("own", [
    Check("xid", GPU, "fail", 79, "RESTART_BM", "XID", "logged"),  # fell off the bus: the GPU's own
    Check("fabric.health", GPU, "fail", ["route_unhealthy"], "completed", "fabric state", "!="),
    Check("fabric.health", GPU, "fail", ["degraded_bw", "incorrect_configuration"], "completed", "fabric state", "!="),
    Check("nvlink.link_count", GPU, "fail", 17, 18, "links", "<"),
])
def test_a_failure_of_the_gpus_own_stays_the_gpus(rack07_topology, own):
    _, failing = judged(rack07_topology, link_down(), own)
    assert failing["gpus"] == [GPU] and failing["links"] == [LINK]


def test_without_a_failing_link_an_nvlink_xid_fails_its_gpu(rack07_topology):
    _, failing = judged(rack07_topology, Check("xid", GPU, "fail", 149, "RESET_GPU", "XID", "logged"))
    assert failing["gpus"] == [GPU] and failing["links"] == []


def test_with_two_failing_links_the_symptom_goes_to_the_first_and_names_both(rack07_topology):
    other = Check("nvlink.rcv_errors", f"{GPU}/nvl02", "fail", 3, 1, "in window", ">=")
    moved, failing = judged(rack07_topology, link_down(), other, Check("xid", GPU, "fail", 149, "RESET_GPU", "XID", "logged"))
    assert failing["gpus"] == [] and moved[2].component == f"{GPU}/nvl02" and LINK in moved[2].reason


def _gpu(clique, cluster="ab" * 16, state="completed"):
    return {"counters": {"fabric": {"state": state, "clique_id": clique, "cluster_uuid": cluster}}}


def test_a_gpu_outside_the_racks_clique_or_cluster_fails(rack07_topology):
    from opsctl.burnin.fabric_domain import fabric_domain_checks

    gpus = {f"rack07/ct{t:02d}/gpu{g}": _gpu(7) for t in range(1, 19) for g in range(4)}
    assert {c.verdict for c in fabric_domain_checks(gpus)} == {"pass"}
    gpus["rack07/ct04/gpu2"] = _gpu(8)
    gpus["rack07/ct09/gpu1"] = _gpu(7, cluster="cd" * 16)
    gpus["rack07/ct11/gpu0"] = _gpu(None, state="in_progress")  # not registered: its own fabric check says so
    checks = {c.component: c for c in fabric_domain_checks(gpus)}
    assert {gpu for gpu, c in checks.items() if c.verdict == "fail"} == {"rack07/ct04/gpu2", "rack07/ct09/gpu1"}
    assert "rack07/ct11/gpu0" not in checks and "NVML" in checks["rack07/ct04/gpu2"].source


def test_a_switch_trays_progress_line_says_its_failures_are_links():
    from opsctl.burnin.progress import _what_failed
    from opsctl.fanout.runner import TrayResult

    fields = TrayResult.__dataclass_fields__
    base = {name: None for name in fields}
    switch = TrayResult(**{**base, "document": {"checks": [
        {"check": "nvlink.symbol_errors", "component": "sw1", "verdict": "fail", "link": "ct05/gpu1/nvl07"},
        {"check": "nvlink.rcv_errors", "component": "sw1", "verdict": "fail", "link": "ct05/gpu1/nvl07"},
        {"check": "nvlink.symbol_errors", "component": "sw0", "verdict": "pass"}]}})
    assert _what_failed(switch) == ": 1 link(s)"
    compute = TrayResult(**{**base, "document": {"gpus": [{"checks": [
        {"check": "nvlink.state", "component": "gpu2/nvl01", "verdict": "fail"},
        {"check": "gemm.bf16.mismatches", "component": "gpu3", "verdict": "fail"}]}]}})
    assert _what_failed(compute) == ": 1 link(s), gpu3"
