"""Which way imports run (docs/contributing.md): every import statement of the source, read with
ast — those under TYPE_CHECKING and inside functions too — so no layer quietly reaches upward.

- the reports draw from the run's summary: nothing of the acceptance, the burn-in or the CLI;
- the run folder keeps what the run records: nothing of the fan-out, the burn-in or the CLI;
- probes/ runs on a tray on its own and exporters/ beside it: nothing of opsctl/.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# (the package whose modules are read, the packages none of them may import)
RULES = [
    ("opsctl.reports", ("opsctl.acceptance", "opsctl.burnin", "opsctl.cli")),
    ("opsctl.runs", ("opsctl.fanout", "opsctl.burnin", "opsctl.cli")),
    ("probes", ("opsctl",)),
    ("exporters", ("opsctl",)),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module an import statement in `source` names, relative imports resolved against
    `module` (a package's own name when `is_package`)."""
    names: set[str] = set()
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            names.add(stem)
            # `from opsctl import burnin` imports the package opsctl.burnin
            names.update(f"{stem}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def sources(package: str) -> list[Path]:
    return sorted((ROOT / package.replace(".", "/")).rglob("*.py"))


@pytest.mark.parametrize(("package", "forbidden"), RULES, ids=[rule[0] for rule in RULES])
def test_no_layer_imports_upward(package: str, forbidden: tuple[str, ...]) -> None:
    files = sources(package)
    assert files, f"no modules under {package}"
    crossings = []
    for path in files:
        names = imported_modules(path.read_text(), module_name(path), path.name == "__init__.py")
        upward = {name for name in names if any(within(name, upper) for upper in forbidden)}
        # `from opsctl.burnin.checks import worst` is named once, as opsctl.burnin.checks
        crossings += [f"{path.relative_to(ROOT)} imports {name}" for name in sorted(upward)
                      if not any(name != other and within(name, other) for other in upward)]
    assert not crossings, "\n".join(crossings)


def test_the_reader_sees_every_kind_of_import() -> None:
    source = """
from typing import TYPE_CHECKING
import opsctl.cli.output
from opsctl import burnin
from ..fanout.runner import TrayResult
from . import journal
if TYPE_CHECKING:
    from opsctl.acceptance.trial import trial_of
def later():
    from opsctl.burnin.checks import worst
"""
    names = imported_modules(source, "opsctl.runs.run_directory")
    assert {"opsctl.cli.output", "opsctl.burnin", "opsctl.fanout.runner", "opsctl.runs.journal",
            "opsctl.acceptance.trial", "opsctl.burnin.checks"} <= names
    assert imported_modules("from .atomic_file import write_json_atomic", "opsctl.runs", is_package=True) >= {"opsctl.runs.atomic_file"}
