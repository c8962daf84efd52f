"""The journal of a run: one JSON line per event (run started, tray started, tray finished,
run judged), appended and flushed to disk as it happens.

A run killed at any moment leaves every line it finished writing; a line cut short by the
kill is skipped on reading, and the next event written starts on a line of its own. `--resume` reads it to learn which trays have a result.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from opsctl.regular_files import read_regular_bytes, refuse_special_file
from opsctl.runs.atomic_file import raise_if_disk_full


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class Journal:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def record(self, event: str, **fields: Any) -> None:
        line = json.dumps({"time": utc_now(), "event": event, **fields}, default=str) + "\n"
        with self._lock:
            descriptor = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0), 0o644)
            try:
                status = os.fstat(descriptor)
                if not stat.S_ISREG(status.st_mode):  # a FIFO put in a run folder would take the run's events and block
                    refuse_special_file(self.path, "keeps a run's journal only in a regular file", status.st_mode)
                size = status.st_size
                if size and os.pread(descriptor, 1, size - 1) != b"\n":
                    line = "\n" + line  # end the line a crash cut short, or it would swallow this one
                _write_all(descriptor, line.encode(), self.path)
                os.fsync(descriptor)
            finally:
                os.close(descriptor)

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        entries: list[dict[str, Any]] = []
        for line in read_regular_bytes(self.path).decode("utf-8", "replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # the last line of a run killed while writing it
            if isinstance(entry, dict):
                entries.append(entry)
        return entries

    def last_outcomes(self) -> dict[str, dict[str, Any]]:
        """tray -> its latest `tray_finished` entry."""
        outcomes: dict[str, dict[str, Any]] = {}
        for entry in self.entries():
            if entry.get("event") == "tray_finished" and isinstance(entry.get("tray"), str):
                outcomes[entry["tray"]] = entry
        return outcomes


def _write_all(descriptor: int, data: bytes, path: Path) -> None:
    """os.write until all of `data` is written (a write may be short); a full disk says which folder."""
    while data:
        try:
            written = os.write(descriptor, data)
        except OSError as error:
            raise_if_disk_full(error, path)
            raise
        data = data[written:]
