"""Sustained power and thermal margins, judged: power reached against 0.75 × the target (DCGM's
targeted-power ratio), thermal violation time over the load, the datasheet TDP cross-check, the
margin to the slowdown threshold and the HBM against its slowdown threshold — each a reading
just above and just below its threshold; missing evidence incomplete; and the simulator's
power brake and thermal throttle showing in NVML's violation counters read around a load."""

import pytest

from probes import sustained_power, thermal_margins
from probes.sku_references import load_references
from probes.nvml_reader import NvmlReader

GB200 = load_references(sku="gb200")
H100 = load_references(sku="h100")


def verdicts(found):
    return {c["check"]: c["verdict"] for c in found}


def gpu(power=1000.0, target=1200.0, enforced=1200.0, load_s=60.0, thermal=0.0, unread=None):
    return {"index": 0, "before": {"sm_clock_max_mhz": 2062, "memory_slowdown_c": 95},
            "under_load": {"samples": 40, "sm_clock_mhz_median": 2062, "temperature_c_max": 70,
                           "thermal_margin_c_min": 20, "memory_temperature_c_max": 74},
            "sustained_power": {"load_s": load_s, "energy_j": None if power is None else power * load_s,
                                "power_w_mean": power, "default_power_limit_w": target,
                                "enforced_power_limit_w": enforced,
                                "violation_s": {} if thermal is None else {"power": 3.0, "thermal": thermal},
                                "unread": unread or {}}}


@pytest.mark.parametrize("power, verdict", [(900.0, "pass"), (899.9, "fail")])  # 0.75 × 1,200 W
def test_power_reached_against_dcgms_ratio_of_the_target(power, verdict):
    [reached] = [c for c in sustained_power.checks("gpu0", gpu(power=power), GB200) if c["check"] == "power.reached"]
    assert reached["verdict"] == verdict and reached["threshold"] == 900.0
    assert "DCGM_FR_TARGET_POWER" in reached["source"] and "default power limit" in reached["source"]


def test_a_short_load_below_the_target_is_no_evidence_but_one_that_reaches_it_passes():
    # Not judged (no check, so neither a pass nor an incomplete that would fail a quick burn-in).
    assert "power.reached" not in verdicts(sustained_power.checks("gpu0", gpu(power=899.0, load_s=29.0), GB200))
    assert verdicts(sustained_power.checks("gpu0", gpu(power=899.0, load_s=30.0), GB200))["power.reached"] == "fail"
    assert verdicts(sustained_power.checks("gpu0", gpu(power=950.0, load_s=5.0), GB200))["power.reached"] == "pass"


def test_an_enforced_limit_at_or_below_the_floor_leaves_power_unjudged():
    found = sustained_power.checks("gpu0", gpu(power=850.0, enforced=900.0), GB200)
    assert verdicts(found)["power.reached"] == "incomplete"
    assert verdicts(sustained_power.checks("gpu0", gpu(power=850.0, enforced=901.0), GB200))["power.reached"] == "fail"


@pytest.mark.parametrize("thermal, verdict", [(0.0, "pass"), (0.001, "fail")])
def test_any_thermal_violation_in_the_load_fails(thermal, verdict):
    found = sustained_power.checks("gpu0", gpu(thermal=thermal), GB200)
    assert verdicts(found)["power.thermal_violation_s"] == verdict


def test_power_nvml_did_not_give_is_incomplete_never_a_pass():
    found = sustained_power.checks("gpu0", gpu(power=None, thermal=None,
                                               unread={"nvmlDeviceGetTotalEnergyConsumption": "not supported"}), GB200)
    assert verdicts(found) == {"power.reached": "incomplete", "power.thermal_violation_s": "incomplete"}
    assert "nvmlDeviceGetTotalEnergyConsumption" in found[0]["reason"]
    assert sustained_power.checks("gpu0", gpu(power=None, thermal=None), load_references(sku="no such sku")) == []


@pytest.mark.parametrize("target, verdict", [(700.0, "pass"), (650.0, "warn")])
def test_the_default_limit_is_cross_checked_against_the_datasheet_tdp(target, verdict):
    found = sustained_power.checks("gpu0", gpu(power=690.0, target=target, enforced=target), H100)
    assert verdicts(found)["power.default_limit"] == verdict
    assert "power.default_limit" not in verdicts(sustained_power.checks("gpu0", gpu(), GB200))  # no datasheet TDP cited


def margins(margin=20, memory=74, slowdown=95):
    entry = gpu()
    entry["under_load"].update(thermal_margin_c_min=margin, memory_temperature_c_max=memory)
    entry["before"]["memory_slowdown_c"] = slowdown
    return entry


