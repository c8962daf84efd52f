"""The `opsctl` command: a thin click group. Each command lives in its own module under
opsctl/cli/commands/, named like the command, and exposes `command` (a click command or group).
A module is imported only when its command runs (help lists them from SUMMARIES), so start-up
stays quick and one command's heavy imports never slow or break another.

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


# What `opsctl --help` lists for each command: the first sentence of its help, here so that
# listing them imports none (tests/test_cli_help_listing.py holds each to its command's own).
SUMMARIES = {
    'accept': ("Acceptance before handover: burn the rack in for the criteria's duration and judge it by the "
        'criteria; exit 0 accepted, 1 rejected (what failed is named), 3 incomplete.'),
    'burnin': ('Burn in a rack: GEMM, memory and NVLink load with every counter read before and after, on all '
        'trays at once; the verdict names every failing GPU, link and part (exit 1), or says which trays '
        'did not report (exit 3).'),
    'drain': ("Drain the Slurm nodes PART's repair takes out of service (a GPU or compute-tray part: its tray's"
        ' node; a switch tray, cartridge or the RACK: every compute tray of the rack).'),
    'exporter': "Serve Prometheus metrics of this tray's GPUs (or of a simulated rack) on /metrics.",
    'fleet': 'Plan fleet runs that Ansible carries out (ansible/burnin.yml); judge them with `opsctl report`.',
    'health': ('Judge this tray (or RACK/TRAY) by the rulebook from NVML alone, with no load: exit 0 healthy, 1 '
        'a check failed, 3 the reading was incomplete (never a pass).'),
    'inventory': 'Racks and trays of the inventory.',
    'ledger': "The fleet's reliability ledger: record burn-ins and triages, measure MTBI and MTTR.",
    'localize': 'Name the faulty parts behind link-health snapshots (a file may hold a list of them).',
    'repair': "Repairs of racks' parts, recorded in the ledger (opsctl ledger).",
    'report': ('Judge RUN_DIR again as `opsctl burnin` judges and write its reports: a fleet run whose results '
        "Ansible fetched (rack by rack, and the fleet), or one rack's run folder made by `opsctl burnin` "
        'or `opsctl accept`.'),
    'resume': 'Resume the Slurm nodes opsctl drained for PART (or the RACK).',
    'sim': 'Inspect the simulated racks (opsctl_backend: sim).',
    'snapshot': ("Read every tray's NVLink counters (deltas over --window) and XIDs into one link-health snapshot,"
        ' the input of `opsctl localize`.'),
    'tco': 'Goodput-aware TCO: $/GPU-hour, $/M tokens, J/token, and what failures, repairs and spares cost.',
    'topology': 'The rack as a graph of parts and NVLink links.',
    'triage': ('Snapshot every tray, localize the faulty parts, and print each with its evidence, repair action,'
        ' MTTR, blast radius and runbook.'),
}


class LazyCommands(click.Group):
    """Finds commands by module name in opsctl/cli/commands/ and imports them on first use."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # As click lists them, from SUMMARIES: a command missing there is imported for its help.
        names = self.list_commands(ctx)
        shown = [(name, click.Command(name, help=SUMMARIES[name]) if name in SUMMARIES else self.get_command(ctx, name))
                 for name in names]
        if shown:
            limit = formatter.width - 6 - max(len(name) for name in names)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in shown if command])

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
