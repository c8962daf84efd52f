"""The runbooks/ index: what each runbook covers, read from its YAML front matter, so that
triage output, alerts and tests can link the right one.

    ---
    title: One NVLink link (or its cables) erroring, down or flapping
    kinds: [link, cable, link_errors, link_down, link_flap]   # part kinds and fault kinds
    xids: []                                                  # XIDs whose workflow this is
    alerts: [OpsctlNvlinkErrors]                              # alert rules that link here
    action: reseat_compute_tray                               # the first repair (opsctl/data/mttr.yaml)
    expected_hours: 2.35
    sources: ["…"]
    ---
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from collections.abc import Iterable
from pathlib import Path

from opsctl.errors import InputError
from opsctl.yaml_input import parse_yaml, require_mapping
from probes.shipped_yaml import parse_trusted_yaml

RUNBOOK_DIR = Path(__file__).resolve().parent.parent / "runbooks"
FRONT_MATTER_KEYS = {"title", "kinds", "xids", "alerts", "action", "expected_hours", "sources"}


@dataclass(frozen=True)
class Runbook:
    path: str  # as linked: runbooks/<file>.md
    title: str
    kinds: tuple[str, ...]
    xids: tuple[int, ...]
    alerts: tuple[str, ...]
    action: str
    expected_hours: float
    sources: tuple[str, ...]


def parse_runbook(text: str, path: str | Path, shipped: bool = False) -> Runbook:
    """The Runbook described by a Markdown file's front matter; `shipped`: one of ours, whose
    front matter the C loader reads (tests/test_runbooks.py holds them to the strict one)."""
    if not text.startswith("---\n"):
        raise InputError(f"{path}: a runbook starts with YAML front matter between '---' lines")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise InputError(f"{path}: the front matter is not closed with a '---' line")
    meta = require_mapping(parse_trusted_yaml(text[4:end]) if shipped else parse_yaml(text[4:end], path), path)
    unknown = set(meta) - FRONT_MATTER_KEYS
    missing = FRONT_MATTER_KEYS - set(meta)
    if unknown or missing:
        raise InputError(f"{path}: front matter " + "; ".join(
            part for part in (f"unknown key(s) {', '.join(sorted(map(str, unknown)))}" if unknown else "",
                              f"missing {', '.join(sorted(missing))}" if missing else "") if part))
    for key in ("kinds", "xids", "alerts", "sources"):
        if not isinstance(meta[key], list):
            raise InputError(f"{path}: {key} must be a list")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in meta["xids"]):
        raise InputError(f"{path}: xids must be XID numbers")
    hours = meta["expected_hours"]
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or hours < 0:
        raise InputError(f"{path}: expected_hours must be hours ≥ 0")
    if not text[end + 5:].strip():
        raise InputError(f"{path}: the runbook has no body")
    return Runbook(f"runbooks/{Path(path).name}", str(meta["title"]), tuple(map(str, meta["kinds"])),
                   tuple(meta["xids"]), tuple(map(str, meta["alerts"])), str(meta["action"]), float(hours),
                   tuple(map(str, meta["sources"])))


@lru_cache(maxsize=4)
def load_runbooks(directory: str | Path = RUNBOOK_DIR) -> tuple[Runbook, ...]:
    """Every runbook of the directory (none when it is not there, as in a bare wheel install)."""
    directory = Path(directory)
    if not directory.is_dir():
        return ()
    shipped = directory.resolve() == RUNBOOK_DIR
    return tuple(parse_runbook(path.read_text(encoding="utf-8"), path, shipped)
                 for path in sorted(directory.glob("*.md")) if path.name != "README.md")


def runbook_for(kind: str | None = None, xids: Iterable[int] = (), alert: str | None = None,
                directory: str | Path = RUNBOOK_DIR) -> str | None:
    """The runbook path for an alert, else the first of `xids` that has one, else a fault or
    part kind; None when nothing covers it."""
    runbooks = load_runbooks(directory)
    if alert is not None:
        for runbook in runbooks:
            if alert in runbook.alerts:
                return runbook.path
    for xid in xids:
        for runbook in runbooks:
            if xid in runbook.xids:
                return runbook.path
    if kind is not None:
        for runbook in runbooks:
            if kind in runbook.kinds:
                return runbook.path
    return None
