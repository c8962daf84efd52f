"""One worker thread per GPU, and a deadline on every call handed to it.

A call into a wedged GPU's driver (NVML, or a CUDA kernel that never completes) blocks its
thread for good and cannot be cancelled. If a tray's readings or loads ran on one thread, one
wedged GPU would blank the whole tray. Here each GPU's calls run on that GPU's own worker; the
caller waits at most the deadline, and a call still running then marks the GPU *hung* (named,
with the call and the deadline) while the other GPUs go on. A hung GPU's worker stays stuck in
its call; further calls to that GPU are refused at once instead of queueing behind it, so a
wedged GPU costs one stuck thread and one deadline, never one per call. The NVML library is
thread-safe ("it is safe to make simultaneous NVML calls from multiple threads": NVIDIA's NVML
API Reference), so the GPUs are read in parallel on their workers.

The deadlines are stated, not sourced: a healthy GPU's whole NVML reading takes about 17 ms on
an H200 and under 0.6 s in the simulator with 27 trays on 2 cores (docs/benchmarks.md); a load
probe's call is one window of at most 5 s of work (probes/windows.py). Each deadline is far
above what a healthy GPU takes, so only a GPU that stopped answering reaches it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

# A whole NVML reading of one GPU (identity, health, every link): over 500× the H200's 17 ms.
NVML_DEADLINE_S = 10.0
# One compute call (a GEMM or copy window, at most 5 s of work, or the first call that sets up
# the device): 12× the longest window.
COMPUTE_DEADLINE_S = 60.0
DEADLINE_SOURCE = ("stated deadlines (probes/gpu_deadline.py): a healthy GPU answers a whole NVML reading in about 17 ms "
                   "on an H200 and finishes a load window in at most 5 s; a call still running at the deadline means the GPU "
                   "(or its driver) stopped answering")


class GpuHung(Exception):
    """A call on this GPU did not return within its deadline (or an earlier one is still stuck)."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(reason)
        self.index = index
        self.reason = reason


class _Job:
    def __init__(self, what: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.what, self.fn, self.args = what, fn, args
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class GpuWorkers:
    """Per-GPU worker threads (started on first use, daemon: a stuck one never holds the
    process). `kind` names what they run in messages ("NVML", "compute")."""

    def __init__(self, kind: str, deadline_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.kind = kind
        self.deadline_s = deadline_s
        self.clock = clock
        self._lock = threading.Lock()
        self._queues: dict[int, queue.SimpleQueue[_Job]] = {}
        self._busy: dict[int, _Job] = {}  # index -> the job its worker is running
        self.hung: dict[int, str] = {}  #  index -> why it is (or was) hung: first hang wins, kept for the record

    def _worker(self, index: int, jobs: queue.SimpleQueue[_Job]) -> None:
        while True:
            job = jobs.get()
            with self._lock:
                self._busy[index] = job
            try:
                job.result = job.fn(*job.args)
            except BaseException as error:  # handed to the caller, who decides
                job.error = error
            with self._lock:
                self._busy.pop(index, None)
            job.done.set()

    def _queue(self, index: int) -> queue.SimpleQueue[_Job]:
        with self._lock:
            jobs = self._queues.get(index)
            if jobs is None:
                jobs = self._queues[index] = queue.SimpleQueue()
                threading.Thread(target=self._worker, args=(index, jobs), daemon=True,
                                 name=f"{self.kind}-gpu{index}").start()
            return jobs

    def stuck(self, index: int) -> str | None:
        """Why the GPU's worker is still inside a call that passed its deadline, or None."""
        with self._lock:
            job = self._busy.get(index)
            return self.hung.get(index) if job is not None and index in self.hung else None

    def submit(self, index: int, what: str, fn: Callable[..., Any], *args: Any) -> _Job:
        """Start fn(*args) on the GPU's worker; the job to `wait` for. Refused with GpuHung at
        once while the worker is still stuck in an earlier call."""
        reason = self.stuck(index)
        if reason is not None:
            raise GpuHung(index, reason)
        job = _Job(what, fn, args)
        self._queue(index).put(job)
        return job

    def wait(self, index: int, job: _Job, deadline: float) -> Any:
        """The job's result, or GpuHung if it is still running at `deadline` (self.clock time)."""
        if not job.done.wait(max(0.0, deadline - self.clock())):
            reason = (f"{self.kind} call {job.what} did not return within {self.deadline_s:g} s: the GPU (or its "
                      f"driver) is hung")
            with self._lock:
                self.hung.setdefault(index, reason)
            raise GpuHung(index, reason)
        if job.error is not None:
            raise job.error
        return job.result

    def call(self, index: int, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args) on the GPU's worker, waited for at most the deadline."""
        job = self.submit(index, what, fn, *args)
        return self.wait(index, job, self.clock() + self.deadline_s)

    def call_each(self, indices: Iterable[int], what: str, fn: Callable[[int], Any]) -> dict[int, Any]:
        """{index: fn(index) or the GpuHung it raised}, every GPU's call started at once and all
        waited for under one shared deadline: the tray costs one deadline, not one per GPU."""
        jobs: dict[int, _Job] = {}
        results: dict[int, Any] = {}
        for index in indices:
            try:
                jobs[index] = self.submit(index, what, fn, index)
            except GpuHung as hung:
                results[index] = hung
        deadline = self.clock() + self.deadline_s
        for index, job in jobs.items():
            try:
                results[index] = self.wait(index, job, deadline)
            except GpuHung as hung:
                results[index] = hung
        return {index: results[index] for index in indices}
