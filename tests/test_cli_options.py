"""What the operator guide (docs/operator-guide.md) promises of every command: `--json`, and `--inventory FILE` after the command
as well as before it wherever the command reads the inventory."""

import click
import pytest

from opsctl.cli import cli

# The guide names these: `sim spec` prints JSON anyway, `ledger export` writes files.
WITHOUT_JSON = {"sim spec", "ledger export"}
# Commands that never read the inventory (the ledger, TCO, a run folder, the exporter's rules file).
WITHOUT_INVENTORY_PREFIXES = ("ledger", "repair", "tco", "report", "exporter rules")


def commands(group=cli, path=()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


def options(command):
    return {opt for param in command.params for opt in getattr(param, "opts", [])}


@pytest.mark.parametrize("name, command", list(commands()))
def test_every_command_takes_json_and_the_inventory_where_it_reads_one(name, command):
    assert ("--json" in options(command)) == (name not in WITHOUT_JSON), name
    reads_inventory = not name.startswith(WITHOUT_INVENTORY_PREFIXES)
    assert ("--inventory" in options(command)) == reads_inventory, name


def test_the_inventory_after_the_command_is_the_same_as_before(opsctl, tmp_path):
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("all:\n  children:\n    lab9:\n      vars:\n        opsctl_model: hgx-h100\n"
                         "        opsctl_transport: local\n        opsctl_backend: sim\n      hosts:\n        lab9-node:\n")
    before = opsctl("--inventory", inventory, "inventory", "show", "lab9", "--json")
    after = opsctl("inventory", "show", "lab9", "--inventory", inventory, "--json")
    assert before.code == after.code == 0 and before.json() == after.json()
    assert opsctl("inventory", "show", "lab9").code == 2  # the built-in inventory has no lab9

