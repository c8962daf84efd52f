"""Run one `python -m probes …` invocation on every tray of a rack at once.

    results = run_on_trays(rack, ["snapshot", "--window", "10", "--json"])

Each tray runs `python -m probes ARGS --backend B --tray T --stop-on-stdin-eof` (plus `--sim-spec`
for a simulated rack: a file in `workdir` for the local transport, stdin over ssh). The
transport holds the probe's stdin open while it waits; when it stops waiting, or opsctl dies,
stdin closes and the probe ends (transport.py). At most `concurrency` trays work at a time;
each has a connect timeout and a run timeout. The result of every tray is a `TrayResult`
(opsctl/runs/tray_result.py, the run's record of it): complete (the probe exited 0 or 1 with
its JSON document) or incomplete, with the reason — a tray that refused the connection, a probe that crashed or timed out, and a
simulated tray marked unreachable all end the same way.

`on_start(tray)` and `on_result(result)` are called as trays start and finish (one at a
time, from worker threads): write results as they arrive there. Ctrl-C stops the trays
still working; their results say `interrupted`, and what finished is returned as it was.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from opsctl.backend import on_one_timeline, sim_spec_for
from opsctl.errors import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE
from opsctl.fanout.local import LocalTransport
from opsctl.fanout.transport import STOP_ON_HANGUP, Completed, Interrupted, Transport, TransportError
from opsctl.runs.tray_result import COMPLETE, INCOMPLETE, TrayResult

if TYPE_CHECKING:
    from opsctl.inventory import Rack, Tray
    from opsctl.backend import RackSpec

_Value = TypeVar("_Value")


class _Named(Protocol):
    """All a result needs of its transport: the name it records (Ansible's records have no
    transport object, only the name)."""

    @property
    def name(self) -> str: ...


@dataclass(frozen=True)
class FanoutOptions:
    concurrency: int = 32  # trays working at once
    connect_timeout_s: float = 10.0  # ssh: TCP connect, banner, login
    run_timeout_s: float = 900.0  # the probe's whole run on one tray
    accept_new_host_keys: bool = False  # ssh: record unknown host keys instead of refusing them
    ssh_config: str | None = None  # ssh: `--ssh-config`; else the inventory's opsctl_ssh_config, else ~/.ssh/config
    via: str = "inventory"  # "slurm": the compute trays as one Slurm job (opsctl/fanout/slurm.py)


def transport_for(rack: Rack, options: FanoutOptions, workdir: str | Path) -> Transport:
    """The rack's transport (inventory `opsctl_transport`), or Slurm jobs (`--via slurm`)."""
    if options.via == "slurm":
        from opsctl.fanout.slurm import SlurmTransport

        # Switch trays run no jobs: they keep the rack's own transport.
        return SlurmTransport(transport_for(rack, dataclasses.replace(options, via="inventory"), workdir),
                              options.connect_timeout_s)
    if rack.transport == "local":
        return LocalTransport(workdir)
    from opsctl.fanout.ssh import SshTransport  # paramiko and cryptography only for a rack reached over ssh

    return SshTransport(known_hosts=known_hosts_of(rack), accept_new_host_keys=options.accept_new_host_keys,
                        connect_timeout_s=options.connect_timeout_s,
                        ssh_config=options.ssh_config or _inventory_file(rack, rack.ssh_config))


def known_hosts_of(rack: Rack) -> str | None:
    """`opsctl_known_hosts` (relative to the inventory file), else None: ~/.ssh/known_hosts."""
    return _inventory_file(rack, rack.known_hosts)


def _inventory_file(rack: Rack, value: str | None) -> str | None:
    """A file an inventory variable names, relative to the inventory file."""
    if not value:
        return None
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else rack.source.parent / path)


def probe_argv(rack: Rack, tray: Tray, probe_args: Sequence[str], spec_args: Sequence[str]) -> list[str]:
    return [*probe_args, "--backend", rack.backend, "--tray", tray.name, *spec_args]


