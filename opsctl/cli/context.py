"""What commands share: the inventory named by --inventory / $OPSCTL_INVENTORY, and the rack."""

import click

from opsctl.inventory import load_inventory
from opsctl.rack_models import NAME_PATTERN
from opsctl.errors import InputError


def inventory_from(ctx):
    return load_inventory(ctx.find_root().obj.get("inventory"))


def rack_from(ctx, name):
    if not NAME_PATTERN.fullmatch(name):
        raise InputError(f"rack name {name!r} is not valid ([A-Za-z0-9_.-]+)")
    return inventory_from(ctx).rack(name)


rack_argument = click.argument("rack")