@pytest.mark.parametrize("entry, name, verdict", [
    (margins(margin=1), "thermal.margin", "pass"),
    (margins(margin=0), "thermal.margin", "fail"),  # at the slowdown threshold
    (margins(memory=94), "thermal.memory_temperature", "pass"),
    (margins(memory=95), "thermal.memory_temperature", "fail"),  # HBM at its slowdown threshold
    (margins(margin=None), "thermal.margin", "incomplete"),
    (margins(slowdown=None), "thermal.memory_temperature", "incomplete"),
])
def test_thermal_margins_under_load(entry, name, verdict):
    found = thermal_margins.checks("gpu0", entry, GB200)
    assert verdicts(found)[name] == verdict
    assert "nvml" in next(c for c in found if c["check"] == name)["source"].lower()


# --- the simulator's side: faults in NVML's violation counters, read around a load ----------------
def window_of(sim_rack, text, gpu_id, busy_s=40.0):  # past DCGM's 30 s ramp
    from probes.sim import SimNvml

    rack = sim_rack(text)
    nvml = SimNvml(rack, "ct03")
    nvml.nvmlInit()
    reader = NvmlReader(nvml, now=rack.clock.now)
    index = next(i for i, g in enumerate(rack.gpus("ct03")) if g.id == gpu_id)
    start = reader.read_power_window_each([index])[index]
    sim_gpu = rack.gpus("ct03")[index]
    sim_gpu.add_load(rack.now(), busy_s)
    rack.clock.advance(busy_s - 0.1)  # still under load when the window closes
    end = reader.read_power_window_each([index])[index]
    return sustained_power.window(start, end), reader.read_under_load(index)


def test_a_power_brake_shows_in_the_power_violation_counter_and_misses_the_target(sim_rack):
    text = "faults:\n  - {kind: power_brake, gpu: ct03/gpu1, clock_factor: 0.5}\n"
    section, _ = window_of(sim_rack, text, "rack07/ct03/gpu1")
    assert section["violation_s"]["power"] == pytest.approx(39.9, abs=0.01) and section["violation_s"]["thermal"] == 0
    entry = {"sustained_power": section, "before": {}, "under_load": {}}
    assert verdicts(sustained_power.checks("gpu1", entry, GB200))["power.reached"] == "fail"
    healthy, _ = window_of(sim_rack, text, "rack07/ct03/gpu0")
    assert healthy["violation_s"] == {"power": 0.0, "thermal": 0.0}
    assert verdicts(sustained_power.checks("gpu0", {"sustained_power": healthy, "before": {}, "under_load": {}},
                                           GB200))["power.reached"] == "pass"


def test_a_thermal_throttle_shows_in_the_thermal_counter_and_eats_the_margin(sim_rack):
    text = "faults:\n  - {kind: thermal_throttle, gpu: ct03/gpu2, after_busy_s: 3, temperature_c: 92}\n"
    section, sample = window_of(sim_rack, text, "rack07/ct03/gpu2")
    assert section["violation_s"]["thermal"] == pytest.approx(39.9 - 3, abs=0.01)
    assert sample.thermal_margin_c < 0 and sample.memory_temperature_c > sample.temperature_c


@pytest.mark.parametrize("name, context", [
    ("power.reached", "power"),  # cannot hold its power target: the power-delivery repair
    ("power.thermal_violation_s", "cooling"), ("thermal.margin", "cooling"), ("thermal.memory_temperature", "cooling"),
    ("c2c.links", "replace"),  # GB200: GPU and Grace CPU on one tray board
])
def test_each_new_failure_gets_its_repair(name, context):
    from opsctl.localize.gpu_faults import gpu_fault

    assert gpu_fault(name).context == context


def test_a_gpu_whose_load_failed_is_not_judged_on_its_power_or_temperatures():
    entry = {**gpu(power=300.0, load_s=2.0), "failures": [{"probe": "gemm", "error": "did not return within 2 s"}]}
    assert sustained_power.checks("gpu0", entry, GB200) == [] and thermal_margins.checks("gpu0", entry, GB200) == []


@pytest.mark.slow
def test_the_power_window_reading_of_a_hung_gpu_costs_one_deadline_and_names_it(hgx_with_a_gpu_that_hangs):
    import time

    # gpu6's driver stops answering 1 s in (wall clock): after the first reading, before the power window's.
    rack, nvml, reader = hgx_with_a_gpu_that_hangs("gpu6")
    time.sleep(max(0.0, 1.2 - rack.now()))
    began = time.monotonic()
    found = reader.read_power_window_each(range(8))
    took = time.monotonic() - began
    assert [i for i, r in found.items() if r.hung] == [6] and 0.5 <= took < 5  # one deadline for the tray
    assert all(found[i].energy_j is not None for i in range(8) if i != 6)
