"""What the NVLink domain test costs on the simulated rack07: the prerequisites (`python -m
probes imex` on 18 compute trays) and the collective job (18 gloo processes, one per tray, the
default sweep of 8 sizes × 4 collectives and the bisection), timed from outside.

Runs the domain step alone against the tray documents of an earlier run (its `trays/` folder),
so the figure is the domain test's own, not the tray probes'.

    .venv/bin/opsctl burnin rack07 --out /tmp/rack07-run --no-ledger     # the tray documents
    .venv/bin/python bench/nvlink_domain.py /tmp/rack07-run [--repeat 3]

Prints each run's wall seconds and CPU seconds (this process and the probe processes it waited for).
"""

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opsctl.backend import sim_spec_for, topology_for
from opsctl.burnin.nvlink_domain import run_domain_test
from opsctl.inventory import load_inventory
from opsctl.runs import RunDirectory


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", help="an earlier rack07 run folder (its trays/ are the prerequisites' readings)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    rack = load_inventory(None).rack("rack07")
    documents = RunDirectory.open(args.run).tray_documents()
    spec = sim_spec_for(rack, topology_for(rack))
    walls, cpus = [], []
    for attempt in range(args.repeat):
        with tempfile.TemporaryDirectory() as workdir:
            started, cpu = time.monotonic(), cpu_seconds()
            document = run_domain_test(rack, workdir, documents, spec)
            walls.append(time.monotonic() - started)
            cpus.append(cpu_seconds() - cpu)
        slowest = max((r["seconds"] for r in document["collective"].values()), default=0.0)
        print(f"run {attempt + 1}: {walls[-1]:.1f} s wall, {cpus[-1]:.1f} CPU-s (this process and the probes it waited "
              f"for; the slowest tray's collective {slowest:.1f} s); "
              f"ran={document['ran']}, trays complete="
              f"{sum(r['status'] == 'complete' for r in document['collective'].values())}/{len(document['trays'])}")
    print(f"median {statistics.median(walls):.1f} s wall, {statistics.median(cpus):.1f} CPU-s over {len(walls)} run(s)")


def cpu_seconds():
    """User + system CPU of this process and of its children that ended (the tray probes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    main()
