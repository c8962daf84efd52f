"""`python -m probes run|snapshot|collective|imex|preflight`: the tray probe's command line (docs/probe-output.md).

Prints one JSON document (`--json`) or a short summary, and exits with opsctl's exit codes (README, Exit codes):
0 every check passed, 1 a check failed, 2 bad usage or no NVML library, 3 incomplete.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, NoReturn, TextIO

from probes.backend import BackendError, open_backend
from probes.counters import SNAPSHOT_COUNTERS
from probes.exit_codes import EXIT_INCOMPLETE, EXIT_USAGE
from probes import json_lines
from probes.hangup import STOP_ON_STDIN_EOF, watch_for_hangup
from probes.sku_references import ReferencesError
from probes.probe_names import DEFAULT_DURATION_S, PROBES


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2 as opsctl's exit codes promise."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"probes: {message} (see: {self.prog} --help)\n")  # prog: "python -m probes [run]"
        sys.exit(EXIT_USAGE)


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:  # NaN passes `<= 0`; inf is no deadline
        raise argparse.ArgumentTypeError(f"must be a finite number above 0: {text}")
    return value


def gemm_size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 16:
        raise argparse.ArgumentTypeError(f"must be at least 16: {text}")
    return value


def probe_list(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in PROBES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown probe {', '.join(unknown) or text!r} (known: {','.join(PROBES)})")
    return names


def backend_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=("nvml", "sim"), default="nvml",
                        help="nvml: the real GPUs (default); sim: the built-in simulator")
    parser.add_argument("--sim-spec", metavar="FILE|-", help="the simulator spec (`opsctl sim spec RACK`); - reads stdin")
    parser.add_argument("--tray", metavar="NAME", help="which tray this is (ct03, st2, node); required with --backend sim")
    parser.add_argument("--json", dest="as_json", action="store_true", help="print one JSON document")
    parser.add_argument(STOP_ON_STDIN_EOF, dest="stop_on_stdin_eof", action="store_true",
                        help="stop at once, exit 3, when stdin closes (the orchestrator hung up); with "
                             "--sim-spec - the spec is then the first line of stdin")


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="python -m probes", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    run = commands.add_parser("run", help="burn in this tray and judge it")
    backend_options(run)
    run.add_argument("--duration", type=positive, default=DEFAULT_DURATION_S, metavar="S",
                     help="seconds of load in all, shared 4:1:1:1 by gemm, membw, nvlink, pulse (default 60)")
    run.add_argument("--probes", type=probe_list, default=PROBES, metavar="LIST",
                     help=f"comma-separated, of {','.join(PROBES)} (default: all)")
    run.add_argument("--timeout", type=positive, metavar="S",
                     help="the most seconds one probe may run (default: twice its share of --duration plus 60)")
    run.add_argument("--references", metavar="FILE", help="judge against this reference file instead of the SKU's own")
    run.add_argument("--gemm-size", type=gemm_size, metavar="N", help="GEMM size N (N×N×N; default 16384 on a GPU)")
    snapshot = commands.add_parser("snapshot", help="NVLink counters over a window, deltas only")
    backend_options(snapshot)
    snapshot.add_argument("--window", type=positive, default=10.0, metavar="S", help="seconds between the readings (default 10)")
    collective = commands.add_parser("collective", help="one node's part of a rack-wide all-reduce (torch.distributed)")
    from probes.collective_options import add_arguments

    add_arguments(collective)
    backend_options(collective)
    imex = commands.add_parser("imex", help="the IMEX service and channels a multi-tray NVLink job needs")
    backend_options(imex)
    preflight = commands.add_parser("preflight", help="can this tray run these probes? (imports, PyTorch; no load)")
    backend_options(preflight)
    preflight.add_argument("--probes", type=probe_list, default=PROBES, metavar="LIST",
                           help=f"comma-separated, of {','.join(PROBES)} (default: all)")
    preflight.add_argument("--collective", action="store_true", help="and the rack-wide collective's needs")
    return parser


def main(argv: list[str] | None = None, stdin: TextIO | None = None) -> tuple[int, bool]:
    """Run the command; returns (exit code, whether a probe thread was left hanging)."""
    args = build_parser().parse_args(argv)
    command = {"run": run_command, "snapshot": snapshot_command, "collective": collective_command,
               "imex": imex_command, "preflight": preflight_command}[args.command]
    stdin = stdin or sys.stdin
    if args.stop_on_stdin_eof:
        stdin = watch_for_hangup(stdin, spec_first=args.sim_spec == "-")
    try:
        return command(args, stdin)
    except (BackendError, ReferencesError) as error:
        sys.stderr.write(f"probes: {error}\n")
        return getattr(error, "exit_code", EXIT_USAGE), False
    except Exception as error:  # a bug: one line, and the tray is not a pass
        if os.environ.get("PROBES_DEBUG"):
            raise
        sys.stderr.write(f"probes: internal error: {type(error).__name__}: {error} (PROBES_DEBUG=1 shows the traceback)\n")
        return EXIT_INCOMPLETE, False


def run_command(args: argparse.Namespace, stdin: TextIO) -> tuple[int, bool]:
    from probes.run import RunOptions, TrayRun

    backend = open_backend(args.backend, args.sim_spec, args.tray, stdin, loads=True)
    run = None
    try:
        run = TrayRun(backend, RunOptions(duration_s=args.duration, probes=args.probes, timeout_s=args.timeout,
                                          references=args.references, gemm_n=args.gemm_size))
        document, code = run.execute()
        emit(document, args.as_json)
        return code, run.hung
    finally:
        if run is None or not run.hung:  # a call stuck in the driver: no shutdown under it, the process just ends
            backend.close()


def snapshot_command(args: argparse.Namespace, stdin: TextIO) -> tuple[int, bool]:
    from probes.snapshot import take_snapshot, take_switch_snapshot

    backend = open_backend(args.backend, args.sim_spec, args.tray, stdin)
    hung = False
    try:
        if backend.switch is not None:
            document = take_switch_snapshot(backend.switch, args.window, clock=backend.clock, tray=backend.tray)
        else:
            assert backend.nvml is not None  # open_backend gives a GPU tray its NVML, a switch tray its reader
            document = take_snapshot(backend.nvml, args.window, clock=backend.clock, tray=backend.tray,
                                     kernel_history=backend.kernel_history)
        # A GPU named hung left a call stuck in the driver: no shutdown under it, the process just ends.
        hung = any(c.get("check") == "gpu.hung" for gpu in document["gpus"] for c in gpu.get("failed_checks", []))
        emit(document, args.as_json)
        return 0, hung
    finally:
        if not hung:
            backend.close()


def collective_command(args: argparse.Namespace, stdin: TextIO) -> tuple[int, bool]:
    from probes.collective import run_collective

    document, code = run_collective(args, stdin)
    emit(document, args.as_json)
    return code, False


def imex_command(args: argparse.Namespace, stdin: TextIO) -> tuple[int, bool]:
    from probes.imex import imex_document

    backend = open_backend(args.backend, args.sim_spec, args.tray, stdin)
    try:
        if backend.imex is None:
            raise BackendError(f"tray {args.tray} has no GPUs: IMEX runs on compute trays")
        document, code = imex_document(backend.tray, backend.kind, backend.imex())
        emit(document, args.as_json)
        return code, False
    finally:
        backend.close()


def preflight_command(args: argparse.Namespace, stdin: TextIO) -> tuple[int, bool]:
    from probes.preflight import preflight_document, unloadable_document

    try:
        backend = open_backend(args.backend, args.sim_spec, args.tray, stdin)
    except ImportError as error:  # what the backend itself needs (numpy for the simulator, …)
        document, code = unloadable_document(args.tray, args.backend, [*args.probes, *(["collective"] if args.collective else [])], error)
        emit(document, args.as_json) if args.as_json else print(document["missing"][0]["reason"])
        return code, False
    try:
        document, code = preflight_document(backend, args.probes, args.collective)
        if args.as_json:
            emit(document, True)
        else:
            for item in document["missing"]:
                print(f"{item['probe']}: {item['reason']}")
            print(f"preflight of tray {document['tray']}: " + ("ready" if not document["missing"] else
                                                              f"{len(document['missing'])} thing(s) missing"))
        return code, False
    finally:
        backend.close()


def emit(document: dict[str, Any], as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json_lines.dumps(document) + "\n")  # short lines: srun --label cuts long ones
        return
    print(f"{document['kind']} of tray {document.get('tray')}: {document.get('status', 'complete')}")
    checks = document.get("checks", []) + [c for gpu in document.get("gpus", []) for c in gpu.get("checks", [])]
    for c in checks:
        if c["verdict"] != "pass":
            print(f"  {c['verdict']:<10} {c['component']:<12} {c['check']}: {c['reason']}")
    for row in document.get("links", []):
        # Any counter that moved, whichever the link's generation has (NVLink 5: no data-link counters).
        if any(row.get(k) for k in SNAPSHOT_COUNTERS) or row.get("state") != "up":
            print(f"  link {row}")
    if checks:
        print(f"  {sum(c['verdict'] == 'pass' for c in checks)} of {len(checks)} checks passed")


if __name__ == "__main__":
    code, hung = main()
    sys.stdout.flush()
    if hung:  # a thread stuck in the driver must not keep the process alive
        os._exit(code)
    sys.exit(code)
