"""The inventory's YAML form as msgspec schemas: groups of hosts, children and variables, and the
variables opsctl and its Ansible roles read (docs/schemas/inventory.schema.json is written from
them). opsctl/inventory.py checks a file with InventoryFile, then walks it; it keeps, as code,
what a schema cannot say: an opsctl_* variable no one reads, names (host ranges are expanded
first), a host in two racks, a tray two hosts claim, a scenario without the sim backend.

Variables other than these are Ansible's and anyone's, so a Variables mapping takes any other key.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from opsctl.input_checks import MAX_SECONDS
from opsctl.input_schema import Name

# The models of opsctl/rack_models.py MODELS (a test checks they are the same).
Model = Literal["gb200-nvl72", "hgx-h100", "hgx-h200"]
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=4096, pattern=r"\S", description="text")]
FilePath = Annotated[Text, msgspec.Meta(description="a file path; relative to the inventory's folder")]
Port = Annotated[int, msgspec.Meta(ge=1, le=65535, description="a TCP port")]
Address = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.:@%-]+$", max_length=253, description="a host name or address")]
SlurmNode = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.-]+$", max_length=253, description="a Slurm node name")]
Interval = Annotated[float, msgspec.Meta(gt=0, le=MAX_SECONDS, description="seconds, above 0 and at most a week")]
# A cohort's name (a batch `2026-03`, a vendor, a firmware version); a bare number is a name too.
CohortText = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"\S", description="a cohort's name")] | int


class Variables(msgspec.Struct, frozen=True, kw_only=True):
    """A group's or a host's variables: inherited from parent groups down to hosts, as Ansible does."""

    opsctl_model: Annotated[Model, msgspec.Meta(description="the rack's model: a group that sets it is a rack")] | UnsetType = UNSET
    opsctl_transport: Annotated[Literal["ssh", "local"], msgspec.Meta(description="how opsctl reaches the trays (default ssh)")] | UnsetType = UNSET
    opsctl_backend: Annotated[Literal["nvml", "sim"], msgspec.Meta(description="what reads the hardware (default nvml)")] | UnsetType = UNSET
    opsctl_scenario: Annotated[FilePath, msgspec.Meta(description="the fault scenario file of the sim backend")] | UnsetType = UNSET
    opsctl_cabling_map: Annotated[FilePath, msgspec.Meta(description="the cabling map CSV (default: the model's)")] | UnsetType = UNSET
    opsctl_tray: Annotated[Name, msgspec.Meta(description="which tray a host is (ct03, st1); else the host name's end")] | UnsetType = UNSET
    opsctl_python: Annotated[Text, msgspec.Meta(description="the Python that runs the probes on the tray (default python3)")] | UnsetType = UNSET
    opsctl_known_hosts: Annotated[FilePath, msgspec.Meta(description="the ssh known_hosts file of the rack's trays")] | UnsetType = UNSET
    opsctl_ssh_config: Annotated[FilePath, msgspec.Meta(description="the ssh_config file of the rack's trays (default ~/.ssh/config)")] | UnsetType = UNSET
    opsctl_slurm_node: Annotated[SlurmNode, msgspec.Meta(description="the tray's Slurm node (default: the host name)")] | UnsetType = UNSET
    # The rack's cohort, recorded in the ledger (opsctl ledger stats --by vendor|batch|firmware).
    opsctl_vendor: Annotated[CohortText, msgspec.Meta(description="the rack's vendor or ODM (a ledger cohort)")] | UnsetType = UNSET
    opsctl_batch: Annotated[CohortText, msgspec.Meta(description="the rack's delivery batch (a ledger cohort)")] | UnsetType = UNSET
    opsctl_firmware: Annotated[CohortText, msgspec.Meta(
        description="the firmware the rack was handed over with (a ledger cohort)")] | UnsetType = UNSET
    # Read by the Ansible roles (ansible/roles/*/defaults/main.yml), not by opsctl.
    opsctl_probes_venv: Text | UnsetType = UNSET
    opsctl_probes_python: Text | UnsetType = UNSET
    opsctl_probes_pip_args: str | UnsetType = UNSET
    opsctl_probes_workdir: Text | UnsetType = UNSET
    opsctl_probes_poll_s: Interval | UnsetType = UNSET
    opsctl_exporter_listen: Text | UnsetType = UNSET
    opsctl_exporter_port: Port | UnsetType = UNSET
    opsctl_exporter_interval_s: Interval | UnsetType = UNSET
    opsctl_exporter_config_dir: Text | UnsetType = UNSET
    opsctl_exporter_unit_dir: Text | UnsetType = UNSET
    opsctl_exporter_systemd: bool | UnsetType = UNSET
    # Ansible's connection variables, as the ssh transport reads them.
    ansible_host: Annotated[Address, msgspec.Meta(description="where ssh connects (default: the host name)")] | UnsetType = UNSET
    ansible_port: Annotated[Port, msgspec.Meta(description="the ssh port (default: the ssh_config's Port, else 22)")] | UnsetType = UNSET
    ansible_user: Annotated[Address, msgspec.Meta(description="the ssh user (default: the ssh_config's User, else yours)")] | UnsetType = UNSET
    ansible_ssh_private_key_file: Annotated[FilePath, msgspec.Meta(description="the ssh key")] | UnsetType = UNSET


class Group(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """An Ansible group: a rack when it sets (or inherits) opsctl_model; its hosts are its trays."""

    hosts: Annotated[dict[str, Variables | None], msgspec.Meta(description=(
        "host name (or range: rack07-ct[01:18]) -> its variables"))] | None = None
    vars: Variables | None = None
    children: Annotated[dict[str, Group | None], msgspec.Meta(description="group name -> group")] | None = None


# The file: `all` and any other top-level group (Ansible reads those as children of `all`).
InventoryFile = dict[str, Group | None]
