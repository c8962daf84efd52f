"""A GB200 GPU's NVLink-C2C link to its Grace CPU, judged: active at both ends of the run passes,
inactive at either end fails, unread where the model must have it is incomplete; and the
simulator's `c2c_link_down` read back through the reader. The NVLink speed joins the rack's
configuration: a GPU whose links run at another speed than the rest of its model is named."""

import pytest

from opsctl.burnin.configuration import configuration_checks
from opsctl.errors import InputError
from probes import c2c_link
from probes.sku_references import load_references
from probes.nvml_reader import NvmlReader

GB200 = load_references(sku="gb200")


def section(active=True, active_before=True, links=1):
    return {"link_count": links, "error_deltas": {"replay_errors": 2},
            "links": [{"link": i, "active": active, "active_before": active_before, "max_bw_mbps": 450_000}
                      for i in range(links)]}


@pytest.mark.parametrize("entry, verdict", [
    (section(), "pass"),
    (section(active=False), "fail"),
    (section(active_before=False), "fail"),  # down when the run began, up again at its end
    (section(links=0), "fail"),  # NVML reports no C2C link: the GPU cannot reach its CPU
    (section(active=None), "incomplete"),
])
def test_every_c2c_link_active_through_the_run(entry, verdict):
    [found] = c2c_link.checks("gpu0", entry, GB200, required=True)
    assert found["verdict"] == verdict and "NVML_FI_DEV_C2C_LINK_GET_STATUS" in found["source"]
    assert "2 replay errors" in found["reason"]  # shown, not judged


def test_no_c2c_reading_is_incomplete_where_the_model_has_one_and_nothing_where_it_has_none():
    [found] = c2c_link.checks("gpu0", None, GB200, required=True)
    assert found["verdict"] == "incomplete"
    assert c2c_link.checks("gpu0", None, GB200, required=False) == []


def read_c2c(sim_rack, text):
    from probes.sim import SimNvml

    rack = sim_rack(text)
    nvml = SimNvml(rack, "ct04")
    nvml.nvmlInit()
    reader = NvmlReader(nvml, now=rack.clock.now)
    before = reader.read_all(links=False)
    rack.clock.advance(5)
    return [c2c_link.window(b, a) for b, a in zip(before, reader.read_all(identity=False, links=False))]


def test_the_simulators_c2c_link_down_reads_inactive_on_its_gpu_only(sim_rack):
    windows = read_c2c(sim_rack, "faults:\n  - {kind: c2c_link_down, gpu: ct04/gpu2}\n")
    verdicts = [c2c_link.checks(f"gpu{i}", w, GB200, required=True)[0]["verdict"] for i, w in enumerate(windows)]
    assert verdicts == ["pass", "pass", "fail", "pass"]


def test_c2c_link_down_is_refused_on_hgx(hgx_topology):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text

    with pytest.raises(InputError, match="NVLink-C2C"):
        compile_rack_spec(scenario_from_text("faults:\n  - {kind: c2c_link_down, gpu: gpu0}\n"), hgx_topology)


def test_a_gpu_whose_nvlinks_run_slower_than_its_siblings_is_named_in_the_rack_configuration():
    readings = {f"rack07/ct01/gpu{i}": {"name": "NVIDIA GB200", "configuration": {"vbios": "A", "nvlink_speed_mbps": speed}}
                for i, speed in enumerate((50_000, 50_000, 50_000, 25_000))}
    found = {c.component: c for c in configuration_checks(readings)}
    assert found["rack07/ct01/gpu3"].verdict == "fail" and found["rack07/ct01/gpu3"].value == {"nvlink_speed_mbps": 25_000}
    assert "set it to 50000" in found["rack07/ct01/gpu3"].reason
    assert {found[f"rack07/ct01/gpu{i}"].verdict for i in range(3)} == {"pass"}


def test_the_nvlink_speed_is_read_into_the_configuration(sim_rack):
    from probes import configuration
    from probes.sim import SimNvml

    rack = sim_rack("seed: 1\n")
    nvml = SimNvml(rack, "ct01")
    nvml.nvmlInit()
    reader = NvmlReader(nvml, now=rack.clock.now)
    [first, *_] = reader.read_all(links=False)
    config = configuration.read(nvml, reader.handles[0], first, {"driver_version": "x"})
    assert config["nvlink_speed_mbps"] == 53_125 and "nvlink_speed_mbps" not in config["unread"]
