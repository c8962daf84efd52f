"""The errors every command turns into opsctl's exit codes (README, Exit codes).

Code below the CLI raises these; the CLI prints one line on stderr and exits with `exit_code`.
"""

from __future__ import annotations

from probes.exit_codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE  # noqa: F401 (re-exported)


class OpsctlError(Exception):
    """Base class: a message fit for one line on stderr, and the exit code it means."""

    exit_code = EXIT_USAGE


class InputError(OpsctlError):
    """Bad input: a flag, a rack name, a malformed file. Exit 2."""

    exit_code = EXIT_USAGE


class IncompleteError(OpsctlError):
    """Something could not be reached or finished, so nothing may be called a pass. Exit 3."""

    exit_code = EXIT_INCOMPLETE


def where(path: object, detail: object = None) -> str:
    """'file.yaml' or 'file.yaml: host rack07-ct03' — the prefix of an input error."""
    return f"{path}: {detail}" if detail else str(path)
