"""`opsctl tco run --from-ledger`: the scenario's reliability block with what the fleet's own
ledger measured (MTBI, mean repair time, GPUs idled) in place of the published figures."""

import copy

from opsctl.errors import InputError
from opsctl.tco.scenario import scenario_from_data


def with_measured_reliability(scenario, measured):
    """A new Scenario whose reliability block takes the ledger's measured keys.

    A measured repair time and blast radius describe all of the fleet's failures together, so
    they replace the scenario's failure_mix (the two cannot stand side by side); anything the
    ledger could not measure keeps the scenario's value."""
    data = copy.deepcopy(scenario.raw)
    if not isinstance(data.get("reliability"), dict):
        raise InputError(f"{scenario.source}: --from-ledger needs a reliability block (restart and checkpoint "
                         "times) for the ledger's MTBI and repair times to go into")
    block = data["reliability"]
    sources = data.get("sources") if isinstance(data.get("sources"), dict) else {}
    block.update(measured.scenario)
    for key in measured.scenario:
        sources[f"reliability.{key}"] = measured.source
    if "repair_hours" in measured.scenario and "failure_mix" in block:
        del block["failure_mix"]
        sources.pop("reliability.failure_mix", None)
    if sources:
        data["sources"] = sources
    return scenario_from_data(data, scenario.source)
