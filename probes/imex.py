"""`python -m probes imex`: is this compute tray ready for a job that spans the NVLink domain?

NVIDIA's IMEX guide (docs.nvidia.com/multi-node-nvlink-systems/imex-guide): the IMEX service
(`nvidia-imex`) must be running on every node of the domain before CUDA applications start, and
IMEX channels (/dev/nvidia-caps-imex-channels/channelN) are not created by default — without
one, the CUDA calls that share memory across nodes fail with an insufficient-permission error.
A GB200 NVL72 job across trays needs both; opsctl's domain test reads them on every compute
tray before it runs any load.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from probes.check_record import Check, check
from probes.sku_references import load_references
from probes.snapshot import FORMAT

CHANNELS_DIR = "/dev/nvidia-caps-imex-channels"
SERVICE = "nvidia-imex"
EXIT_OK, EXIT_FAILED, EXIT_INCOMPLETE = 0, 1, 3


def read_host_imex() -> dict[str, Any]:
    """{"service": active | inactive | failed | … | None (cannot tell), "channels": [names]}."""
    channels = sorted(os.listdir(CHANNELS_DIR)) if os.path.isdir(CHANNELS_DIR) else []
    service = None
    if shutil.which("systemctl"):
        try:
            done = subprocess.run(["systemctl", "is-active", SERVICE], capture_output=True, text=True, timeout=10, check=False)
            service = done.stdout.strip() or None
        except (OSError, subprocess.TimeoutExpired):
            service = None
    return {"service": service, "channels": [c for c in channels if c.startswith("channel")]}


def imex_document(tray: str | None, backend_kind: str, reading: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """(document, exit code): the reading and its two checks."""
    source = load_references().rules["imex"]["source"]
    service, channels = reading.get("service"), reading.get("channels") or []
    checks: list[Check] = []
    if service is None:
        checks.append(check("imex.service", "tray", "incomplete", None, "active", "", "!=", source,
                            f"cannot tell whether {SERVICE} runs (no systemctl answer)"))
    else:
        checks.append(check("imex.service", "tray", "pass" if service == "active" else "fail", service, "active", "", "!=",
                            source, f"{SERVICE} is {service}" + ("" if service == "active" else
                                                                 ": multi-node NVLink memory calls cannot work")))
    checks.append(check("imex.channels", "tray", "pass" if channels else "fail", len(channels), 1, "channels", "<", source,
                        f"{len(channels)} IMEX channel(s) in {CHANNELS_DIR}" + ("" if channels else
                                                                                ": none created (they are not by default)")))
    document = {"format": FORMAT, "kind": "imex", "tray": tray, "backend": backend_kind, "service": service,
                "channels": channels, "status": "complete", "checks": checks, "errors": []}
    if any(c["verdict"] == "fail" for c in checks):
        return document, EXIT_FAILED
    return document, EXIT_INCOMPLETE if any(c["verdict"] == "incomplete" for c in checks) else EXIT_OK
