"""The inventory: one Ansible YAML inventory that both opsctl and ansible/ read (README,
Pointing opsctl at real racks).

A rack is a group that sets (or inherits) `opsctl_model`; its hosts are its trays. Variables
are inherited from parent groups down to hosts, as Ansible does. What opsctl reads:

  opsctl_model       gb200-nvl72 | hgx-h100 | hgx-h200                       (required)
  opsctl_transport   ssh | local           how opsctl reaches the trays      (default ssh)
  opsctl_backend     nvml | sim            what reads the hardware           (default nvml)
  opsctl_scenario    fault scenario file for the sim backend, relative to the inventory
  opsctl_cabling_map cabling map CSV, relative to the inventory (default: the model's)
  opsctl_tray        which tray a host is (ct03, st1); else taken from the host name's end
  opsctl_python      the Python that runs `python -m probes` on the tray    (default python3)
  opsctl_slurm_node  the tray's Slurm node name (drain, resume, --via slurm) (default: the host name)
  opsctl_known_hosts the known_hosts file of every hop (default ~/.ssh/known_hosts)
  opsctl_ssh_config  the ssh_config file, relative to the inventory      (default ~/.ssh/config)
  opsctl_vendor      the rack's cohort, as the ledger records it when it first hears of the rack:
  opsctl_batch       vendor or ODM, delivery batch, firmware at handover (opsctl ledger stats --by)
  opsctl_firmware
  ansible_host, ansible_port, ansible_user, ansible_ssh_private_key_file     (ssh transport; each
                     wins over the ssh_config file, whose Host entries are looked up by ansible_host)

Host names may use Ansible's numeric ranges: `rack07-ct[01:18]`.

Every variable's type and bounds, and the groups' keys, are the schema in inventory_schema.py
(docs/schemas/inventory.schema.json, for an editor); this module keeps the rules between them.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from opsctl.errors import InputError
from opsctl.input_checks import shown
from opsctl.rack_models import HGX_TRAY, MODELS, NAME_PATTERN, RackModel
from opsctl.yaml_input import MAX_WRITTEN_BYTES, load_yaml_file

DEFAULT_INVENTORY = Path(__file__).resolve().parent / "data" / "inventory.yaml"
INVENTORY_ENV = "OPSCTL_INVENTORY"

# The opsctl_* variables of inventory_schema.Variables (a test checks they are the same).
KNOWN_OPSCTL_VARS = {
    "opsctl_model",
    "opsctl_transport",
    "opsctl_backend",
    "opsctl_scenario",
    "opsctl_cabling_map",
    "opsctl_tray",
    "opsctl_python",
    "opsctl_known_hosts",
    "opsctl_ssh_config",
    "opsctl_slurm_node",
    "opsctl_vendor",
    "opsctl_batch",
    "opsctl_firmware",
    # Read by the Ansible roles (ansible/roles/*/defaults/main.yml), not by opsctl.
    "opsctl_probes_venv",
    "opsctl_probes_python",
    "opsctl_probes_pip_args",
    "opsctl_probes_workdir",
    "opsctl_probes_poll_s",
    "opsctl_exporter_listen",
    "opsctl_exporter_port",
    "opsctl_exporter_interval_s",
    "opsctl_exporter_config_dir",
    "opsctl_exporter_unit_dir",
    "opsctl_exporter_systemd",
}
_RANGE = re.compile(r"\[(\d+):(\d+)\]")
_TRAY_SUFFIX = re.compile(r"(ct\d{2}|st\d)$")


@dataclass(frozen=True)
class Tray:
    name: str  # ct03, st1, or "node" for an HGX server
    host: str  # inventory host name
    address: str  # where ssh connects (ansible_host, else the host name): an ssh_config Host alias, or the host itself
    port: int | None  # ansible_port; None: ssh_config's Port, else 22
    user: str | None  # ansible_user; None: ssh_config's User, else the local user
    key_file: str | None
    python: str
    is_switch: bool
    slurm_node: str = ""  # the tray's node in Slurm (opsctl_slurm_node, else the host name)


@dataclass(frozen=True)
class Rack:
    name: str
    model: RackModel
    transport: str
    backend: str
    scenario: Path | None
    cabling_map: Path | None
    known_hosts: str | None
    trays: tuple[Tray, ...]
    source: Path
    ssh_config: str | None = None  # opsctl_ssh_config, as written (relative to the inventory)
    vars: dict[str, Any] = field(default_factory=dict, compare=False)

    def tray(self, name: str) -> Tray:
        for tray in self.trays:
            if tray.name == name:
                return tray
        raise KeyError(name)

    @property
    def missing_trays(self) -> list[str]:
        present = {t.name for t in self.trays}
        return [name for name in self.model.tray_names() if name not in present]


@dataclass(frozen=True)
class Inventory:
    source: Path
    racks: dict[str, Rack]
    non_rack_groups: tuple[str, ...]  # groups with hosts but no opsctl_model

    def rack(self, name: str) -> Rack:
        if name in self.racks:
            return self.racks[name]
        if name in self.non_rack_groups:
            raise InputError(f"{self.source}: group {name!r} has hosts but no opsctl_model, so it is not a rack")
        known = ", ".join(sorted(self.racks)) or "none"
        raise InputError(f"unknown rack {name!r} in {self.source} (racks: {known})")


def inventory_path(option: str | Path | None = None) -> Path:
    """--inventory, else $OPSCTL_INVENTORY, else the packaged default (simulated racks)."""
    return Path(option or os.environ.get(INVENTORY_ENV) or DEFAULT_INVENTORY)


def load_inventory(path: str | Path | None = None) -> Inventory:
    from opsctl.input_schema import convert
    from opsctl.inventory_schema import InventoryFile

    path = inventory_path(path)
    data = load_yaml_file(path, MAX_WRITTEN_BYTES)
    convert({name: None for name in data} if isinstance(data, dict) else data, InventoryFile, path)
    data = dict(data)
    top = dict(_checked_group("all", data.pop("all", None), path) or {})
    if data:  # Ansible reads top-level groups beside `all` as its children
        children = top.get("children") or {}
        twice = sorted(str(name) for name in data if children.get(name) and data[name])
        if twice:  # one would replace the other (a group only listed under all: is defined once)
            raise InputError(f"{path}: group {', '.join(twice)} is defined twice, under all: children: and at the top "
                             "level; keep one")
        top["children"] = {**children, **data}
    racks: dict[str, Rack] = {}
    non_racks: list[str] = []
    seen_hosts: dict[str, str] = {}
    _walk_group("all", top, {}, path, racks, non_racks, seen_hosts)
    return Inventory(source=path, racks=racks, non_rack_groups=tuple(non_racks))


MAX_NAME = 253  # the longest DNS name in text (RFC 1035's 255 octets on the wire)


def _check_name(name: object, what: str, source: Path) -> None:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise InputError(f"{source}: {what} {shown(name)} is not a valid name ([A-Za-z0-9_.-]+)")
    if len(name) > MAX_NAME:
        raise InputError(f"{source}: {what} {shown(name)} is longer than {MAX_NAME} characters (a DNS name's limit)")


def _checked_group(name: str, group: object, source: Path) -> dict[str, Any] | None:
    """`group` checked by the schema (inventory_schema.Group), its own keys only: each group and
    each host's variables are checked apart, so that a mistake is named by its group or host
    (msgspec names a mapping's keys only as [...]). The walk reads the document itself, so that
    variables opsctl does not know (Ansible's, anyone's) are inherited like the rest."""
    from opsctl.input_schema import convert
    from opsctl.inventory_schema import Group

    own = group
    if isinstance(group, dict):
        own = {key: {inner: None for inner in value} if key in ("hosts", "children") and isinstance(value, dict) else value
               for key, value in group.items()}
    if own is not None:
        convert(own, Group, f"{source}: group {name}")
    return cast("dict[str, Any] | None", group)  # a mapping or None: what the schema let through


def _check_host_vars(pattern: str, host_vars: object, source: Path) -> dict[str, Any]:
    from opsctl.input_schema import convert
    from opsctl.inventory_schema import Variables

    if host_vars is not None:
        convert(host_vars, Variables, f"{source}: host {pattern}")
    return cast("dict[str, Any] | None", host_vars) or {}  # a mapping or None: what the schema let through


def _check_vars(variables: dict[str, Any], source: Path, where: str) -> None:
    """An opsctl_* variable no one reads is a typo (a schema takes any other name: Ansible's)."""
    for key in variables:
        if key.startswith("opsctl_") and key not in KNOWN_OPSCTL_VARS:
            raise InputError(
                f"{source}: {where}: unknown variable {key} (known: {', '.join(sorted(KNOWN_OPSCTL_VARS))})"
            )


def _walk_group(name: str, group: dict[str, Any] | None, inherited: dict[str, Any], source: Path,
                racks: dict[str, Rack], non_racks: list[str], seen_hosts: dict[str, str]) -> None:
    _check_name(name, "group", source)
    group = _checked_group(name, group, source) or {}
    group_vars = group.get("vars") or {}
    _check_vars(group_vars, source, f"group {name}")
    merged = {**inherited, **group_vars}
    hosts = group.get("hosts") or {}
    if hosts:
        if "opsctl_model" in merged:
            racks[name] = _build_rack(name, hosts, merged, source, seen_hosts, racks)
        else:
            non_racks.append(name)
    children = group.get("children") or {}
    for child_name, child in children.items():
        _walk_group(child_name, child, merged, source, racks, non_racks, seen_hosts)


def _expand_host_pattern(pattern: str, source: Path) -> list[str]:
    """`rack07-ct[01:18]` -> rack07-ct01 … rack07-ct18 (Ansible's numeric ranges, zero padding kept)."""
    match = _RANGE.search(pattern)
    if not match:
        return [pattern]
    start, end = match.group(1), match.group(2)
    if int(start) > int(end):
        raise InputError(f"{source}: host pattern {pattern!r}: range start is after its end")
    width = len(start) if start.startswith("0") else 0
    names = []
    for number in range(int(start), int(end) + 1):
        expanded = pattern[: match.start()] + str(number).zfill(width) + pattern[match.end() :]
        names.extend(_expand_host_pattern(expanded, source))
    return names


def _build_rack(name: str, hosts: dict[str, Any], rack_vars: dict[str, Any], source: Path,
                seen_hosts: dict[str, str], racks: dict[str, Rack]) -> Rack:
    if name in racks:
        raise InputError(f"{source}: rack {name!r} defined twice")
    model = MODELS[rack_vars["opsctl_model"]]
    transport = rack_vars.get("opsctl_transport", "ssh")
    backend = rack_vars.get("opsctl_backend", "nvml")
    base = source.parent
    scenario = _relative_file(rack_vars.get("opsctl_scenario"), base)
    if scenario is not None and backend != "sim":
        raise InputError(f"{source}: rack {name}: opsctl_scenario is only read with opsctl_backend: sim")
    cabling_map = _relative_file(rack_vars.get("opsctl_cabling_map"), base)

    trays: dict[str, Tray] = {}
    for pattern, host_vars in hosts.items():
        _check_name_pattern(pattern, source)
        _check_host_count(pattern, model, source, name)
        host_vars = _check_host_vars(pattern, host_vars, source)
        _check_vars(host_vars, source, f"host {pattern}")
        for host in _expand_host_pattern(pattern, source):
            _check_name(host, "host", source)
            if host in seen_hosts:
                raise InputError(f"{source}: host {host} is in rack {seen_hosts[host]} and in rack {name}")
            seen_hosts[host] = name
            merged = {**rack_vars, **host_vars}
            tray = _build_tray(host, merged, model, source, name)
            if tray.name in trays:
                raise InputError(f"{source}: rack {name}: hosts {trays[tray.name].host} and {host} are both tray {tray.name}")
            trays[tray.name] = tray
    order = {tray: i for i, tray in enumerate(model.tray_names())}
    return Rack(
        name=name,
        model=model,
        transport=transport,
        backend=backend,
        scenario=scenario,
        cabling_map=cabling_map,
        known_hosts=rack_vars.get("opsctl_known_hosts"),
        ssh_config=rack_vars.get("opsctl_ssh_config"),
        trays=tuple(sorted(trays.values(), key=lambda t: order[t.name])),
        source=source,
        vars=dict(rack_vars),
    )


def _check_host_count(pattern: str, model: RackModel, source: Path, rack: str) -> None:
    """Count the hosts a pattern names before making them: every host is one tray, so a pattern
    naming more hosts than the model has trays (`r[0:999][0:999][0:999]-ct01`) is a mistake, and
    refused without building a billion names."""
    count: float = 1
    for start, end in _RANGE.findall(pattern):
        if len(start) > 100 or len(end) > 100:  # never turned into an int (Python's 4,300-digit limit)
            count = math.inf
            break
        count *= max(0, int(end) - int(start) + 1)
    limit = len(model.tray_names())
    if count > limit:
        shown = "more than 10^100" if count == math.inf else f"{count:,}"
        raise InputError(f"{source}: rack {rack}: host pattern {pattern!r} names {shown} hosts; "
                         f"a {model.name} rack has {limit} tray(s), one host each")


def _check_name_pattern(pattern: str, source: Path) -> None:
    if not isinstance(pattern, str) or not NAME_PATTERN.fullmatch(_RANGE.sub("0", pattern)):
        raise InputError(f"{source}: host {pattern!r} is not a valid name ([A-Za-z0-9_.-]+)")


def _relative_file(value: str | None, base: Path) -> Path | None:
    if value is None:
        return None
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else base / path


def _build_tray(host: str, host_vars: dict[str, Any], model: RackModel, source: Path, rack: str) -> Tray:
    tray_name = host_vars.get("opsctl_tray")
    if tray_name is None:
        if not model.is_nvl72:
            tray_name = HGX_TRAY
        else:
            match = _TRAY_SUFFIX.search(host)
            if not match:
                raise InputError(
                    f"{source}: rack {rack}: host {host}: set opsctl_tray (ct01–ct18 or st1–st9) "
                    "or end the host name with it"
                )
            tray_name = match.group(1)
    if tray_name not in model.tray_names():
        raise InputError(
            f"{source}: rack {rack}: host {host}: tray {tray_name!r} is not a tray of {model.name} "
            f"({model.tray_names()[0]} … {model.tray_names()[-1]})"
        )
    return Tray(
        name=tray_name,
        host=host,
        address=host_vars.get("ansible_host", host),
        port=host_vars.get("ansible_port"),
        user=host_vars.get("ansible_user"),
        key_file=host_vars.get("ansible_ssh_private_key_file"),
        python=str(host_vars.get("opsctl_python", "python3")),
        is_switch=model.is_switch_tray(tray_name),
        slurm_node=host_vars.get("opsctl_slurm_node", host),
    )
