"""What one NVML reading of a simulated GPU costs in CPU: `NvmlReader.read_gpu` (identity, health,
every NVLink port's fields) on a GB200 tray of the seeded rack07, the reading the exporter and the
probes make. In the simulator the driver's work is Python, so this is what a test serving 72 GPUs
from one process pays per GPU and round.

    .venv/bin/python bench/sim_nvml_read.py [--reads 200]

Prints CPU milliseconds per GPU reading (process time, the reader's worker threads included), with
identity and without, the median of 5 batches.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from opsctl.rack_models import model_named  # noqa: E402
from opsctl.simulation import compile_rack_spec  # noqa: E402
from opsctl.simulation.scenario import scenario_from_text  # noqa: E402
from opsctl.topology import build_topology  # noqa: E402
from probes.nvml_reader import NvmlReader  # noqa: E402
from probes.sim import SimNvml, SimRack  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reads", type=int, default=200, help="readings per batch (default 200)")
    args = parser.parse_args()
    topology = build_topology("rack07", model_named("gb200-nvl72"))
    scenario = scenario_from_text((REPO / "opsctl/data/scenarios/rack07-seeded.yaml").read_text())
    spec = compile_rack_spec(scenario, topology)
    spec.epoch = time.time() - 100
    nvml = SimNvml(SimRack(spec), "ct05")
    nvml.nvmlInit()
    reader = NvmlReader(nvml)
    for identity in (True, False):
        batches = []
        for _ in range(5):
            started = time.process_time()
            for k in range(args.reads):
                reader.read_gpu(k % reader.count, identity=identity)
            batches.append((time.process_time() - started) / args.reads * 1000)
        print(f"{'with identity' if identity else 'links and health'}: {statistics.median(batches):.2f} CPU-ms "
              f"per GPU reading (batches: {', '.join(f'{b:.2f}' for b in batches)})")


if __name__ == "__main__":
    main()