def run_on_trays(rack: Rack, probe_args: Sequence[str], *, trays: Iterable[str] | None = None,
                 options: FanoutOptions | None = None, workdir: str | Path | None = None,
                 sim_spec: RackSpec | dict[str, Any] | None = None, on_start: Callable[[Tray], object] | None = None,
                 on_result: Callable[[TrayResult], object] | None = None,
                 stop: threading.Event | None = None) -> list[TrayResult]:
    """Run `python -m probes PROBE_ARGS` on the rack's trays (all, or the names in `trays`);
    return one TrayResult per tray, in rack order."""
    options = options or FanoutOptions()
    selected = [t for t in rack.trays if trays is None or t.name in set(trays)]
    if not selected:
        return []
    workdir = workdir or tempfile.mkdtemp(prefix="opsctl-fanout-")
    transport = transport_for(rack, options, workdir)
    for tray in selected:
        transport.check(tray)
    spec = sim_spec if sim_spec is not None else sim_spec_for(rack)
    spec_args: list[str] = []
    stdin: bytes | None = None
    if spec is not None:
        spec = spec if isinstance(spec, dict) else on_one_timeline(spec).to_dict()
        spec_json = json.dumps(spec).encode()
        spec_args, stdin = transport.spec_delivery(spec_json)
    stop = stop or threading.Event()
    report = threading.Lock()

    def call(callback: Callable[[_Value], object] | None, value: _Value) -> None:
        if callback is not None:
            with report:
                callback(value)

    def one(tray: Tray) -> TrayResult:
        if stop.is_set():
            result = _incomplete(tray, transport, "not started: the run was interrupted", interrupted=True)
            call(on_result, result)
            return result
        call(on_start, tray)
        started, clock = time.time(), time.monotonic()
        try:
            # The transports hold the probe's stdin open while they wait, so it may stop at EOF. (Not
            # in probe_argv: the Ansible plan runs the same argv with no one holding its stdin.)
            argv = [*probe_argv(rack, tray, probe_args, spec_args), STOP_ON_HANGUP]
            completed = transport.run(tray, argv, stdin, options.run_timeout_s, stop)
            result = interpret(tray, transport, completed)
        except Interrupted as error:
            result = _incomplete(tray, transport, f"interrupted: {error}", interrupted=True)
        except TransportError as error:
            result = _incomplete(tray, transport, str(error))
        result.started, result.seconds = started, time.monotonic() - clock
        call(on_result, result)
        return result

    results: dict[str, TrayResult] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, min(options.concurrency, len(selected))), thread_name_prefix="tray")
    futures = {pool.submit(one, tray): tray for tray in selected}
    try:
        pending = set(futures)
        while pending:
            # Short waits, so that Ctrl-C reaches this thread at once.
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for future in done:
                results[futures[future].name] = future.result()
    except KeyboardInterrupt:
        stop.set()
    except BaseException:  # a result that could not be kept (a full disk): stop the other trays too
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=False)
    for future, tray in futures.items():
        if tray.name not in results:
            results[tray.name] = future.result()
    return [results[t.name] for t in selected]


def interpret(tray: Tray, transport: _Named, completed: Completed) -> TrayResult:
    """A probe that ran to its end: complete when it exited 0 or 1 with its document."""
    stderr = completed.stderr.decode("utf-8", "replace")
    last_line = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "")
    document = None
    text = completed.stdout.decode("utf-8", "replace").strip()
    if text:
        try:
            document = json.loads(text)
        except json.JSONDecodeError:
            document = None
    code = completed.exit_code
    reason = None
    if code in (EXIT_OK, EXIT_FAILED) and not isinstance(document, dict):
        reason = f"probe exited {code} but printed no JSON document" + (f": {last_line}" if last_line else "")
    elif code in (EXIT_OK, EXIT_FAILED) and isinstance(document, dict) and document.get("status") == INCOMPLETE:
        reason = "probe reported its run incomplete" + _first_error(document)
    elif code == EXIT_INCOMPLETE:
        reason = last_line or "probe reported incomplete (exit 3)"
    elif code == EXIT_USAGE:
        reason = f"probe refused to run (exit 2): {last_line or 'no message'}"
    elif code not in (EXIT_OK, EXIT_FAILED):
        reason = f"probe crashed (exit {code})" + (f": {last_line}" if last_line else "")
    return TrayResult(
        tray=tray.name, host=tray.host, status=INCOMPLETE if reason else COMPLETE, exit_code=code,
        document=document if isinstance(document, dict) else None, stdout=completed.stdout, stderr=stderr,
        reason=reason, transport=transport.name,
    )


def _first_error(document: dict[str, Any]) -> str:
    errors = document.get("errors") or []
    return f": {errors[0]}" if errors and isinstance(errors[0], str) else ""


def _incomplete(tray: Tray, transport: _Named, reason: str, interrupted: bool = False) -> TrayResult:
    return TrayResult(tray=tray.name, host=tray.host, status=INCOMPLETE, exit_code=None, document=None,
                      reason=reason, interrupted=interrupted, transport=transport.name)
