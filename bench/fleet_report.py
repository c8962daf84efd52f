"""How long `opsctl report` takes to judge a fleet run, per GB200 NVL72 rack.

    .venv/bin/python bench/fleet_report.py [--racks 5 20] [--duration 2]

Burns in the simulated rack07 (seeded faults, 27 trays, local transport) once for its trays'
probe JSON. Then, for each fleet size, plans a fleet run of that many simulated NVL72 racks
(`opsctl fleet plan`'s code) and puts rack07's tray documents, with an Ansible record of each
tray's exit code, where burnin.yml leaves them — a tray document names no rack, so one rack's
serve every rack — and times judging the whole run as `opsctl report` does. Ansible is not in
the timing: this is the controller's share of a fleet burn-in after the last batch.
"""

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opsctl.fleet.judge import judge_fleet  # noqa: E402
from opsctl.fleet.plan import plan_run  # noqa: E402
from opsctl.inventory import load_inventory  # noqa: E402


def burn_in_rack07(root, duration):
    """rack07's tray documents and each tray's exit code, from one real `opsctl burnin`."""
    run = root / "rack07-burnin"
    subprocess.run([sys.executable, "-m", "opsctl", "burnin", "rack07", "--duration", str(duration), "--out", str(run),
                    "--json"], capture_output=True, check=False, timeout=1800)
    journal = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    codes = {e["tray"]: e["exit_code"] for e in journal if e["event"] == "tray_finished"}
    return {tray: (run / "trays" / f"{tray}.json", code) for tray, code in codes.items()}


def fleet_inventory(root, racks):
    # No scenario: rack07's is written for rack07, and the judged documents are rack07's anyway.
    lines = ["all:", "  vars: {opsctl_model: gb200-nvl72, opsctl_backend: sim, opsctl_transport: local}", "  children:"]
    for n in range(1, racks + 1):
        lines += [f"    r{n:03d}:", "      hosts:", f"        r{n:03d}-ct[01:18]:", f"        r{n:03d}-st[1:9]:"]
    path = root / f"fleet-{racks}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def judge_time(root, racks, trays, duration):
    inventory = load_inventory(fleet_inventory(root, racks))
    planned = plan_run(inventory, list(inventory.racks.values()), root / f"run-{racks}", "burnin", duration_s=duration)
    for entry in planned["trays"].values():
        document, code = trays[entry["tray"]]
        if document.is_file():
            shutil.copy(document, entry["result"])
        Path(entry["record"]).write_text(json.dumps({"rc": code, "stderr": "", "delta": "0:00:05.000000"}))
    started = time.perf_counter()
    fleet = judge_fleet(planned["run_dir"])
    return time.perf_counter() - started, fleet["counts"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--racks", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--duration", type=float, default=2.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="opsctl-bench-fleet-"))
    try:
        trays = burn_in_rack07(root, args.duration)
        print(f"rack07 burned in once: {len(trays)} trays, exit codes {sorted(set(c for _, c in trays.values()), key=str)}")
        for racks in args.racks:
            seconds, counts = judge_time(root, racks, trays, args.duration)
            print(f"{racks} NVL72 racks ({racks * 27} trays): judged in {seconds:.1f} s, {seconds / racks:.2f} s a rack; "
                  f"verdicts {counts}")
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak resident memory of this process: {peak_mib:.0f} MiB")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
