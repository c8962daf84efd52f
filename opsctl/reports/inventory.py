"""What the inventory table adds from the trays' raw probe documents (trays/*.json, listed with
their sha256 in the report): where each GPU sits as NVML's platform info says — the chassis
(on a GB200 NVL72 the rack's own serial), the tray's slot and index, the GPU's module — and the
firmware each switch tray's chips report (`firmware` on its `switch_links` rows).

A tray file that is missing or cannot be read adds nothing: the table shows "–" there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opsctl.errors import InputError
from opsctl.regular_files import read_regular_text

PLATFORM_KEYS = ("chassis_serial", "slot", "tray_index", "host_id", "module_id")


def read_tray_inventory(summary: dict[str, Any], run_path: str | Path) -> dict[str, Any]:
    """{"gpus": {GPU id: platform dict}, "trays": {tray: {"chassis_serial", "slot", "tray_index",
    "firmware"}}}; each a sorted list of what the tray's parts report (one value when they agree;
    firmware as "VERSION (sw0, sw1)")."""
    gpus: dict[str, dict[str, Any]] = {}
    trays: dict[str, dict[str, list[Any]]] = {}
    for tray in summary["trays"]:
        document = _read(run_path, tray.get("file"))
        found: dict[str, set[Any]] = {"chassis_serial": set(), "slot": set(), "tray_index": set()}
        firmware: dict[str, set[str]] = {}  # version -> the chips that report it
        for gpu in document.get("gpus") or []:
            if not isinstance(gpu, dict) or not isinstance(gpu.get("index"), int):
                continue
            platform = gpu["platform"] if isinstance(gpu.get("platform"), dict) else {}
            gpus[f"{tray['id']}/gpu{gpu['index']}"] = {k: platform.get(k) for k in PLATFORM_KEYS}
            for key in ("chassis_serial", "slot", "tray_index"):
                if platform.get(key) not in (None, ""):
                    found[key].add(platform[key])
        for port in document.get("switch_links") or []:
            if isinstance(port, dict) and port.get("firmware"):
                firmware.setdefault(str(port["firmware"]), set()).add(str(port.get("chip")))
        trays[tray["tray"]] = {key: sorted(values, key=str) for key, values in found.items()}
        trays[tray["tray"]]["firmware"] = [f"{version} ({', '.join(sorted(chips))})" for version, chips in sorted(firmware.items())]
    return {"gpus": gpus, "trays": trays}


def rack_serials(inventory: dict[str, Any]) -> list[Any]:
    """Every chassis serial the rack's GPUs report (one, on a rack put together right)."""
    return sorted({serial for tray in inventory["trays"].values() for serial in tray["chassis_serial"]}, key=str)


def _read(run_path: str | Path, name: str | None) -> dict[str, Any]:
    if not name:
        return {}
    try:
        document = json.loads(read_regular_text(Path(run_path) / name))
    except (InputError, ValueError):  # not there, not a regular file, not JSON
        return {}
    return document if isinstance(document, dict) else {}
