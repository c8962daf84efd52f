"""How a command line sets the fan-out: the options of every command that reaches a rack's
trays (`burnin`, `accept`; meant for `snapshot` and `triage` too), in one place so that they
read and default alike everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from opsctl.fanout.runner import FanoutOptions
from opsctl.input_checks import MAX_CONCURRENCY, seconds

DEFAULTS = FanoutOptions()

if TYPE_CHECKING:
    from click.decorators import FC


def reach_options(command: FC) -> FC:
    """--concurrency, --connect-timeout and --accept-new-host-keys."""
    for option in reversed([
        click.option("--concurrency", type=click.IntRange(min=1, max=MAX_CONCURRENCY), default=DEFAULTS.concurrency, show_default=True,
                     help="Trays working at once."),
        click.option("--connect-timeout", type=seconds(0.1, min_open=False), default=DEFAULTS.connect_timeout_s,
                     show_default=True, help="Seconds to reach and log in to a tray (ssh)."),
        click.option("--accept-new-host-keys", is_flag=True,
                     help="ssh: trust and record the keys of hosts not yet in known_hosts (a changed key is still refused)."),
    ]):
        command = option(command)
    return command
