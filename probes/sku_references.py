"""The figures a tray is judged against: the rulebook (probes/references/rules.yaml), NVIDIA's XID
catalog (probes/xids.py) and the GPU model's datasheet figures (probes/references/<sku>.yaml), each
with its source. Every check family reads them; this module judges nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


from probes import xids
from probes.compute import DTYPES
from probes.shipped_yaml import ShippedYamlError, load_shipped_yaml

REFERENCES = Path(__file__).parent / "references"
SHARED_FILES = ("rules.yaml", "xids.yaml")


class ReferencesError(ValueError):
    """A references file that cannot be used."""


@dataclass


class References:
    sku: dict[str, Any] | None  # the GPU model's figures; None for a model without a reference file
    rules: dict[str, Any]
    xids: dict[str, Any]
    sku_source: str | None = None


# What a GPU model's references file may hold: each figure is a mapping with its threshold and
# the source it comes from (every verdict names its source).
FIGURES = {"nvlink_links": "value", "membw": "min_gbps", "nvlink_peer": "min_gbps", "collective": "min_busbw_gbps",
           "tdp": "watts"}


def _load(path: str | Path) -> dict[str, Any]:
    try:
        data = load_shipped_yaml(path)
    except OSError as error:
        raise ReferencesError(f"{path}: {error.strerror or error}") from None
    except ShippedYamlError as error:
        where = f" (line {error.line}, column {error.column})" if error.line is not None else ""
        raise ReferencesError(f"{path}: not valid YAML{where}: {error.problem}") from None
    if not isinstance(data, dict):
        raise ReferencesError(f"{path}: not a mapping")
    return data


def check_sku_references(data: dict[str, Any], path: str | Path) -> None:
    """Refuse a references file that would silently judge nothing: unknown keys, figures that
    are not positive numbers or lack their source, no figure at all."""
    known = {"sku", "names", "pci_device_ids", "nvlink_generation", "fabric_required", "host_link", "nvswitch_on_host", "gemm",
             *FIGURES}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ReferencesError(f"{path}: unknown key {unknown[0]!r} (a references file holds {', '.join(sorted(known))})")
    figures = [(key, data[key], FIGURES[key]) for key in FIGURES if key in data]
    gemm = data.get("gemm", {})
    if not isinstance(gemm, dict):
        raise ReferencesError(f"{path}: gemm must be a mapping of dtypes ({', '.join(DTYPES)})")
    for dtype, figure in gemm.items():
        if dtype not in DTYPES:
            raise ReferencesError(f"{path}: gemm.{dtype} is not a dtype the probe runs ({', '.join(DTYPES)})")
        figures.append((f"gemm.{dtype}", figure, "min_tflops"))
    if not figures:
        raise ReferencesError(f"{path}: no figure to judge against (gemm, {', '.join(FIGURES)})")
    for key, figure, field in figures:
        if not isinstance(figure, dict):
            raise ReferencesError(f"{path}: {key} must be a mapping with {field} and source")
        value = figure.get(field)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ReferencesError(f"{path}: {key}.{field} must be a positive number, got {value!r}")
        if not isinstance(figure.get("source"), str) or not figure["source"].strip():
            raise ReferencesError(f"{path}: {key} needs a source (where the figure comes from)")
    if "names" in data and not (isinstance(data["names"], list) and all(isinstance(n, str) for n in data["names"])):
        raise ReferencesError(f"{path}: names must be a list of GPU names as NVML reports them")


def sku_files() -> list[Path]:
    return sorted(p for p in REFERENCES.glob("*.yaml") if p.name not in SHARED_FILES)


def load_references(gpu_name: str | None = None, path: str | None = None, sku: str | None = None,
                    device_id: str | None = None) -> References:
    """The rules, the XID catalog and the figures for the GPU model: by `sku` (h100, gb200…),
    else by its PCI device id as NVML reports it (`device_id`, "2330"), else by the name NVML
    reports; or those of the file `path`. The device id decides where it is known: an H100 NVL
    or H200 NVL is named like the SXM part but is another SKU (DCGM's diag-skus.yaml tells them
    apart by device id), and gets no SXM figures."""
    rules, catalog = _load(REFERENCES / "rules.yaml"), xids.catalog()  # the catalog is read once (probes/xids.py)
    if path is not None:
        figures = _load(path)
        check_sku_references(figures, path)
        return References(figures, rules, catalog, str(path))
    device_id = device_id.lower() if isinstance(device_id, str) else None
    for file in sku_files():
        data = _load(file)
        if sku:
            found = data.get("sku") == sku
        elif device_id:
            found = device_id in [str(d).lower() for d in data.get("pci_device_ids", [])]
        else:
            found = bool(gpu_name and any(gpu_name.startswith(n) for n in data.get("names", [])))
        if found:
            return References(data, rules, catalog, f"probes/references/{file.name}")
    return References(None, rules, catalog)
