"""The last burn-in result of each tray, read from the tray probe's `run` documents
(docs/probe-output.md) in a file or a directory of them.

Read in the background and only when a file changed; a missing path is simply "no burn-in yet"
and a malformed file is counted and logged, never fatal.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from collections.abc import Iterable
from pathlib import Path
from stat import S_ISREG
from typing import Any

log = logging.getLogger("opsctl.exporter")
MAX_RESULT_BYTES = 64 * 2**20  # one tray's probe document is well under a megabyte

PROBE_FORMAT = "opsctl-probe/1"
# Worst first: one failed check fails the GPU; a check that could not finish is not a pass.
VERDICT_ORDER = ("fail", "incomplete", "warn", "pass")


@dataclass(frozen=True)
class GpuBurnin:
    uuid: str | None
    verdict: str  # one of VERDICT_ORDER
    gemm_flops: dict[str, float]  # dtype -> floating-point operations per second (median)
    memory_bytes_per_second: float | None


@dataclass(frozen=True)
class TrayBurnin:
    tray: str
    finished: float  # unix time
    source: str  # the file it came from
    gpus: dict[int, GpuBurnin]  # local index -> GpuBurnin


def parse_run_document(document: Any, source: object) -> TrayBurnin | None:
    """A `run` document as a TrayBurnin; None for other JSON (a snapshot, anything else);
    ValueError, KeyError or TypeError for a run document that is malformed."""
    if not isinstance(document, dict) or document.get("format") != PROBE_FORMAT or document.get("kind") != "run":
        return None
    tray = document.get("tray")
    if not isinstance(tray, str) or not tray:
        raise ValueError("no tray named")
    finished = _unix_time(document.get("finished") or document.get("started"))
    tray_checks = document.get("checks") or []
    gpus: dict[int, GpuBurnin] = {}
    for gpu in document.get("gpus") or []:
        index = gpu["index"]
        prefix = f"gpu{index}"
        checks = list(gpu.get("checks") or [])
        checks += [c for c in tray_checks if str(c.get("component", "")).split("/")[0] == prefix]
        gemm = {dtype: float(result["tflops_median"]) * 1e12
                for dtype, result in (gpu.get("gemm") or {}).items()
                if isinstance(result, dict) and result.get("tflops_median") is not None}
        membw = (gpu.get("membw") or {}).get("gbps")
        gpus[int(index)] = GpuBurnin(
            uuid=gpu.get("uuid"),
            verdict=gpu_verdict(checks),
            gemm_flops=gemm,
            memory_bytes_per_second=None if membw is None else float(membw) * 1e9,
        )
    return TrayBurnin(tray=tray, finished=finished, source=str(source), gpus=gpus)


def gpu_verdict(checks: Iterable[dict[str, Any]]) -> str:
    """The worst verdict of a GPU's checks; nothing judged is not a pass."""
    verdicts = {c.get("verdict") for c in checks}
    for verdict in VERDICT_ORDER:
        if verdict in verdicts:
            return verdict
    return "incomplete"


def _unix_time(text: object) -> float:
    if not isinstance(text, str):
        raise ValueError("no finished time")
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


class BurninResults:
    """The newest run document per tray under `path` (a file, or a directory searched recursively)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self.errors = 0  # files that could not be read as run documents
        self._parsed: dict[Path, tuple[tuple[int, int], TrayBurnin | None]] = {}  # file -> ((mtime_ns, size), TrayBurnin or None)
        self._latest: dict[str, TrayBurnin] = {}  # tray -> TrayBurnin
        self._said_missing = False  # warned that the path does not exist (yet)

    def refresh(self) -> None:
        if self.path is None:
            return
        if not self.path.exists():
            if not self._said_missing:  # once: the exporter may start before the first burn-in
                log.warning("no burn-in results at %s yet: its metrics appear once a run writes there", self.path)
                self._said_missing = True
            return
        self._said_missing = False
        if self.path.is_dir():
            files = sorted(self.path.rglob("*.json"))
        else:
            files = [self.path] if self.path.is_file() else []
        parsed: dict[Path, tuple[tuple[int, int], TrayBurnin | None]] = {}
        for file in files:
            try:
                stat = file.stat()
            except OSError:
                continue  # removed while we looked
            if not S_ISREG(stat.st_mode):  # a FIFO named *.json would block the refresh for ever; a device never ends
                continue
            key = (stat.st_mtime_ns, stat.st_size)
            cached = self._parsed.get(file)
            parsed[file] = cached if cached is not None and cached[0] == key else (key, self._parse(file))
        latest: dict[str, TrayBurnin] = {}
        for _, result in parsed.values():
            if result is not None and (result.tray not in latest or result.finished > latest[result.tray].finished):
                latest[result.tray] = result
        self._parsed, self._latest = parsed, latest  # swapped whole: scrapes see one or the other

    def _parse(self, file: Path) -> TrayBurnin | None:
        try:
            with open(file, "rb") as handle:
                data = handle.read(MAX_RESULT_BYTES + 1)  # the cap holds for what is read, whatever stat says
            if len(data) > MAX_RESULT_BYTES:
                raise ValueError(f"over {MAX_RESULT_BYTES // 2**20} MiB; a tray's run document is far smaller")
            return parse_run_document(json.loads(data.decode("utf-8")), file)
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
            self.errors += 1
            log.warning("burn-in result %s skipped: %s", file, error)
            return None

    def for_tray(self, tray: str) -> TrayBurnin | None:
        return self._latest.get(tray)
