"""Loading a cabling map: the CSV that says which physical parts each NVLink link passes through.

One row per GPU port. Required columns: tray, gpu, port, switch_chip, switch_port. Optional
columns name the finer parts on the path (see docs/topology.md):

  tray_connector    compute-tray backplane connector, relative to the tray   (j0 … j3)
  cartridge         NVLink spine cable cartridge, relative to the rack        (cart1 … cart4)
  switch_connector  switch-tray connector, relative to the chip's switch tray (j0 … j3)
  cables            twinax cables carrying the link inside its cartridge      (4)
  board             a board every link of the server crosses (HGX baseboard)
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path

from opsctl.errors import InputError
from opsctl.rack_models import NAME_PATTERN, RackModel
from opsctl.regular_files import read_regular_text
from opsctl.yaml_input import MAX_WRITTEN_BYTES

REQUIRED = ("tray", "gpu", "port", "switch_chip", "switch_port")
OPTIONAL = ("tray_connector", "cartridge", "switch_connector", "cables", "board")


@dataclass(frozen=True)
class CablingRow:
    tray: str
    gpu: int  # local GPU index in its tray
    port: int
    switch_chip: int
    switch_port: int
    tray_connector: str = ""
    cartridge: str = ""
    switch_connector: str = ""
    cables: int = 0
    board: str = ""


def _int(value: str | int, column: str, source: str, line: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InputError(f"{source}: line {line}: {column} must be a whole number, got {value!r}") from None
    if number < 0:
        raise InputError(f"{source}: line {line}: {column} must not be negative, got {number}")
    return number


def _name(value: str | None, column: str, source: str, line: int) -> str:
    value = (value or "").strip()
    if value and not NAME_PATTERN.fullmatch(value):
        raise InputError(f"{source}: line {line}: {column} {value!r} is not a valid name ([A-Za-z0-9_.-]+)")
    return value


def load_cabling_map(path: str | Path, model: RackModel) -> list[CablingRow]:
    """Read and check a cabling map for `model`: every GPU port of the model exactly once."""
    source = str(path)
    if not os.path.lexists(path):
        raise InputError(f"{source}: no such cabling map")
    text = read_regular_text(path, MAX_WRITTEN_BYTES)  # a FIFO or /dev/zero: refused in one line
    try:
        with io.StringIO(text, newline="") as f:
            reader = csv.DictReader(f)
            columns = reader.fieldnames or []
            missing = [c for c in REQUIRED if c not in columns]
            if missing:
                raise InputError(f"{source}: missing column(s) {', '.join(missing)}")
            unknown = [c for c in columns if c not in REQUIRED + OPTIONAL]
            if unknown:
                raise InputError(f"{source}: unknown column(s) {', '.join(unknown)}")
            rows: list[CablingRow] = []
            for line, record in enumerate(reader, start=2):
                if None in record or any(record.get(c) is None for c in columns):
                    raise InputError(f"{source}: line {line}: expected {len(columns)} fields")
                rows.append(
                    CablingRow(
                        tray=_name(record["tray"], "tray", source, line),
                        gpu=_int(record["gpu"], "gpu", source, line),
                        port=_int(record["port"], "port", source, line),
                        switch_chip=_int(record["switch_chip"], "switch_chip", source, line),
                        switch_port=_int(record["switch_port"], "switch_port", source, line),
                        tray_connector=_name(record.get("tray_connector"), "tray_connector", source, line),
                        cartridge=_name(record.get("cartridge"), "cartridge", source, line),
                        switch_connector=_name(record.get("switch_connector"), "switch_connector", source, line),
                        cables=_int(record.get("cables") or 0, "cables", source, line),
                        board=_name(record.get("board"), "board", source, line),
                    )
                )
    except FileNotFoundError:
        raise InputError(f"{source}: no such cabling map") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{source}: cannot read cabling map: {exc}") from None
    _check_complete(rows, model, source)
    return rows


def _check_complete(rows: list[CablingRow], model: RackModel, source: str) -> None:
    trays = set(model.compute_tray_names())
    seen_ports: dict[tuple[str, int, int], CablingRow] = {}
    seen_switch_ports: dict[tuple[int, int], CablingRow] = {}
    for row in rows:
        if row.tray not in trays:
            raise InputError(f"{source}: tray {row.tray!r} is not a compute tray of {model.name}")
        if row.gpu >= model.gpus_per_tray:
            raise InputError(f"{source}: {row.tray} gpu {row.gpu}: {model.name} has {model.gpus_per_tray} GPUs a tray")
        if row.port >= model.nvlink_ports:
            raise InputError(f"{source}: {row.tray} gpu {row.gpu}: port {row.port} out of range 0–{model.nvlink_ports - 1}")
        if row.switch_chip >= model.switch_chips:
            raise InputError(f"{source}: switch_chip {row.switch_chip} out of range 0–{model.switch_chips - 1}")
        if model.is_nvl72 and row.switch_chip != row.port:
            raise InputError(
                f"{source}: {row.tray} gpu {row.gpu} port {row.port} goes to chip {row.switch_chip}; "
                "on NVL72 port p goes to chip p"
            )
        if model.is_nvl72 and row.switch_connector and not row.cartridge:
            raise InputError(f"{source}: {row.tray} gpu {row.gpu} port {row.port}: switch_connector without cartridge")
        key = (row.tray, row.gpu, row.port)
        if key in seen_ports:
            raise InputError(f"{source}: {row.tray} gpu {row.gpu} port {row.port} listed twice")
        seen_ports[key] = row
        switch_key = (row.switch_chip, row.switch_port)
        if switch_key in seen_switch_ports:
            raise InputError(f"{source}: switch chip {row.switch_chip} port {row.switch_port} used by two links")
        seen_switch_ports[switch_key] = row
    expected = model.gpus * model.nvlink_ports
    if len(seen_ports) != expected:
        raise InputError(f"{source}: {len(seen_ports)} links, {model.name} has {expected}")
