"""What commands share: the inventory named by --inventory / $OPSCTL_INVENTORY, and the rack."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from opsctl.errors import InputError
from opsctl.inventory import load_inventory
from opsctl.rack_models import NAME_PATTERN
from opsctl.regular_files import InputFile

if TYPE_CHECKING:
    from click.decorators import FC

    from opsctl.inventory import Inventory, Rack


def inventory_from(ctx: click.Context) -> Inventory:
    return load_inventory(ctx.find_root().obj.get("inventory"))


def rack_from(ctx: click.Context, name: str) -> Rack:
    if not NAME_PATTERN.fullmatch(name):
        raise InputError(f"rack name {name!r} is not valid ([A-Za-z0-9_.-]+)")
    return inventory_from(ctx).rack(name)


def _remember_inventory(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        ctx.find_root().obj["inventory"] = value
    return value


# --inventory after the command as well as before it (`opsctl burnin rack07 --inventory FILE`):
# the same setting, stored where every command reads it.
inventory_option = click.option(
    "--inventory", "-i", type=InputFile(), expose_value=False, callback=_remember_inventory,
    help="Ansible-format inventory of racks (also accepted before the command; default: $OPSCTL_INVENTORY, "
         "else the built-in simulated racks).")


def rack_argument(command: FC) -> FC:
    """The RACK argument of a command, and the --inventory it is looked up in."""
    return click.argument("rack")(inventory_option(command))
