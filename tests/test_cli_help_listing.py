"""`opsctl --help` lists every command from opsctl/cli's SUMMARIES without importing one (it cost a
second of CPU when it imported all seventeen), and each summary is its command's own help."""

import subprocess
import sys

import click
import pytest

from opsctl.cli import SUMMARIES, cli


def commands():
    ctx = click.Context(cli)
    return [(name, cli.get_command(ctx, name)) for name in cli.list_commands(ctx)]


def test_every_command_has_a_summary_and_no_summary_is_left_over():
    assert sorted(SUMMARIES) == [name for name, _ in commands()]


@pytest.mark.parametrize("limit", [30, 45, 60, 90, 200])
def test_each_summary_lists_as_its_command_would(limit):
    for name, command in commands():
        assert click.Command(name, help=SUMMARIES[name]).get_short_help_str(limit) == command.get_short_help_str(limit), name


def test_help_imports_no_command_module():
    code = ("import sys\nfrom opsctl.cli import run\nrun(['--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('opsctl.cli.commands.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    listing, imported = result.stdout.rsplit("\n", 2)[0], result.stdout.strip().splitlines()[-1]
    assert imported == "[]"
    assert all(f"  {name} " in listing for name in SUMMARIES)
