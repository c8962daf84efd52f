"""The Slurm transport (`--via slurm`): the rack's compute trays run the probe as ONE Slurm job
with one task per tray, on the trays' nodes (inventory `opsctl_slurm_node`), exclusive — for
fleets where work reaches the nodes through the scheduler and nobody may ssh in.

    srun --nodelist=rack07-ct01,… --nodes=N --ntasks=N --ntasks-per-node=1 --exclusive
         --label --input=all --immediate=S  sh -c TASK opsctl-task PROBE-ARGS…

Each task finds its tray from $SLURMD_NODENAME, runs `PYTHON -m probes PROBE-ARGS --tray T`,
and prints its tray first and the probe's exit code last; srun labels every line with the task,
so each tray's JSON document comes back on srun's own stdout (no shared folder needed). A
simulator spec travels on stdin, which srun gives every task (--input=all) and holds open while
it runs: the probes' hang-up (--stop-on-stdin-eof) works as over ssh.

A node slurmctld holds out of service (drained, down) is not asked for: that tray is
incomplete with Slurm's state and reason. A task that dies, or a job Slurm cannot allocate
within the connect timeout, makes its trays incomplete with srun's own words. Switch trays are
no Slurm nodes (they run no jobs): they are reached by the rack's own transport.

The runner calls `check` for every selected tray before any `run`: that is the job's task
list. The first `run` of a compute tray starts the job; every compute tray's `run` waits for it.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from opsctl.errors import OpsctlError
from opsctl.fanout.local import _close, _Drain, _ended, _feed, _stop
from opsctl.fanout.ssh import SshTransport, check_python
from opsctl.fanout.transport import MAX_TRAY_OUTPUT_BYTES, Completed, Interrupted, TrayOutputTooLarge, TrayTimedOut, TrayUnreachable
from opsctl.slurm import scontrol

if TYPE_CHECKING:
    from opsctl.fanout.transport import Transport
    from opsctl.inventory import Tray

# A task's result: the probe's exit code (None if the task died first), its stdout, its stderr.
TaskOutcome = tuple[int | None, bytes, str]

SRUN = "srun"
JOB_NAME = "opsctl-probes"
_LABELLED = re.compile(r"^\s*(\d+): ?(.*)$")
TRAY_LINE = "opsctl-tray "
EXIT_LINE = "opsctl-exit "


def task_script(trays: Sequence[Tray]) -> str:
    """The shell text each task runs: which tray this node is, then the probe. Node, tray and
    Python names were validated by the inventory (and are quoted all the same)."""
    cases = "\n".join(f"  {shlex.quote(t.slurm_node)}) tray={shlex.quote(t.name)}; python={shlex.quote(t.python)};;"
                      for t in trays)
    return (f'case "$SLURMD_NODENAME" in\n{cases}\n'
            '  *) echo "opsctl: Slurm node $SLURMD_NODENAME is no tray of this run" >&2; exit 2;;\n'
            "esac\n"
            f'echo "{TRAY_LINE}$tray"\n'
            '"$python" -m probes "$@" --tray "$tray"\n'
            f'echo "{EXIT_LINE}$?"\n')


def srun_argv(nodes: Sequence[str], script: str, probe_argv: Sequence[str], immediate_s: float) -> list[str]:
    return [SRUN, f"--job-name={JOB_NAME}", f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}",
            f"--ntasks={len(nodes)}", "--ntasks-per-node=1", "--exclusive", "--label", "--input=all",
            f"--immediate={max(1, int(immediate_s))}", "--kill-on-bad-exit=0",
            "sh", "-c", script, "opsctl-task", *probe_argv]


def without_tray(argv: list[str]) -> list[str]:
    """The probe's arguments less `--tray NAME` (each task names its own)."""
    at = argv.index("--tray")
    return argv[:at] + argv[at + 2:]


def split_by_task(text: str) -> dict[int | None, list[str]]:
    """{task number: [lines]} of srun --label output; lines srun printed itself go under None."""
    tasks: dict[int | None, list[str]] = {}
    for line in text.splitlines():
        match = _LABELLED.match(line)
        key, body = (int(match.group(1)), match.group(2)) if match else (None, line)
        tasks.setdefault(key, []).append(body)
    return tasks


def task_outcomes(stdout: str, stderr: str) -> dict[str, TaskOutcome]:
    """{tray: (exit code or None, stdout bytes, stderr text)} from the job's labelled output."""
    out, err = split_by_task(stdout), split_by_task(stderr)
    outcomes: dict[str, TaskOutcome] = {}
    for task, lines in out.items():
        if task is None or not lines or not lines[0].startswith(TRAY_LINE):
            continue
        tray = lines[0][len(TRAY_LINE):].strip()
        code = None
        body = lines[1:]
        if body and body[-1].startswith(EXIT_LINE):
            code = int(body[-1][len(EXIT_LINE):].strip() or -1)
            body = body[:-1]
        outcomes[tray] = (code, "\n".join(body).encode(), "\n".join(err.get(task, [])))
    return outcomes


