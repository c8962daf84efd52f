"""What the pulse test (probes/pulse.py) takes on a simulated tray: `python -m probes run
--backend sim --probes pulse,counters` on ct03 of rack07 (4 GB200 GPUs), for each --duration given.

Prints, per duration: the pulse's share of the run (planned_s), its wall seconds, the cycles it
made, the probe process's CPU seconds (user + system) and the power it read on and off the steps.

    .venv/bin/python bench/pulse_sim.py 4 20 60
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(durations: list[float]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        spec = Path(directory) / "rack07.json"
        subprocess.run([sys.executable, "-m", "opsctl", "sim", "spec", "rack07", "-o", str(spec)], check=True, cwd=REPO)
        print("duration_s  planned_s  pulse_wall_s  cycles  process_wall_s  process_cpu_s  power_on_w  power_off_w")
        for duration in durations:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            began = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "probes", "run", "--backend", "sim", "--sim-spec", str(spec),
                                   "--tray", "ct03", "--probes", "pulse,counters", "--duration", f"{duration:g}", "--json"],
                                  capture_output=True, text=True, cwd=REPO, env={**os.environ})
            wall = time.monotonic() - began
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            doc = json.loads(proc.stdout)
            probe = doc["probes"]["pulse"]
            steps = [step for gpu in doc["gpus"] for step in gpu["pulse"]["steps"]]
            on = [s["power_w"] for s in steps if s["load"] == "on"]
            off = [s["power_w"] for s in steps if s["load"] == "off"]
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            print(f"{duration:10g}  {probe['planned_s']:9.2f}  {probe['duration_s']:12.2f}  "
                  f"{doc['gpus'][0]['pulse']['cycles_run']:6d}  {wall:14.2f}  {cpu:13.2f}  "
                  f"{sum(on) / len(on):10.0f}  {sum(off) / len(off):11.0f}")


if __name__ == "__main__":
    main([float(arg) for arg in sys.argv[1:]] or [4.0, 20.0, 60.0])
