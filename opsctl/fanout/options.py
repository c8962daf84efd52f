"""How a command line sets the fan-out: the options of every command that reaches a rack's
trays (`burnin`, `accept`; meant for `snapshot` and `triage` too), in one place so that they
read and default alike everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from opsctl.fanout.runner import FanoutOptions
from opsctl.input_checks import MAX_CONCURRENCY, seconds
from opsctl.regular_files import InputFile

DEFAULTS = FanoutOptions()

if TYPE_CHECKING:
    from click.decorators import FC


# The ssh_config file of every command that reaches trays over ssh (burnin, accept, snapshot, triage).
ssh_config_option = click.option(
    "--ssh-config", "ssh_config", type=InputFile(), metavar="FILE",
    help="ssh: the ssh_config file (Host aliases, User, Port, IdentityFile, ProxyJump) to reach the trays by; "
         "default: the inventory's opsctl_ssh_config, else ~/.ssh/config.")


def reach_options(command: FC) -> FC:
    """--concurrency, --connect-timeout, --accept-new-host-keys and --ssh-config."""
    for option in reversed([
        click.option("--concurrency", type=click.IntRange(min=1, max=MAX_CONCURRENCY), default=DEFAULTS.concurrency, show_default=True,
                     help="Trays working at once."),
        click.option("--connect-timeout", type=seconds(0.1, min_open=False), default=DEFAULTS.connect_timeout_s,
                     show_default=True, help="Seconds to reach and log in to a tray (ssh)."),
        click.option("--accept-new-host-keys", is_flag=True,
                     help="ssh: trust and record the keys of hosts not yet in known_hosts (a changed key is still refused)."),
        ssh_config_option,
    ]):
        command = option(command)
    return command
