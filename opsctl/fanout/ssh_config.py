"""The way to a tray as the user's ssh_config describes it: the Host alias, HostName, User, Port,
IdentityFile and ProxyJump of the tray and of every jump host before it, resolved by Fabric's
`Connection` (over paramiko's ssh_config parser). The ssh transport (ssh.py) opens the hops in
order, each with its host key verified, and runs the probe on the last.

Which file: `--ssh-config FILE`, else the inventory's `opsctl_ssh_config`, else ~/.ssh/config
where it exists. Only that one file is read — not /etc/ssh/ssh_config, not Fabric's or Invoke's
own config files — so what reaches a tray is what the operator wrote there and in the inventory.
The inventory's ansible_user, ansible_port and ansible_ssh_private_key_file win over the file for
the tray itself, as with Ansible.

ProxyJump is followed as OpenSSH follows it: `ProxyJump b1,b2` visits b1 first, then b2, then
the host (Fabric's own chain visits them the other way round), and b1's own ProxyJump, if it has
one, is followed to reach it; `ProxyJump none` means none. A host reached by ProxyCommand is
refused: that command would be another ssh client, verifying host keys by rules opsctl does not
hold to. Options that decide trust — StrictHostKeyChecking, UserKnownHostsFile, HostKeyAlias —
and ForwardAgent are not read: the fan-out verifies every hop's key against its own known_hosts
file and forwards no agent, whatever the file says.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import paramiko
from fabric import Config, Connection

from opsctl.errors import InputError
from opsctl.regular_files import read_regular_text

if TYPE_CHECKING:
    from opsctl.inventory import Tray

DEFAULT_SSH_CONFIG = "~/.ssh/config"
MAX_JUMP_HOSTS = 8  # hops before a tray: more is a ProxyJump loop in the file, not a network
MAX_SSH_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True)
class SshConfig:
    """One parsed ssh_config file (`path` None: there is none, so every host is as named)."""

    path: Path | None
    parsed: paramiko.SSHConfig

    def fabric_config(self) -> Config:
        # lazy: no /etc/fabric.yaml, ~/.fabric.yaml or FABRIC_* environment; the explicit
        # ssh_config object: no other ssh_config file.
        return Config(ssh_config=self.parsed, lazy=True,
                      overrides={"forward_agent": False, "load_ssh_configs": False, "timeouts": {"connect": None}})

    def hops(self, tray: Tray) -> list[Connection]:
        """The Connections to open, in order: the jump hosts (none, one or more), then the tray.
        The tray's inventory variables win over the file; each jump host is as the file says."""
        key_files = [os.path.expanduser(tray.key_file)] if tray.key_file else []
        try:
            target = Hop(tray.address, user=tray.user, port=tray.port, config=self.fabric_config(),
                         connect_kwargs={"key_filename": key_files})
        except RecursionError:
            raise InputError(f"{self.path}: the jump hosts before {tray.address} never end (a ProxyJump loop)") from None
        except ValueError as error:  # Fabric: a user or port both in ansible_host and beside it
            raise InputError(f"host {tray.host}: {error}") from None
        chain = [target]
        while isinstance(chain[0].gateway, Connection):
            chain.insert(0, chain[0].gateway)
            if len(chain) > MAX_JUMP_HOSTS + 1:
                raise InputError(f"{self.path}: more than {MAX_JUMP_HOSTS} jump hosts before {tray.address} (a ProxyJump loop?)")
        return chain


class Hop(Connection):
    """Fabric's Connection, with ProxyJump followed in OpenSSH's order and ProxyCommand refused."""

    def get_gateway(self) -> Connection | None:
        jumps = self.ssh_config.get("proxyjump")
        if jumps is None:
            if self.ssh_config.get("proxycommand"):
                raise InputError(f"ssh_config reaches {self.original_host} by ProxyCommand; opsctl verifies every "
                                 "hop's host key itself and follows ProxyJump only: write `ProxyJump HOST` instead")
            return None
        names = [name.strip() for name in jumps.split(",") if name.strip()]
        if not names or names[0].lower() == "none":
            return None
        if any(self.derive_shorthand(name)["host"] in (self.original_host, self.host) for name in names):
            return None  # `Host * / ProxyJump bastion` read for the bastion itself: reach it directly
        gateway: Connection | None = None
        for name in names:  # the first is reached by its own ssh_config; each next through the one before
            gateway = Hop(name, config=self.config.clone(), gateway=gateway)
        return gateway


def load_ssh_config(path: str | os.PathLike[str] | None) -> SshConfig:
    """The named file (bad input when it cannot be read), else ~/.ssh/config, else none."""
    if path is None:
        default = Path(os.path.expanduser(DEFAULT_SSH_CONFIG))
        if not default.is_file():
            return SshConfig(None, paramiko.SSHConfig())
        path = default
    path = Path(os.path.expanduser(path))
    text = read_regular_text(path, MAX_SSH_CONFIG_BYTES)
    try:
        parsed = paramiko.SSHConfig.from_text(text)
    except (paramiko.ssh_exception.ConfigParseError, ValueError, KeyError) as error:
        raise InputError(f"{path}: not an ssh_config file paramiko can read ({error})") from None
    return SshConfig(path, parsed)


def describe(hop: Connection) -> str:
    """user@host:port, as messages name a hop."""
    return f"{hop.user}@{hop.host}:{hop.port}"


def connect_options(hop: Connection, timeout_s: float) -> dict[str, Any]:
    """paramiko connect() arguments for one hop: opsctl's timeouts at every step, and the keys
    to offer — the inventory's and those of the file that exist (OpenSSH skips a missing
    IdentityFile too); with none, the usual ~/.ssh keys and the agent, as OpenSSH does."""
    keys = [key for key in hop.connect_kwargs.get("key_filename", []) if key]
    inventory_keys = keys[:len(keys) - len(hop.ssh_config.get("identityfile", []))]
    keys = inventory_keys + [key for key in keys[len(inventory_keys):] if os.path.isfile(os.path.expanduser(key))]
    return {"key_filename": keys or None, "look_for_keys": not keys, "allow_agent": not keys,
            "timeout": timeout_s, "banner_timeout": timeout_s, "auth_timeout": timeout_s, "channel_timeout": timeout_s}
