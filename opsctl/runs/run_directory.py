"""A run directory: everything one burn-in (or acceptance) of a rack leaves behind.

    run.json            what was run: rack, inventory, options, criteria, who and when, and the
                        run's id (the fleet ledger keeps one row per run under it)
    .run.lock           held (flock) by the one process running, resuming or judging the run
    journal.jsonl       what happened, one line per event (see journal.py)
    trays/ct03.json     each tray's raw probe JSON, written atomically the moment it arrives
                        (named as operators call the tray: trays/hgx01.json for an HGX server)
    sim-spec.json       the simulator spec the trays were given (simulated racks, local trays)
    summary.json        the rack's judged result, then the reports beside it

By default runs live under the user's state folder ($XDG_STATE_HOME/opsctl/runs, else
~/.local/state/opsctl/runs), named RACK-KIND-YYYYMMDDTHHMMSSZ.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.regular_files import read_regular_text
from opsctl.runs.atomic_file import write_bytes_atomic, write_json_atomic
from opsctl.runs.journal import Journal
from opsctl.runs.run_lock import RunLock
from opsctl.runs.tray_names import tray_label

if TYPE_CHECKING:
    from opsctl.runs.tray_result import TrayResult

RUN_FORMAT = "opsctl-run/1"
RUN_FILE = "run.json"
_RUN_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def default_runs_root() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "opsctl" / "runs"


def make_run_folder(folder: str | Path, shown: str | Path | None = None) -> None:
    """Make a folder of a run (and its parents); one that cannot be made — a parent that is a
    file, /proc, no permission — is the user's input error, named by `shown` (the run's path)."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"{shown or folder}: cannot create the run folder: {error.strerror or error}") from None


class RunDirectory:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.journal = Journal(self.path / "journal.jsonl")
        self._rack: str | None = None  # read from run.json when first needed
        self._lock: RunLock | None = None

    # --- making and finding runs ---------------------------------------------------------------
    @classmethod
    def create(cls, rack: str, kind: str, meta: dict[str, Any], out: str | Path | None = None) -> RunDirectory:
        """A new run directory: `out`, else a fresh folder under the default root."""
        if out is not None:
            path = Path(out)
            if (path / RUN_FILE).exists():
                raise InputError(f"{path} already holds a run; resume it with --resume {path}, or choose another --out")
            if path.exists() and not path.is_dir():
                raise InputError(f"{path}: --out must be a folder")
        else:
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            path = default_runs_root() / f"{rack}-{kind}-{stamp}"
            suffix = 1
            while path.exists():
                suffix += 1
                path = default_runs_root() / f"{rack}-{kind}-{stamp}-{suffix}"
        make_run_folder(path / "trays", path)
        run = cls(path)
        run.lock()  # before run.json: no --resume can start on a run that is still being made
        write_json_atomic(path / RUN_FILE, {"format": RUN_FORMAT, "kind": kind, "rack": rack,
                                            "run_id": uuid.uuid4().hex, **meta})
        return run

    @classmethod
    def open(cls, name: str | Path) -> RunDirectory:
        """An existing run: a path, or a run's name under the default root."""
        candidates = [Path(name)]
        if _RUN_NAME.fullmatch(str(name)):
            candidates.append(default_runs_root() / name)
        for path in candidates:
            if (path / RUN_FILE).is_file():
                run = cls(path)
                meta = run.meta
                if meta.get("format") != RUN_FORMAT:
                    raise InputError(f"{path / RUN_FILE}: not an opsctl run (format {meta.get('format')!r})")
                return run
        raise InputError(f"no run {name!r} (a run folder holds {RUN_FILE}; runs are under {default_runs_root()})")

    @property
    def meta(self) -> dict[str, Any]:
        try:
            return json.loads(read_regular_text(self.path / RUN_FILE))
        except (OSError, json.JSONDecodeError) as error:
            raise InputError(f"{self.path / RUN_FILE}: cannot read: {error}") from None

    @property
    def run_id(self) -> str:
        """What names this run however often it is resumed or judged: run.json's run_id; a run
        made before runs had one is named by its rack, kind and creation time."""
        meta = self.meta
        return meta.get("run_id") or f"{meta.get('rack')}/{meta.get('kind')}/{meta.get('created')}"

    def lock(self) -> RunDirectory:
        """Take the run for this process: refused (InputError) while another process runs,
        resumes or judges it. Held until release(), this object is dropped, or the process ends."""
        if self._lock is None:
            self._lock = RunLock(self.path)
        return self

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # --- tray results ----------------------------------------------------------------------------
    def tray_file(self, tray: str) -> Path:
        """trays/ct03.json; for an HGX server trays/hgx01.json (tray_names.py), or the
        trays/node.json of a run made before the file was named so."""
        path = self.path / "trays" / f"{tray_label(self.rack, tray)}.json"
        legacy = self.path / "trays" / f"{tray}.json"
        return legacy if path != legacy and not path.exists() and legacy.exists() else path

    @property
    def rack(self) -> str:
        if self._rack is None:
            self._rack = self.meta.get("rack")
        return self._rack  # type: ignore[return-value]  # create() always writes the rack into run.json

    def save_tray_result(self, result: TrayResult) -> None:
        """Keep what the probe printed (atomically), then journal the outcome: a run killed
        between the two re-runs the tray rather than trusting a file it never confirmed."""
        if result.stdout.strip():
            write_bytes_atomic(self.tray_file(result.tray), result.stdout)
        self.journal.record(
            "tray_finished", tray=result.tray, host=result.host, status=result.status, exit_code=result.exit_code,
            reason=result.reason, interrupted=result.interrupted, seconds=round(result.seconds, 3),
            transport=result.transport, file=str(self.tray_file(result.tray).relative_to(self.path)) if result.stdout.strip() else None,
            stderr_tail=result.stderr[-2000:],
        )

    def outcomes(self) -> dict[str, dict[str, Any]]:
        """tray -> the journal's last word on it (status, exit code, reason…)."""
        return self.journal.last_outcomes()

    def completed_trays(self) -> set[str]:
        """Trays with a result: journaled complete, and their file is there."""
        return {tray for tray, entry in self.outcomes().items()
                if entry.get("status") == "complete" and self.tray_file(tray).is_file()}

    def tray_documents(self) -> dict[str, dict[str, Any]]:
        """tray -> its probe document, for every tray that printed one (complete or not)."""
        documents: dict[str, dict[str, Any]] = {}
        for tray in self.outcomes():
            path = self.tray_file(tray)
            if path.is_file():
                try:
                    document = json.loads(path.read_text())
                except (OSError, json.JSONDecodeError):
                    continue
                if isinstance(document, dict):
                    documents[tray] = document
        return documents

    def write_json(self, name: str, document: Any) -> None:
        write_json_atomic(self.path / name, document)

    def write_text(self, name: str, text: str) -> None:
        write_bytes_atomic(self.path / name, text.encode())

    def raw_files(self) -> list[str]:
        """The files of the run, relative to it, for the report's list."""
        return sorted(str(p.relative_to(self.path)) for p in self.path.rglob("*")
                      if p.is_file() and not p.name.startswith("."))
