"""Simulated racks: fault scenario files, and compiling them with a topology into the spec the
tray-side simulator (probes.sim) runs on."""

from opsctl.simulation.compiler import compile_rack_spec
from opsctl.simulation.scenario import Scenario, load_scenario, parse_scenario

__all__ = ["Scenario", "compile_rack_spec", "load_scenario", "parse_scenario"]
