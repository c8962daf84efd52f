"""What issue 17's host-link additions cost on a simulated HGX H100 server (8 GPUs): the
configuration and host-link reading (now with the PCIe AER counters, on each GPU's NVML worker)
at the start and end of a run, and the pinned host↔device copies after the memory-bandwidth
probe. Prints wall and CPU seconds per tray, and the copies' modelled seconds per GPU.

    .venv/bin/python bench/host_link_depth.py            # 20 repetitions
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opsctl.rack_models import model_named  # noqa: E402
from opsctl.simulation import compile_rack_spec  # noqa: E402
from opsctl.simulation.scenario import scenario_from_text  # noqa: E402
from opsctl.topology import build_topology  # noqa: E402
from probes import host_copy  # noqa: E402
from probes.compute.sim_device import SimDevice  # noqa: E402
from probes.nvml_reader import NvmlReader  # noqa: E402
from probes.sim import SimComputeDevice, SimNvml, SimRack  # noqa: E402
from probes.sim.clock import ManualClock  # noqa: E402
from probes.tray_depth import DepthReading  # noqa: E402


def rack():
    spec = compile_rack_spec(scenario_from_text("seed: 1\n"), build_topology("hgx01", model_named("hgx-h100")))
    return SimRack(json.loads(json.dumps(spec.to_dict())), clock=ManualClock())


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    sim = rack()
    nvml = SimNvml(sim)
    nvml.nvmlInit()
    reader = NvmlReader(nvml, now=sim.clock.now)
    before = reader.read_all(links=False)
    depth_times, finish_times, copy_times, modelled = [], [], [], []
    for _ in range(args.repeat):
        holder = {}
        depth_times.append(timed(lambda: holder.update(depth=DepthReading(
            nvml, reader.handles, before, reader.system(), sim.clock.now, ["configuration"], reader.workers))))
        gpus = [{"index": r.index} for r in before]
        finish_times.append(timed(lambda: holder["depth"].finish(gpus)))
        devices = [SimDevice(SimComputeDevice(sim, gpu)) for gpu in sim.gpus()]
        start = sim.now()
        copy_times.append(timed(lambda: [host_copy.measure(d) for d in devices]))
        modelled.append((sim.now() - start) / len(devices))
    for name, found in (("configuration + host link + AER, start of run (8 GPUs)", depth_times),
                        ("host link + AER again, end of run (8 GPUs)", finish_times),
                        ("pinned host copies, 8 GPUs one after another (CPU only: modelled time not slept)", copy_times)):
        print(f"{name}: wall {statistics.median(w for w, _ in found) * 1000:.1f} ms, "
              f"CPU {statistics.median(c for _, c in found) * 1000:.1f} ms (median of {args.repeat})")
    print(f"pinned host copies: {statistics.median(modelled):.3f} s modelled per GPU "
          f"(2 × {host_copy.ITERATIONS + 1} copies of {host_copy.COPY_BYTES >> 20} MiB)")


if __name__ == "__main__":
    main()
