"""How commands print: JSON for automation (--json), rich tables for people."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # rich is imported when a table is printed, not by a command that prints JSON or only --help
    from rich.console import Console

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of tables.")


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=False, default=str))
    sys.stdout.write("\n")


def console() -> Console:
    """A console for stdout; plain text when stdout is not a terminal."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 120)
