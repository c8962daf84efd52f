"""The `opsctl` command: a thin click group. Each command lives in its own module under
opsctl/cli/commands/, named like the command, and exposes `command` (a click command or group).
A module is imported only when its command runs (or help lists it), so start-up stays quick and
one command's heavy imports never slow or break another.

Every error ends as one line on stderr and opsctl's exit code (README, Exit codes):
2 for bad input, 3 for incomplete work; a bug says so in one line too (OPSCTL_DEBUG=1 shows the
traceback).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys

import click

from opsctl import __version__
from opsctl.errors import EXIT_INCOMPLETE, EXIT_USAGE, OpsctlError
from opsctl.regular_files import InputFile

COMMANDS_PACKAGE = "opsctl.cli.commands"


class LazyCommands(click.Group):
    """Finds commands by module name in opsctl/cli/commands/ and imports them on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        package = importlib.import_module(COMMANDS_PACKAGE)
        return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.list_commands(ctx):
            return None
        command: click.Command = importlib.import_module(f"{COMMANDS_PACKAGE}.{name}").command
        return command


@click.group(cls=LazyCommands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="opsctl")
@click.option(
    "--inventory",
    "-i",
    type=InputFile(),
    envvar="OPSCTL_INVENTORY",
    help="Ansible-format inventory of racks (default: $OPSCTL_INVENTORY, else the built-in simulated racks).",
)
@click.pass_context
def cli(ctx: click.Context, inventory: str | None) -> None:
    """Burn-in, acceptance, triage, alerting and TCO for GPU training racks (GB200 NVL72, HGX)."""
    ctx.ensure_object(dict)
    ctx.obj["inventory"] = inventory


def _fail(message: object, code: int) -> int:
    # One line, whatever the message quotes (a CSV field, a driver's error over several lines).
    line = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
    click.echo(f"opsctl: {line}", err=True)
    return code


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (what `main` exits with; tests call this)."""
    try:
        result = cli.main(args=argv, prog_name="opsctl", standalone_mode=False)
    except OpsctlError as error:
        return _fail(str(error), error.exit_code)
    except click.exceptions.NoArgsIsHelpError as error:
        click.echo(error.ctx.get_help() if error.ctx else str(error))
        return EXIT_USAGE
    except click.UsageError as error:
        hint = f" (see: opsctl {error.ctx.command_path.split(' ', 1)[1]} --help)" if error.ctx and " " in error.ctx.command_path else ""
        return _fail(f"{error.format_message()}{hint}", EXIT_USAGE)
    except click.ClickException as error:
        return _fail(error.format_message(), EXIT_USAGE)
    except click.exceptions.Abort:
        return _fail("interrupted; nothing was judged a pass", EXIT_INCOMPLETE)
    except click.exceptions.Exit as exit_:
        return exit_.exit_code
    except KeyboardInterrupt:
        return _fail("interrupted; nothing was judged a pass", EXIT_INCOMPLETE)
    except BrokenPipeError:
        return 0
    except Exception as error:  # a bug: one line, and the work is not a pass
        if os.environ.get("OPSCTL_DEBUG"):
            raise
        return _fail(f"internal error: {type(error).__name__}: {error} (set OPSCTL_DEBUG=1 for the traceback)", EXIT_INCOMPLETE)
    return result if isinstance(result, int) else 0


def main() -> None:
    sys.exit(run())
