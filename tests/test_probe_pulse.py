"""The pulse test (probes/pulse.py): load steps on and off on every GPU of a tray at once, judged
on NVML's clocks-event reasons during and right after the steps — the power brake fails, HW
slowdown alone warns, too few readings are incomplete, a clean run passes; the power of each step
is reported, not judged. The simulator's power_brake fault fails it in a real probe process, a
healthy GPU of the same tray passes, and the failure gets the power-delivery repair."""

import json
import subprocess
import sys

import pytest

from probes import pulse
from probes.sku_references import load_references

GB200 = load_references(sku="gb200")
NAME = "power.pulse.clocks_event_reasons"


def entry(reasons_on=(), reasons_off=("gpu_idle",), cycles=2, planned=2, unread=False, finished=True):
    steps = []
    for cycle in range(cycles):
        steps.append({"cycle": cycle, "load": "on", "t_s": 2.0 * cycle + 1, "power_w": 1190.0,
                      "clocks_event_reasons": None if unread else list(reasons_on)})
        steps.append({"cycle": cycle, "load": "off", "t_s": 2.0 * cycle + 2, "power_w": 150.0,
                      "clocks_event_reasons": None if unread else list(reasons_off)})
    return {"index": 0, "pulse": {"step_s": 1.0, "cycles_planned": planned, "cycles_run": cycles, "steps": steps,
                                  "started": 100.0, "seconds": 2.0 * cycles, "finished": finished}}


def judged(gpu):
    [found] = pulse.checks("gpu0", gpu, GB200)
    assert found["check"] == NAME
    return found


@pytest.mark.parametrize("on, off, verdict", [
    ((), ("gpu_idle",), "pass"),
    (("sw_power_cap",), ("gpu_idle",), "pass"),  # the power cap at full load is expected, not a brake
    (("hw_power_brake_slowdown", "hw_slowdown"), ("gpu_idle",), "fail"),  # as the simulator's power brake shows
    ((), ("gpu_idle", "hw_power_brake_slowdown"), "fail"),  # right after a step counts too
    (("hw_slowdown",), (), "warn"),  # NVML: may also show at a clock change
])
def test_the_power_brake_in_any_reading_of_the_steps_fails(on, off, verdict):
    found = judged(entry(on, off))
    assert found["verdict"] == verdict
    assert "not judged" in found["reason"] and "1190" in found["reason"]  # power per step, reported
    assert "Power Brake" in found["source"] or "PState or clock change" in found["source"]


def test_one_reading_with_the_brake_is_enough():
    gpu = entry()
    gpu["pulse"]["steps"][-1]["clocks_event_reasons"] = ["hw_power_brake_slowdown"]
    found = judged(gpu)
    assert found["verdict"] == "fail" and "1 of 4 readings" in found["reason"]


@pytest.mark.parametrize("gpu", [entry(unread=True), entry(cycles=1, planned=2, finished=False)])
def test_readings_missing_or_steps_unmade_are_incomplete_never_a_pass(gpu):
    assert judged(gpu)["verdict"] == "incomplete"


def test_a_gpu_lost_or_not_pulsed_is_not_judged_here():
    assert pulse.checks("gpu0", {"index": 0}, GB200) == []
    assert pulse.checks("gpu0", {**entry(), "lost": True}, GB200) == []


@pytest.mark.parametrize("seconds, cycles", [(3.9, 2), (5.9, 2), (6.0, 3), (128.0, 64)])
def test_the_steps_fill_the_share_of_the_run_with_two_cycles_at_the_least(seconds, cycles):
    assert pulse.cycles_for(seconds) == cycles


def test_xids_are_listed_when_they_came_during_the_steps():
    section = entry()["pulse"]
    events = [{"xid": 79, "time": 99.0}, {"xid": 149, "time": 102.5}, {"xid": 13, "time": 106.0}]
    assert [e["xid"] for e in pulse.xids_during(section, events)] == [149]


def test_a_pulse_failure_gets_the_power_delivery_repair():
    from opsctl.localize.gpu_faults import gpu_fault

    fault = gpu_fault(NAME, ["hw_power_brake_slowdown", "hw_slowdown"])
    assert (fault.kind, fault.context) == ("power_brake", "power")


@pytest.mark.slow
def test_the_simulators_power_brake_fails_the_pulse_in_a_probe_run(tmp_path, rack07_topology):
    from opsctl.simulation import compile_rack_spec
    from opsctl.simulation.scenario import scenario_from_text

    text = "seed: 1\nfaults:\n  - {kind: power_brake, gpu: ct03/gpu1, clock_factor: 0.5}\n"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(compile_rack_spec(scenario_from_text(text), rack07_topology).to_dict()))
    proc = subprocess.run([sys.executable, "-m", "probes", "run", "--backend", "sim", "--sim-spec", str(spec), "--tray",
                           "ct03", "--json", "--duration", "2", "--probes", "pulse,counters"],
                          capture_output=True, text=True, timeout=120)
    doc = json.loads(proc.stdout)
    assert doc["probes"]["pulse"]["status"] == "complete", proc.stderr
    verdicts = {gpu["index"]: next(c["verdict"] for c in gpu["checks"] if c["check"] == NAME) for gpu in doc["gpus"]}
    assert verdicts == {0: "pass", 1: "fail", 2: "pass", 3: "pass"}
    for gpu in doc["gpus"]:
        section = gpu["pulse"]
        assert section["finished"] and section["cycles_run"] == 2 and len(section["steps"]) == 4 and section["xids"] == []
        on = [s["power_w"] for s in section["steps"] if s["load"] == "on"]
        off = [s["power_w"] for s in section["steps"] if s["load"] == "off"]
        assert min(on) > 2 * max(off)  # the steps really step the load: NVML's power follows them
