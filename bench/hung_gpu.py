"""Burn-in and triage of an HGX H100 tray with one hung GPU, against the same tray healthy.

The scenario (issue 15): gpu0 hangs (`gpu_hang`, NVML calls block too, or with --compute-only
only its compute) and gpu1 falls off the bus. Each GPU is read and loaded on its own worker
under a deadline (probes/gpu_deadline.py: NVML 10 s, compute 60 s), so the run should name gpu0
as hung and gpu1 as lost and judge the six others, in about the healthy run's time plus one
deadline. Prints, for each command: wall time, exit code, verdict, the GPUs it named and how
many GPUs it judged; docs/benchmarks.md records the figures.

    .venv/bin/python bench/hung_gpu.py [--duration 20] [--window 20] [--compute-only]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = {
    "healthy": "",
    "hung": "faults:\n  - {kind: gpu_hang, gpu: gpu0, nvml: true}\n  - {kind: gpu_lost, gpu: gpu1}\n",
    "hung-compute": "faults:\n  - {kind: gpu_hang, gpu: gpu0, nvml: false}\n  - {kind: gpu_lost, gpu: gpu1}\n",
}


def inventory(folder, name):
    (folder / f"{name}.yaml").write_text(f"scenario: {name}\nseed: 11\nrack: hgx01\n{SCENARIOS[name]}")
    path = folder / f"inventory-{name}.yaml"
    path.write_text("all:\n  children:\n    hgx01:\n      vars: {opsctl_model: hgx-h100, opsctl_transport: local, "
                    f"opsctl_backend: sim, opsctl_scenario: {name}.yaml}}\n      hosts:\n        hgx01-node:\n")
    return path


def opsctl(folder, *args):
    env = {**os.environ, "XDG_STATE_HOME": str(folder / "state")}  # a throwaway ledger and run folders
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "opsctl", *map(str, args), "--json"], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=900)
    return time.monotonic() - began, done.returncode, json.loads(done.stdout or "{}")


def burnin(folder, name, duration):
    took, code, summary = opsctl(folder, "--inventory", inventory(folder, name), "burnin", "hgx01", "--duration", duration,
                                 "--out", folder / f"run-{name}")
    named = {}
    for c in summary.get("checks", []):
        if c["verdict"] == "fail" and c["component"].count("/") == 1:
            named.setdefault(c["component"].split("/")[-1], []).append(c["check"])
    judged = sum(1 for gpu in summary.get("gpus", []) if gpu["verdict"] in ("pass", "warn", "fail"))
    return took, code, summary.get("verdict"), named, judged


def triage(folder, name, window):
    took, code, result = opsctl(folder, "--inventory", inventory(folder, name), "triage", "hgx01", "--window", window)
    named = [s["component"].split("/")[-1] for s in result.get("suspects", []) if "alternative_to" not in s]
    observed = result.get("observed", {})
    return took, code, result.get("status"), named, observed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=20.0, help="burn-in load seconds (default 20)")
    parser.add_argument("--window", type=float, default=20.0, help="triage window seconds (default 20)")
    parser.add_argument("--compute-only", action="store_true", help="gpu0's compute hangs, its NVML answers")
    args = parser.parse_args()
    hung = "hung-compute" if args.compute_only else "hung"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in ("healthy", hung):
            took, code, verdict, named, judged = burnin(folder, name, args.duration)
            print(f"burnin --duration {args.duration:g}, {name:>12}: wall {took:5.1f} s, exit {code}, {verdict}, "
                  f"{judged}/8 GPUs with a verdict, failing: {named or 'none'}")
        for name in ("healthy", hung):
            took, code, status, named, observed = triage(folder, name, args.window)
            print(f"triage --window {args.window:g},   {name:>12}: wall {took:5.1f} s, exit {code}, {status}, "
                  f"observed {observed}, named: {named or 'none'}")


if __name__ == "__main__":
    main()