class _Job:
    """The one srun of a run: started once, waited on by every compute tray."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.outcomes: dict[str, TaskOutcome] = {}  # tray -> (code, stdout, stderr)
        self.refused: dict[str, str] = {}  # tray -> why Slurm did not run it
        self.failure: str | None = None  # why the job as a whole gave no result
        self.interrupted = False
        self.timed_out: str | None = None
        self.too_large = 0  # the cap the job's output went past (0: within it)


class SlurmTransport:
    name = "slurm"

    def __init__(self, other: Transport, connect_timeout_s: float = 10.0) -> None:
        self.other = other  # the rack's own transport, for trays that are no Slurm node
        self.connect_timeout_s = connect_timeout_s
        self.trays: list[Tray] = []  # the compute trays of the job, in rack order
        self._job: _Job | None = None
        self._lock = threading.Lock()

    def check(self, tray: Tray) -> None:
        if tray.is_switch:
            self.other.check(tray)
            return
        check_python(tray)  # a plain path to a Python: it goes into the task's shell text
        self.trays.append(tray)

    def spec_delivery(self, spec_json: bytes) -> tuple[list[str], bytes | None]:
        # On stdin: srun hands it to every task; local and ssh trays read it there too.
        return SshTransport.spec_delivery(spec_json)

    def run(self, tray: Tray, argv: list[str], stdin: bytes | None, timeout_s: float,
            stop: threading.Event) -> Completed:
        if tray.is_switch:
            return self.other.run(tray, argv, stdin, timeout_s, stop)
        with self._lock:
            if self._job is None:
                self._job = _Job()
                threading.Thread(target=self._run_job, args=(self._job, without_tray(argv), stdin, timeout_s, stop),
                                 daemon=True, name="slurm-job").start()
            job = self._job
        while not job.done.wait(0.2):
            pass
        if tray.name in job.refused:
            raise TrayUnreachable(job.refused[tray.name])
        if job.interrupted:
            raise Interrupted("stopped by the user (the Slurm job was cancelled)")
        if job.timed_out:
            raise TrayTimedOut(job.timed_out)
        if job.too_large:
            raise TrayOutputTooLarge(job.too_large)
        if tray.name in job.outcomes:
            code, stdout, stderr = job.outcomes[tray.name]
            if code is not None:
                return Completed(code, stdout, stderr.encode())
            raise TrayUnreachable(f"Slurm task died before the probe ended: {self._slurm_words(job, tray) or stderr}")
        raise TrayUnreachable(self._slurm_words(job, tray) or job.failure or "Slurm ran no task for this tray")

    @staticmethod
    def _slurm_words(job: _Job, tray: Tray) -> str:
        """srun's own lines about this tray's node (e.g. `srun: error: rack07-ct05: task 4: Killed`)."""
        lines = [line for line in (job.failure or "").split(" | ") if tray.slurm_node in line]
        return " | ".join(lines)

    def _run_job(self, job: _Job, probe_argv: list[str], stdin: bytes | None, timeout_s: float,
                 stop: threading.Event) -> None:
        try:
            self._allocate_and_run(job, probe_argv, stdin, timeout_s, stop)
        except OpsctlError as error:
            job.failure = str(error)
        except OSError as error:
            job.failure = f"{SRUN} could not be started: {error}"
        finally:
            job.done.set()

    def _allocate_and_run(self, job: _Job, probe_argv: list[str], stdin: bytes | None, timeout_s: float,
                          stop: threading.Event) -> None:
        states = scontrol.node_states([t.slurm_node for t in self.trays])
        ready: list[Tray] = []
        for tray in self.trays:
            state = states[tray.slurm_node]
            if state.out_of_service:
                why = f": {state.reason}" if state.reason else ""
                job.refused[tray.name] = f"Slurm cannot allocate node {tray.slurm_node}: {state.state}{why}"
            else:
                ready.append(tray)
        if not ready:
            return
        argv = srun_argv([t.slurm_node for t in ready], task_script(ready), probe_argv, self.connect_timeout_s)
        deadline = time.monotonic() + timeout_s
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True)  # Ctrl-C reaches opsctl, which cancels the job
        # Every task's output comes through this one srun: the cap is each tray's, times the trays.
        limit = MAX_TRAY_OUTPUT_BYTES * len(ready)
        stdout = _Drain(process.stdout, limit=limit)
        stderr = _Drain(process.stderr, limit=limit)
        if stdin:
            threading.Thread(target=_feed, args=(process.stdin, stdin), daemon=True, name="slurm-stdin").start()
        try:
            while not _ended(process, stdout, stderr):
                if stdout.overflowed or stderr.overflowed:
                    _stop(process)
                    job.too_large = limit
                    return
                if stop.is_set():
                    _stop(process)
                    job.interrupted = True
                    return
                if time.monotonic() >= deadline:
                    _stop(process)
                    job.timed_out = f"the Slurm job ran past the {timeout_s:g} s run timeout and was cancelled"
                    return
        finally:
            _close(process.stdin)
        if stdout.overflowed or stderr.overflowed:
            job.too_large = limit
            return
        out, err = stdout.data().decode("utf-8", "replace"), stderr.data().decode("utf-8", "replace")
        job.outcomes = task_outcomes(out, err)
        said = [line.strip() for line in split_by_task(err).get(None, []) if line.strip()]
        job.failure = " | ".join(said) or (f"srun exited {process.returncode}" if process.returncode else None)
