"""`python -m probes preflight --probes LIST [--collective]`: can this tray run what a burn-in
asks of it? Asked by opsctl before any load (opsctl/burnin/preflight.py), so a run that cannot
work says so within seconds instead of after its load.

It opens the tray's backend as a run would (pynvml and the driver, or the simulator's spec),
imports the module of every selected probe, and asks the backend whether its load probes and
the rack-wide collective can run here (PyTorch with CUDA and NCCL on a real tray). Nothing is
loaded and no counter is judged. The document lists what is missing, each with the command
that installs it; exit 0 when nothing is, 1 when something is.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from probes.exit_codes import EXIT_FAILED, EXIT_OK
from probes.snapshot import FORMAT

if TYPE_CHECKING:
    from collections.abc import Sequence

    from probes.backend import TrayBackend

# The module each probe runs from (probes/run.py and probes/collective.py import them).
PROBE_MODULES = {"gemm": "probes.gemm", "membw": "probes.membw", "nvlink": "probes.nvlink_bw", "pulse": "probes.pulse",
                 "hbm": "probes.hbm_test", "configuration": "probes.configuration", "counters": "probes.counters",
                 "collective": "probes.collective"}
LOAD_PROBES = ("gemm", "membw", "nvlink", "pulse", "hbm")  # those that need the compute device
REDEPLOY = "redeploy the probes to this tray (ansible-playbook ansible/deploy.yml, or pip install opsctl)"
REINSTALL = "reinstall the probes' dependencies (pip install opsctl, or ansible-playbook ansible/deploy.yml)"


def unloadable_document(tray: str | None, backend: str, probes: Sequence[str], error: ImportError) -> tuple[dict[str, Any], int]:
    """The document of a tray whose backend cannot load: every probe is missing what it imports."""
    reason = f"the {backend} backend cannot load: cannot import {error.name or 'a module'} ({error}); {REINSTALL}"
    document = {"format": FORMAT, "kind": "preflight", "tray": tray, "backend": backend, "probes": list(probes),
                "status": "complete", "missing": [{"probe": ",".join(probes), "reason": reason}], "errors": []}
    return document, EXIT_FAILED


def preflight_document(backend: TrayBackend, probes: Sequence[str], collective: bool) -> tuple[dict[str, Any], int]:
    """(document, exit code): {"kind": "preflight", "missing": [{"probe", "reason"}], …}."""
    missing: list[dict[str, str]] = []
    wanted = [*probes, *(["collective"] if collective else [])]
    for probe in wanted:
        module = PROBE_MODULES.get(probe)
        if module is None:
            missing.append({"probe": probe, "reason": f"this tray's probes know no probe {probe!r}; {REDEPLOY}"})
            continue
        try:
            importlib.import_module(module)
        except Exception as error:  # ImportError, or a module that breaks as it loads
            fix = REINSTALL if isinstance(error, ImportError) and error.name and not error.name.startswith("probes") \
                else REDEPLOY
            missing.append({"probe": probe, "reason": f"cannot import {module} ({type(error).__name__}: {error}); {fix}"})
    gpus = backend.nvml is not None  # a switch tray runs no load and no collective rank
    load = [p for p in probes if p in LOAD_PROBES]
    if gpus and load:
        why = backend.compute_missing()
        if why:
            missing.append({"probe": ",".join(load), "reason": why})
    if gpus and collective:
        why = backend.collective_missing()
        if why:
            missing.append({"probe": "collective", "reason": why})
    document = {"format": FORMAT, "kind": "preflight", "tray": backend.tray, "backend": backend.kind,
                "probes": wanted, "status": "complete", "missing": missing, "errors": []}
    return document, EXIT_FAILED if missing else EXIT_OK
