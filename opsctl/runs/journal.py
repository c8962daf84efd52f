"""The journal of a run: one JSON line per event (run started, tray started, tray finished,
run judged), appended and flushed to disk as it happens.

A run killed at any moment leaves every line it finished writing; a line cut short by the
kill is skipped on reading. `--resume` reads it to learn which trays have a result.
"""

import json
import os
import threading
from datetime import datetime, timezone
from pathlib import Path


def utc_now():
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class Journal:
    def __init__(self, path):
        self.path = Path(path)
        self._lock = threading.Lock()

    def record(self, event, **fields):
        line = json.dumps({"time": utc_now(), "event": event, **fields}, default=str) + "\n"
        with self._lock:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(descriptor, line.encode())
                os.fsync(descriptor)
            finally:
                os.close(descriptor)

    def entries(self):
        if not self.path.exists():
            return []
        entries = []
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # the last line of a run killed while writing it
            if isinstance(entry, dict):
                entries.append(entry)
        return entries

    def last_outcomes(self):
        """tray -> its latest `tray_finished` entry."""
        outcomes = {}
        for entry in self.entries():
            if entry.get("event") == "tray_finished" and isinstance(entry.get("tray"), str):
                outcomes[entry["tray"]] = entry
        return outcomes
