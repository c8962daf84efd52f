"""Reading one tray's GPUs in the background, so that a scrape never waits for NVML.

Why a background loop and not per-scrape reads with deadlines: an NVML call on a sick GPU can
hang for seconds or for good, and it cannot be cancelled. Per-scrape reads would start a new
call on the hung GPU at every scrape and leave one more stuck thread behind each time; reading
a 72-GPU simulated rack also takes seconds of CPU, which no scrape should pay. Here each GPU
has one reader thread that reads, publishes the reading and sleeps: a hung call stalls that
GPU's thread alone (at most one stuck thread per GPU), the other GPUs keep reporting, and
a scrape only renders the latest readings, whose age it publishes. A GPU whose reading is
older than `stale_after` shows as `stale` and not up.

Each read also runs under the reader's deadline (probes.gpu_deadline): a GPU whose driver hangs
comes back, at the deadline, as a hung reading shown stale (its later reads are refused at once
while the call is stuck), and its XID watch is registered for the other GPUs all the same.

Reads come in rounds: round k is the k-th multiple of the interval on the monotonic clock,
the same for every GPU of every tray in the process, and each GPU's reader starts one read per
round. A round is complete once every GPU of the tray has published its read of it, or once the
next round has begun (a GPU whose read is stuck does not hold the others back). The exporter
renders when a round completes (exporters/server.py), not at each GPU's reading: 72 readers
publishing at their own times would make every scrape a render of its own.

On an HGX host the NVSwitch chips are the host's: their SXid lines in its kernel log since the
driver loaded (probes/nvswitch_sxids.py) are counted per chip, fatal and non-fatal, read with
the recorded XIDs and read again every `sxid_reread_s`, since no NVML event announces them.

A tray that cannot be opened (NVML not initialised yet, driver gone) shows as down with the
reason, and is retried every interval.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probes.gpu_deadline import NVML_DEADLINE_S
from probes.kernel_history import KernelLog, recorded_by_gpu, since_driver_load
from probes.nvml_reader import NvmlReader
from probes.nvswitch_sxids import parse_sxid_lines, switch_component

from exporters.xid_counts import XidCounts

if TYPE_CHECKING:
    from probes.nvml_reader import GpuReading

log = logging.getLogger("opsctl.exporter")

GPU_STATUSES = ("ok", "lost", "stale", "starting")
# No NVML event announces an SXid: the kernel log is read again this often (a minute: the
# alert rises within one; journalctl over a boot's kernel log is not free every 10 s).
SXID_REREAD_S = 60.0


def reading_round(moment: float, interval_s: float) -> int:
    """The reading round a time.monotonic() moment falls in (rounds are multiples of the interval)."""
    return math.floor(moment / interval_s)


@dataclass(frozen=True)
class GpuSample:
    """What a scrape sees of one GPU: its latest reading and how it stands."""

    index: int
    status: str  # one of GPU_STATUSES
    reading: GpuReading | None  # None before the first read
    identity: GpuReading | None  # the latest reading that carried identity (uuid, serial, …), or None
    age_s: float | None  # seconds since the reading was taken
    collect_errors: int  # reads that hit an NVML error (other than not-supported) or crashed
    xids: dict[int, tuple[int, float | None]]  # xid -> (count, last seen unix time or None)
    recorded_xids: dict[int, int]  # xid -> how often the GPU logged it before the exporter started


@dataclass(frozen=True)
class TraySample:
    rack: str
    tray: str
    up: bool  # NVML open and the XID watcher running
    down_reason: str | None
    expected_gpus: int | None
    visible_gpus: int | None  # what NVML enumerates
    gpus: tuple[GpuSample, ...]
    xid_watch_errors: int
    switch_of: dict[tuple[int, int], str]  # (gpu index, port) -> remote switch chip id
    driver_version: str | None
    kernel_log_unread: str | None  # why the kernel history could not be read; None when it was (or is not yet)
    # HGX: switch chip id -> (fatal, non-fatal) SXids since the driver loaded; None where the
    # host has no NVSwitch (a GB200 compute tray) or its kernel log has not been read
    nvswitch_sxids: dict[str, tuple[int, int]] | None = None


class _GpuSlot:
    """The latest state of one GPU, written by its reader thread only."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.reading: GpuReading | None = None
        self.identity: GpuReading | None = None
        self.read_started: float | None = None  # time.time() of the read in flight, None between reads
        self.round: int | None = None  # the reading round of the latest read published (reading_round)
        self.collect_errors = 0
        self.logged: set[str] = set()


