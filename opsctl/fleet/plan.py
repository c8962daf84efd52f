"""Planning a fleet run that Ansible carries out: the trays of the chosen racks, and for each
the exact probe command `opsctl burnin` would run there — the same plan and arguments — so that
`opsctl report` can judge what comes back as burnin does.

`plan_run` makes the fleet run folder (see opsctl/fleet/__init__.py): fleet.json, and per rack a
run directory made by burnin's own `start_run` (run.json with the plan and the criteria, the
journal) with, for a simulated rack, the spec its trays run on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsctl.backend import on_one_timeline, sim_spec_for
from opsctl.burnin.session import make_plan, operator, start_run
from opsctl.errors import InputError
from opsctl.fanout.runner import probe_argv
from opsctl.fleet.trays import tray_row
from opsctl.runs.atomic_file import write_json_atomic
from opsctl.runs.journal import utc_now
from opsctl.runs.run_directory import make_run_folder

if TYPE_CHECKING:
    from opsctl.inventory import Inventory, Rack
    from opsctl.runs.run_directory import RunDirectory

FLEET_FORMAT = "opsctl-fleet-run/1"
FLEET_FILE = "fleet.json"
RECORDS_FOLDER = "ansible"  # per rack: how each tray's probe ended, as Ansible saw it
SPEC_FILE = "sim-spec.json"


def record_file(run: RunDirectory, tray_name: str) -> Path:
    """ansible/ct03.json, ansible/hgx01.json: named as the tray's result in trays/ is."""
    return run.path / RECORDS_FOLDER / run.tray_file(tray_name).name


def plan_run(inventory: Inventory, racks: Sequence[Rack], run_dir: str | Path, kind: str,
             criteria_file: str | None = None, duration_s: float | None = None,
             run_timeout_s: float | None = None) -> dict[str, Any]:
    """Make the fleet run folder; return what each tray runs, keyed by Ansible host."""
    run_dir = Path(run_dir).resolve()
    if (run_dir / FLEET_FILE).exists():
        raise InputError(f"{run_dir} already holds a fleet run; give each run its own folder")
    plan = make_plan(kind, criteria_file=criteria_file, duration_s=duration_s, run_timeout_s=run_timeout_s)
    criteria = plan.criteria
    make_run_folder(run_dir)  # as `burnin --out` does: a folder that cannot be made is an input error
    record = {
        "format": FLEET_FORMAT, "kind": kind, "inventory": str(Path(inventory.source).resolve()),
        "racks": [rack.name for rack in racks], "created": utc_now(), "by": operator(),
        "duration_s": plan.duration_s, "run_timeout_s": plan.run_timeout_s, "criteria": criteria.record(),
    }
    try:
        write_json_atomic(run_dir / FLEET_FILE, record)
    except OSError as error:  # a folder that is there but not ours to write (read-only, /proc)
        raise InputError(f"{run_dir}: cannot write the run folder: {error.strerror or error}") from None
    trays: dict[str, dict[str, Any]] = {}
    for rack in racks:
        run = start_run(rack, plan, run_dir / rack.name)
        (run.path / RECORDS_FOLDER).mkdir(exist_ok=True)
        spec = on_one_timeline(sim_spec_for(rack))
        if spec is not None:
            run.write_json(SPEC_FILE, spec.to_dict())
        run.journal.record("run_started", trays=[t.name for t in rack.trays], resumed=False, by=operator(), via="ansible")
        for tray in rack.trays:
            trays[tray.host] = {
                **tray_row(rack, tray),
                "run": run_dir.name,
                # `python -m probes` + these, as the fan-out of `opsctl burnin` calls it but for
                # --stop-on-stdin-eof (Ansible holds no stdin open for the probe to watch); a
                # simulated tray adds `--sim-spec` with where the spec landed on the tray.
                "argv": probe_argv(rack, tray, plan.probe_args(criteria), []),
                "sim_spec": str(run.path / SPEC_FILE) if spec is not None else None,
                "result": str(run.tray_file(tray.name)),
                "record": str(record_file(run, tray.name)),
                "run_timeout_s": plan.run_timeout_s,
            }
    return {"run_dir": str(run_dir), "kind": kind, "racks": [rack.name for rack in racks],
            "duration_s": plan.duration_s, "trays": trays}