class TrayPoller:
    def __init__(self, rack: str, tray: str, nvml: Any, interval_s: float = 10.0, stale_after_s: float | None = None,
                 expected_gpus: int | None = None, switch_of: dict[tuple[int, int], str] | None = None,
                 down_reason: str | None = None, kernel_history: Callable[[], KernelLog] | None = None,
                 nvswitch_chips: Sequence[str] | None = None, sxid_reread_s: float = SXID_REREAD_S,
                 deadline_s: float = NVML_DEADLINE_S) -> None:
        self.rack = rack
        self.tray = tray
        self.nvml = nvml
        self.interval_s = interval_s
        self.stale_after_s = stale_after_s if stale_after_s is not None else 3 * interval_s
        self.expected_gpus = expected_gpus
        self.switch_of = dict(switch_of or {})
        self.down_reason = down_reason  # set from the start for a tray known to be unreachable
        # What the GPUs logged since the driver loaded, read once when NVML opens: the state the
        # tray was in before the exporter's own XID watch began (probes/kernel_history.py).
        self.kernel_history = kernel_history
        self._recorded: dict[int, dict[int, int]] = {}
        self._kernel_log_unread: str | None = None
        # The host's NVSwitch chips (HGX; None elsewhere), nvidia-nvswitchN's id at index N.
        self.nvswitch_chips = list(nvswitch_chips) if nvswitch_chips is not None else None
        self.sxid_reread_s = sxid_reread_s
        self.deadline_s = deadline_s  # a GPU whose reading takes longer is shown hung (probes/gpu_deadline.py)
        self._sxids: dict[str, tuple[int, int]] | None = None
        self._reader: NvmlReader | None = None
        self._xids: XidCounts | None = None
        self._driver_version: str | None = None
        self._slots: list[_GpuSlot] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- life cycle ------------------------------------------------------------------------
    def start(self) -> TrayPoller:
        if self.down_reason is None:
            self._spawn(self._open_and_read, f"tray-{self.tray}")
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._xids is not None:
            self._xids.stop()

    def _spawn(self, target: Callable[..., object], name: str, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _open_and_read(self) -> None:
        while not self._stop.is_set():
            try:
                self._open()
                break
            except self.nvml.NVMLError as error:
                self.down_reason = f"cannot open NVML: {error}"
                log.warning("%s/%s: %s; retrying every %s s", self.rack, self.tray, self.down_reason, self.interval_s)
                self._stop.wait(self.interval_s)
        for slot in self._slots:
            self._spawn(self._read_forever, f"gpu-{self.tray}-{slot.index}", slot)
        if self.nvswitch_chips is not None and self.kernel_history is not None:
            while not self._stop.wait(self.sxid_reread_s):
                self._read_sxids(self.kernel_history())

    def _open(self) -> None:
        self.nvml.nvmlInit()
        reader = NvmlReader(self.nvml, deadline_s=self.deadline_s)
        xids = XidCounts(self.nvml, reader.handles, workers=reader.workers).start()
        self._driver_version = reader.system().get("driver_version")
        self._slots = [_GpuSlot(i) for i in range(reader.count)]
        self._read_recorded(reader)
        self._reader, self._xids = reader, xids
        self.down_reason = None

    def _read_recorded(self, reader: NvmlReader) -> None:
        if self.kernel_history is None:
            return
        history = self.kernel_history()
        self._read_sxids(history)
        # Identity only (the PCI bus ids match log lines to GPUs), kept as each GPU's identity:
        # its reader then starts with the links, and the tray is not read whole twice.
        identities = reader.read_all(links=False)
        for slot, reading in zip(self._slots, identities):
            if reading.uuid is not None:
                slot.identity = reading
        found, why = recorded_by_gpu(history, identities)
        self._kernel_log_unread = why
        if found is not None:
            self._recorded = {index: dict(Counter(event["xid"] for event in events)) for index, events in found.items()}
        else:
            log.warning("%s/%s: kernel log not read (%s): the XIDs logged before the exporter started are unknown",
                        self.rack, self.tray, why)

    def _read_sxids(self, history: KernelLog) -> None:
        """Count the host's SXid lines since the driver loaded, per switch chip: a line that says
        neither Fatal nor Non-fatal counts as fatal, as the tray check fails it (opsctl's rule,
        probes/nvswitch_sxids.py). An unreadable log keeps what the last read found."""
        if self.nvswitch_chips is None:
            return
        lines, why = history
        if why:
            if self._sxids is None:
                log.warning("%s/%s: kernel log not read (%s): the NVSwitch SXids are unknown", self.rack, self.tray, why)
            return
        counts = {chip: [0, 0] for chip in self.nvswitch_chips}
        for entry in parse_sxid_lines(since_driver_load(lines)):
            number = int(entry["switch"].removeprefix("nvswitch"))
            chip = self.nvswitch_chips[number] if number < len(self.nvswitch_chips) else \
                f"{self.rack}/{switch_component(entry['switch'])}"
            counts.setdefault(chip, [0, 0])[0 if entry["fatal"] is not False else 1] += 1
        self._sxids = {chip: (fatal, non_fatal) for chip, (fatal, non_fatal) in counts.items()}

    def _read_forever(self, slot: _GpuSlot) -> None:
        reader = self._reader
        assert reader is not None  # _open set it before it started any GPU's thread
        while not self._stop.is_set():
            began = time.monotonic()
            started = time.time()
            slot.read_started = started
            try:
                # Identity until NVML has given it once; then only what changes.
                reading = reader.read_gpu(slot.index, identity=slot.identity is None)
                if reading.uuid is not None:
                    slot.identity = reading
                if reading.errors and not reading.lost:
                    slot.collect_errors += 1
                    self._log_once(slot, "; ".join(f"{call}: {error}" for call, error in sorted(reading.errors.items())))
                slot.reading = reading
            except Exception as error:  # a reader bug or an unexpected library error: keep going
                slot.collect_errors += 1
                self._log_once(slot, f"read failed: {type(error).__name__}: {error}")
            slot.round = reading_round(began, self.interval_s)  # after the reading: a complete round has its readings
            slot.read_started = None
            self._stop.wait(max(0.0, (slot.round + 1) * self.interval_s - time.monotonic()))  # the next round's start

    def completed_round(self, moment: float) -> int:
        """The latest reading round complete at time.monotonic() `moment`: the current one once
        every GPU has published its read of it, else the one before (over by now)."""
        current = reading_round(moment, self.interval_s)
        slots = self._slots
        if slots and all(slot.round is not None and slot.round >= current for slot in slots):
            return current
        return current - 1

    def _log_once(self, slot: _GpuSlot, message: str) -> None:
        if message not in slot.logged and len(slot.logged) < 100:  # a flood of new messages stops here
            slot.logged.add(message)
            log.warning("%s/%s gpu%d: %s", self.rack, self.tray, slot.index, message)

    # --- what a scrape sees --------------------------------------------------------------------
    def sample(self, now: float | None = None) -> TraySample:
        now = time.time() if now is None else now
        xids = self._xids.snapshot() if self._xids is not None else {}
        gpus = tuple(self._gpu_sample(slot, now, xids.get(slot.index, {})) for slot in self._slots)
        up = self.down_reason is None and self._xids is not None and self._xids.running
        return TraySample(
            rack=self.rack, tray=self.tray, up=up,
            down_reason=self.down_reason or (None if up else "starting"),
            expected_gpus=self.expected_gpus,
            visible_gpus=self._reader.count if self._reader is not None else (0 if self.down_reason else None),
            gpus=gpus,
            xid_watch_errors=self._xids.watch_errors if self._xids is not None else 0,
            switch_of=self.switch_of,
            driver_version=self._driver_version,
            kernel_log_unread=self._kernel_log_unread,
            nvswitch_sxids=self._sxids,
        )

    def _gpu_sample(self, slot: _GpuSlot, now: float, xids: dict[int, tuple[int, float | None]]) -> GpuSample:
        reading, in_flight = slot.reading, slot.read_started
        age = None if reading is None else max(0.0, now - reading.time)
        if reading is None:
            waited = 0.0 if in_flight is None else now - in_flight
            status = "stale" if waited > self.stale_after_s else "starting"
        elif age is not None and age > self.stale_after_s:  # (age is None only without a reading)
            status = "stale"  # the reader thread is stuck in a call
        elif reading.lost:
            status = "lost"
        elif reading.hung:
            status = "stale"  # its NVML calls did not return within the reader's deadline
        else:
            status = "ok"
        return GpuSample(index=slot.index, status=status, reading=reading, identity=slot.identity,
                         age_s=age, collect_errors=slot.collect_errors, xids=xids,
                         recorded_xids=self._recorded.get(slot.index, {}))
