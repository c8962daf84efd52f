"""The rack's NVLink domain under load: one tray's part of a rack-wide collective job
(`python -m probes collective`).

An orchestrator (opsctl's domain test) starts this on every compute tray at once with the same
--job-trays, --master-addr and --master-port; each tray finds its place in the job from its own
--tray. A tray starts one process per GPU (torch.distributed; NCCL on GPUs, gloo on CPUs), and
all of them form one process group across the trays; the rendezvous (a TCPStore) lives on the
first tray's first rank. The job then runs, as nccl-tests does, a sweep of sizes over
all-reduce, all-gather, reduce-scatter and all-to-all, every result verified, and reports bus
bandwidth by nccl-tests' formulas (doc/PERFORMANCE.md):

    algbw = S / t;  busbw = algbw × 2(n − 1)/n (all-reduce), × (n − 1)/n (all-gather,
    reduce-scatter, all-to-all), S the whole array in bytes, n the GPUs in the job.

What it also says: which path NCCL took (its own NCCL_DEBUG=INFO lines: P2P over NVLink, NVLS,
or NET, the network), which trays never joined, which trays had not arrived when a collective
timed out (--op-timeout), and a bisection — the all-reduce run by halves of the trays at once,
then halves of the slower half — that narrows a slow domain to a tray.

The device seam (probes/compute/collective_device.py, probes/sim/collective.py) gives the
tensors' device and how long a collective took: measured on GPUs; on the simulator one process
stands for a tray's GPUs, the collectives really run at small size on NumPy arrays through a
plain-Python store (probes/sim/exchange.py: no PyTorch) and are verified,
and the time is modelled from the rack's links for the size asked.
"""

from __future__ import annotations

import datetime
import multiprocessing
import queue
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from probes.backend import BackendError, read_spec
from probes.check_record import Check, check
from probes.collective_options import OPERATIONS
from probes.sku_references import References, load_references
from probes.snapshot import FORMAT

if TYPE_CHECKING:
    import argparse

    from probes.compute import CollectiveDevice

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
# nccl-tests doc/PERFORMANCE.md: busbw = algbw × this factor, n the ranks (GPUs) of the job.
BUS_FACTORS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
               "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n}
BUSBW_SOURCE = ("nccl-tests doc/PERFORMANCE.md: busbw = algbw × 2(n-1)/n for AllReduce, × (n-1)/n for AllGather, "
                "ReduceScatter and AlltoAll; S the whole array")
VERIFY_SOURCE = ("each rank fills its input with values set by its rank; every element of every result must be the "
                 "exact sum or copy (small whole numbers, exact in float32), as nccl-tests checks its results")
TRANSPORT_SOURCE = ("NCCL's own INFO lines (NCCL_DEBUG=INFO; src/transport/p2p.cc 'via P2P/…', net.cc 'via NET/…'): "
                    "the path each channel took")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMG]?)(?:i?B)?", re.IGNORECASE)
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}
_VIA = re.compile(r"via (P2P|SHM|NET|COLLNET|PSM_P2P)(?:/(\w+))?")
_NVLS = re.compile(r"NVLS multicast support is available")


def parse_sizes(text: object) -> list[int]:
    sizes = []
    for item in str(text).split(","):
        match = _SIZE.fullmatch(item.strip())
        if not match:
            raise BackendError(f"--sizes: not a size: {item!r} (e.g. 8K,1M,4G)")
        sizes.append(int(float(match.group(1)) * _UNITS[match.group(2).upper()]))
    if not sizes or min(sizes) < 4:
        raise BackendError("--sizes needs at least one size of 4 bytes or more")
    return sorted(set(sizes))


def size_label(nbytes: int) -> str:
    for unit in ("G", "M", "K"):
        if nbytes >= _UNITS[unit] and nbytes % _UNITS[unit] == 0:
            return f"{nbytes // _UNITS[unit]}{unit}"
    return f"{nbytes}B"


def busbw(op: str, algbw: float, n: int) -> float:
    return algbw * BUS_FACTORS[op](n) if n > 1 else algbw


@dataclass
class JobPlan:
    """What every rank of the job does; the same on every tray but for its place."""

    trays: list  # tray names, by node rank
    local_ranks: int  # processes on each tray
    gpus_per_rank: int  # GPUs one process stands for (the simulator: a tray's)
    master_addr: str
    master_port: int
    sizes: list
    operations: list
    iterations: int
    op_timeout_s: float
    rendezvous_timeout_s: float
    bisect_bytes: int | None
    bisect_margin_pct: float
    dist_backend: str
    device: tuple  # how a rank opens its device: ("cuda",), ("cpu",), ("sim", spec dict, tray)
    debug_dir: str | None = None  # where NCCL writes its INFO lines (GPUs)

    @property
    def world(self) -> int:
        return len(self.trays) * self.local_ranks

    def tray_of(self, rank: int) -> str:
        return self.trays[rank // self.local_ranks]

    def gpus(self, ranks: Sequence[int]) -> int:
        return len(ranks) * self.gpus_per_rank


@dataclass
class RankReport:
    rank: int
    tray: str
    joined: bool = False
    steps: list = field(default_factory=list)  # this rank's [op, bytes, seconds, verified]
    nccl_lines: list = field(default_factory=list)
    error: str | None = None
    not_joined: list = field(default_factory=list)  # trays, when the rendezvous timed out
    not_arrived: list = field(default_factory=list)  # trays, when a collective timed out
    timed_out: dict | None = None  # {operation, bytes}
    job_seconds: list = field(default_factory=list)  # the slowest rank's seconds per step
    bisection: list = field(default_factory=list)
    gpu_name: str | None = None


def run_collective(args: argparse.Namespace, stdin: TextIO | None = None) -> tuple[dict[str, Any], int]:
    """(document, exit code) for this tray."""
    trays, node_rank = _job_trays(args)
    sizes = [int(args.size_mb * 2**20)] if args.size_mb else parse_sizes(args.sizes)
    operations = [op.strip() for op in args.operations.split(",") if op.strip()]
    if not operations or any(op not in OPERATIONS for op in operations):
        raise BackendError(f"--operations: choose from {','.join(OPERATIONS)}")
    if args.iterations < 1 or args.op_timeout <= 0:
        raise BackendError("need --iterations >= 1 and --op-timeout > 0")
    device, local, gpus_per_rank, info = _open_job_devices(args, stdin, trays[node_rank])
    refs = load_references(sku=info.get("sku"))
    plan = JobPlan(trays=trays, local_ranks=local, gpus_per_rank=gpus_per_rank, master_addr=args.master_addr,
                   master_port=args.master_port, sizes=sizes, operations=operations, iterations=args.iterations,
                   op_timeout_s=args.op_timeout, rendezvous_timeout_s=args.rendezvous_timeout,
                   bisect_bytes=parse_sizes(args.bisect_size)[0] if args.bisect and len(trays) > 1 else None,
                   bisect_margin_pct=float(refs.rules["collective_trays"]["max_below_pct"]),
                   dist_backend=args.dist_backend or ("nccl" if device[0] == "cuda" else "gloo"), device=device,
                   debug_dir=info.get("debug_dir"))
    document = {"format": FORMAT, "kind": "collective", "tray": trays[node_rank], "backend": args.backend,
                "node_rank": node_rank, "nodes": len(trays), "job_trays": trays, "world_size": plan.world,
                "gpus": plan.gpus(range(plan.world)), "local_ranks": local, "dist_backend": plan.dist_backend,
                "sku": info.get("sku"), "operations": operations, "sizes": sizes, "iterations": args.iterations,
                "status": "complete", "checks": [], "errors": []}
    if info.get("error"):
        document.update(status="incomplete", errors=[info["error"]])
        return _judge(document, refs)
    first = node_rank * local
    if local == 1:  # one rank: run it here, without starting (and importing torch in) another process
        results: queue.Queue[RankReport] = queue.Queue()
        rank_main(plan, first, 0, results)
        reports = [results.get()]
    else:
        reports = _spawn_ranks(plan, first, local)
    document.update(_combine(plan, node_rank, reports))
    return _judge(document, refs)


def _job_trays(args: argparse.Namespace) -> tuple[list[str], int]:
    if args.job_trays:
        trays = [t.strip() for t in args.job_trays.split(",") if t.strip()]
        if not args.tray or args.tray not in trays:
            raise BackendError(f"--tray {args.tray!r} is not one of --job-trays {args.job_trays}")
        if len(set(trays)) != len(trays):
            raise BackendError("--job-trays names a tray twice")
        return trays, trays.index(args.tray)
    if args.nodes < 1 or not 0 <= args.node_rank < args.nodes:
        raise BackendError("need 0 <= --node-rank < --nodes")
    trays = [f"node{k}" for k in range(args.nodes)]
    if args.tray:
        trays[args.node_rank] = args.tray
    return trays, args.node_rank


def _open_job_devices(args: argparse.Namespace, stdin: TextIO | None, tray: str) -> tuple[tuple[Any, ...], int, int, dict[str, Any]]:
    """(device recipe, processes on this tray, GPUs each stands for, {sku, debug_dir, error})."""
    if args.backend == "sim":
        if not args.sim_spec or not args.tray:
            raise BackendError("--backend sim needs --sim-spec FILE (or - for stdin) and --tray NAME")
        spec = read_spec(args.sim_spec, stdin or sys.stdin)
        try:
            tray_spec = spec.tray(args.tray)
        except KeyError:
            raise BackendError(f"rack {spec.rack} has no tray {args.tray!r}") from None
        if tray_spec.unreachable:
            raise BackendError(f"{spec.rack}/{args.tray}: no route to host (simulated unreachable tray)", exit_code=3)
        if not tray_spec.gpus:
            raise BackendError(f"{spec.rack}/{args.tray} has no GPUs: the collective runs on compute trays")
        return ("sim", spec.to_dict(), args.tray), 1, len(tray_spec.gpus), {"sku": spec.sku}
    try:
        import torch
    except ImportError:
        raise BackendError("the collective needs PyTorch (pip install 'opsctl[gpu]')") from None
    if args.device == "cpu":
        return ("cpu",), args.gpus_per_node or 1, 1, {}
    if not torch.cuda.is_available():
        raise BackendError("PyTorch sees no CUDA GPU; --device cpu --dist-backend gloo runs on CPUs")
    from probes.compute.collective_device import nccl_debug_dir

    local = args.gpus_per_node or torch.cuda.device_count()
    return ("cuda",), local, 1, {"sku": _sku_of(torch.cuda.get_device_name(0)), "debug_dir": nccl_debug_dir()}


def _sku_of(gpu_name: str) -> str | None:
    refs = load_references(gpu_name)
    return (refs.sku or {}).get("sku")


# What a simulated rank imports (NumPy's collectives, the simulator), loaded once in the fork server.
_SIM_RANK_MODULES = ("numpy", "probes.sim", "probes.sim.collective", "probes.sim.exchange")


def _spawn_ranks(plan: JobPlan, first_rank: int, local: int) -> list[RankReport]:
    """One process per local rank; their reports, as many as came back in time."""
    context: multiprocessing.context.BaseContext
    if plan.device[0] == "sim":
        # A fork server: one fresh interpreter loads a simulated rank's modules and each rank is
        # forked from it, so a simulated tray pays one Python start-up for its ranks, not one each.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["probes.collective", *_SIM_RANK_MODULES])
    else:
        context = multiprocessing.get_context("spawn")  # CUDA cannot be used in a forked child
    results = context.Queue()
    workers = [context.Process(target=rank_main, args=(plan, first_rank + i, i, results), daemon=True) for i in range(local)]
    for worker in workers:
        worker.start()
    limit = plan.rendezvous_timeout_s + plan.op_timeout_s * (len(plan.sizes) * len(plan.operations) + 8) + 60
    deadline = time.monotonic() + limit
    reports: list[RankReport] = []
    while len(reports) < local and time.monotonic() < deadline:
        try:
            reports.append(results.get(timeout=1))
        except queue.Empty:
            if not any(worker.is_alive() for worker in workers) and results.empty():
                break
    for worker in workers:
        worker.join(timeout=5)
        if worker.is_alive():
            worker.kill()
    missing = sorted(set(range(first_rank, first_rank + local)) - {r.rank for r in reports})
    reports += [RankReport(rank=r, tray=plan.tray_of(r), error="the rank's process never reported") for r in missing]
    return sorted(reports, key=lambda r: r.rank)


# --- one rank ------------------------------------------------------------------------------------------
def rank_main(plan: JobPlan, rank: int, local_rank: int, results: Any) -> None:
    """One rank of the job, in its own process (or the tray's, when it is its only one)."""
    report = RankReport(rank=rank, tray=plan.tray_of(rank))
    try:
        _Rank(plan, rank, local_rank, report).run()
    except Exception as error:  # reported: the tray's document is incomplete
        report.error = report.error or f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    results.put(report)


def _open_device(plan: JobPlan, local_rank: int) -> CollectiveDevice:
    if plan.device[0] == "sim":
        from probes.sim import SimRack
        from probes.sim.collective import SimCollectiveDevice

        return SimCollectiveDevice(SimRack(plan.device[1]), plan.device[2])
    from probes.compute.collective_device import TorchCollectiveDevice

    return TorchCollectiveDevice(plan.device[0], local_rank, plan.debug_dir)


class _Rank:
    def __init__(self, plan: JobPlan, rank: int, local_rank: int, report: RankReport) -> None:
        self.plan, self.rank, self.report = plan, rank, report
        self.local_rank = local_rank
        self.step = 0

    def run(self) -> None:
        plan = self.plan
        self.device = _open_device(plan, self.local_rank)
        self.exchange = self.device.exchange()
        self.report.gpu_name = self.device.name
        try:
            self.store = self.exchange.connect(plan.master_addr, plan.master_port, self.rank, plan.rendezvous_timeout_s)
        except Exception as error:
            self.report.not_joined = [plan.trays[0]]
            raise RuntimeError(f"the rendezvous on {plan.trays[0]} ({plan.master_addr}:{plan.master_port}) never "
                               f"answered: {str(error).splitlines()[0]}") from None
        try:
            self._join()
            self.device.before_init()
            self.exchange.init(plan.dist_backend, self.rank, plan.world, plan.op_timeout_s)
            try:
                self._sweep()
                if plan.bisect_bytes:
                    self._bisect(plan.bisect_bytes)
                self.report.nccl_lines = self.device.nccl_lines(self.rank, plan.world)
            finally:
                self.exchange.destroy()
        finally:
            self._leave()
            self.exchange.close()

    # --- rendezvous: every rank says it is here; the ones that never say so are named -------------------
    def _join(self) -> None:
        plan = self.plan
        self.store.set(f"joined/{self.rank}", self.report.tray)
        deadline = time.monotonic() + plan.rendezvous_timeout_s
        keys = [f"joined/{r}" for r in range(plan.world)]
        while not self.store.check(keys):
            if time.monotonic() > deadline:
                self.report.not_joined = sorted({plan.tray_of(r) for r in range(plan.world)
                                                 if not self.store.check([f"joined/{r}"])})
                raise RuntimeError(f"tray(s) {', '.join(self.report.not_joined)} never joined the job "
                                   f"within {plan.rendezvous_timeout_s:g} s")
            time.sleep(0.05)
        self.report.joined = True

    def _leave(self) -> None:
        """The first rank holds the rendezvous: it waits (a while) for the others to finish with it."""
        try:
            self.store.set(f"left/{self.rank}", "1")
            if self.rank == 0:
                deadline = time.monotonic() + min(30.0, self.plan.op_timeout_s)
                keys = [f"left/{r}" for r in range(self.plan.world)]
                while not self.store.check(keys) and time.monotonic() < deadline:
                    time.sleep(0.05)
        except Exception:
            pass  # the store's host is gone: nothing left to wait for

    # --- the collectives ---------------------------------------------------------------------------------
    def _collective(self, op: str, nbytes: int, group: Any = None, ranks: list[int] | None = None) -> tuple[float, bool]:
        """Run `op` on buffers of `nbytes` (as the device moves them): verify one call, time
        `iterations` more. (seconds for the iterations, verified)."""
        xp, plan = self.exchange, self.plan
        ranks = list(range(plan.world)) if ranks is None else ranks
        n = len(ranks)
        me = ranks.index(self.rank)
        count = max(1, self.device.real_bytes(nbytes) // 4 // n)  # elements per rank's chunk
        base = xp.chunk_index(n, count)  # chunk j holds j
        if op == "all_reduce":
            send, recv = xp.full(n * count, float(me + 1)), None
            expected = xp.full(n * count, float(n * (n + 1) // 2))
        elif op == "all_gather":
            send, recv = xp.full(count, float(me + 1)), xp.empty(n * count)
            expected = base + 1
        elif op == "reduce_scatter":
            send, recv = (base + 1) * (me + 1), xp.empty(count)
            expected = xp.full(count, float((me + 1) * n * (n + 1) // 2))
        else:  # all_to_all: chunk j of rank k goes to rank j
            send, recv = base + 1 + me * n, xp.empty(n * count)
            expected = me + 1 + base * n
        fresh = xp.clone(send)
        self._call(op, send, recv, group)
        result = send if recv is None else recv
        self.device.received(result)
        verified = xp.equal(result, expected)
        self.device.synchronize()
        started = time.perf_counter()
        for _ in range(plan.iterations):
            self._call(op, fresh, recv, group)  # in place for an all-reduce: the values no longer matter
        self.device.synchronize()
        measured = time.perf_counter() - started
        trays = sorted({plan.tray_of(r) for r in ranks}, key=plan.trays.index)
        seconds = self.device.collective_seconds(op, nbytes, trays, plan.gpus(ranks), plan.iterations, measured)
        return seconds, verified

    def _call(self, op: str, send: Any, recv: Any, group: Any) -> None:
        self._arrive()
        work = self.exchange.call(op, send, recv, group)
        work.wait(timeout=datetime.timedelta(seconds=self.plan.op_timeout_s))

    def _arrive(self) -> None:
        """Say this rank reached the next collective (a hung GPU never does: it blocks here)."""
        self.device.before_collective()
        self.step += 1
        self.store.set(f"arrived/{self.step}/{self.rank}", "1")

    def _not_arrived(self, ranks: Sequence[int]) -> list[str]:
        return sorted({self.plan.tray_of(r) for r in ranks if not self.store.check([f"arrived/{self.step}/{r}"])},
                      key=self.plan.trays.index)

    def _guarded(self, op: str, nbytes: int, **kwargs: Any) -> tuple[float, bool]:
        try:
            return self._collective(op, nbytes, **kwargs)
        except Exception as error:
            ranks = kwargs.get("ranks") or range(self.plan.world)
            self.report.not_arrived = self._not_arrived(ranks)
            self.report.timed_out = {"operation": op, "bytes": nbytes}
            late = (f"; tray(s) that had not arrived: {', '.join(self.report.not_arrived)}" if self.report.not_arrived
                    else "; every tray had arrived: the collective itself did not finish")
            self.report.error = (f"{op} of {size_label(nbytes)} did not finish within {self.plan.op_timeout_s:g} s "
                                 f"({str(error).splitlines()[0][:160]}){late}")
            raise

    def _sweep(self) -> None:
        for op in self.plan.operations:
            for nbytes in self.plan.sizes:
                seconds, verified = self._guarded(op, nbytes)
                self.report.steps.append([op, nbytes, seconds, verified])
        # The job's time of each step is its slowest rank's.
        self._arrive()
        self.report.job_seconds = self.exchange.max_across([s[2] for s in self.report.steps])

    # --- bisection: halves of the trays at once, then halves of the slower half -------------------------
    def _bisect(self, nbytes: int) -> None:
        xp, plan = self.exchange, self.plan
        candidates = list(range(len(plan.trays)))
        while len(candidates) > 1:
            halves = [candidates[: len(candidates) // 2], candidates[len(candidates) // 2:]]
            groups: list[tuple[list[int], Any]] = []
            for half in halves:
                ranks = [node * plan.local_ranks + i for node in half for i in range(plan.local_ranks)]
                groups.append((ranks, xp.new_group(ranks)))  # every rank creates every group, in order
            times = [0.0, 0.0]
            for index, (ranks, group) in enumerate(groups):
                if self.rank in ranks:
                    seconds, _ = self._guarded("all_reduce", nbytes, group=group, ranks=ranks)
                    times[index] = seconds
            self._arrive()
            times = xp.max_across(times)
            found: list[dict[str, Any]] = []
            for half, (ranks, _), seconds in zip(halves, groups, times):
                n = plan.gpus(ranks)
                algbw = nbytes * plan.iterations / seconds / 1e9 if seconds > 0 else 0.0
                found.append({"trays": [plan.trays[k] for k in half], "gpus": n,
                              "busbw_gbps": _figure(busbw("all_reduce", algbw, n))})
            slower = slower_half(found[0]["busbw_gbps"], found[1]["busbw_gbps"], plan.bisect_margin_pct)
            self.report.bisection.append({"halves": found, "slower": slower})
            if slower is None:
                break
            candidates = halves[slower]


def _figure(value: float) -> float:
    return float(f"{value:.4g}")


def slower_half(busbw_a: float, busbw_b: float, margin_pct: float) -> int | None:
    """0 or 1: the half whose bus bandwidth is more than margin_pct below the other's; None
    when neither is (the domain is alike, or alike slow: not one tray's doing)."""
    fast = max(busbw_a, busbw_b)
    if fast <= 0:
        return None
    for index, value in enumerate((busbw_a, busbw_b)):
        if value < fast * (1 - margin_pct / 100):
            return index
    return None


def nccl_paths(lines: list[str]) -> dict[str, Any]:
    """{"paths": {"P2P/MNNVL": count, "NET/IB": count, …}, "nvls": bool}: which transports NCCL's
    channels took, from its INFO lines."""
    paths: dict[str, int] = {}
    for line in lines:
        for kind, detail in _VIA.findall(line):
            key = f"{kind}/{detail}" if detail else kind
            paths[key] = paths.get(key, 0) + 1
    return {"paths": dict(sorted(paths.items())), "nvls": any(_NVLS.search(line) for line in lines)}


# --- the tray's document -------------------------------------------------------------------------------
def _combine(plan: JobPlan, node_rank: int, reports: list[RankReport]) -> dict[str, Any]:
    """This tray's document fields from its ranks' reports."""
    mine = [asdict(r) for r in reports]
    errors = [f"rank {r.rank}: {r.error}" for r in reports if r.error]
    found: dict[str, Any] = {"ranks": [{k: r[k] for k in ("rank", "tray", "joined", "error")} for r in mine],
             "gpu_name": next((r.gpu_name for r in reports if r.gpu_name), None),
             "not_joined": sorted({t for r in reports for t in r.not_joined}, key=plan.trays.index),
             "not_arrived": sorted({t for r in reports for t in r.not_arrived}, key=plan.trays.index),
             "timed_out": next((r.timed_out for r in reports if r.timed_out), None),
             "transport": nccl_paths([line for r in reports for line in r.nccl_lines]),
             "nccl_lines": [line for r in reports for line in r.nccl_lines][:50]}
    wrong = sorted({(s[0], s[1]) for r in reports for s in r.steps if not s[3]})
    found["wrong_results"] = [{"operation": op, "bytes": nbytes} for op, nbytes in wrong]
    job = next((r for r in reports if r.job_seconds), None)
    if job is not None:
        n = plan.gpus(range(plan.world))
        results = []
        for (op, nbytes, _, _), seconds in zip(job.steps, job.job_seconds):
            algbw = nbytes * plan.iterations / seconds / 1e9 if seconds > 0 else 0.0
            results.append({"operation": op, "bytes": nbytes, "size": size_label(nbytes), "seconds": seconds / plan.iterations,
                            "algbw_gbps": _figure(algbw), "busbw_gbps": _figure(busbw(op, algbw, n))})
        found["results"] = results
        found["bisection"] = job.bisection
    if errors or any(not r.steps for r in reports):
        found["status"] = "incomplete"
        found["errors"] = errors or ["a rank finished without results"]
    return found


def _judge(document: dict[str, Any], refs: References) -> tuple[dict[str, Any], int]:
    """The tray's checks: its ranks' results verified; and, since every tray holds the job's
    figures, bus bandwidth against the GPU model's floor and the path NCCL took."""
    checks: list[Check] = document["checks"]
    if document["status"] != "complete":
        checks.append(check("collective.complete", "tray", "incomplete", "did not finish", "finished", "", "!=",
                            "a collective that cannot form or finish is not a pass", "; ".join(document["errors"])))
    for wrong in document.get("wrong_results") or []:
        checks.append(check("collective.verified", "tray", "fail", wrong, "exact", "result", "!=", VERIFY_SOURCE,
                            f"{wrong['operation']} of {size_label(wrong['bytes'])}: a rank of this tray got a wrong result"))
    if document.get("results") and not document.get("wrong_results"):
        checks.append(check("collective.verified", "tray", "pass", True, "exact", "result", "!=", VERIFY_SOURCE,
                            f"every result of this tray's ranks was exact ({len(document['results'])} collectives)"))
    figure = (refs.sku or {}).get("collective")
    if figure:
        for row in document.get("results") or []:
            if row["operation"] == "all_reduce" and row["bytes"] >= figure.get("from_bytes", 0):
                value = row["busbw_gbps"]
                checks.append(check(f"collective.all_reduce.busbw.{row['size']}", "job",
                                    "fail" if value < figure["min_busbw_gbps"] else "pass", value,
                                    figure["min_busbw_gbps"], "GB/s", "<", f"{figure['source']}; {BUSBW_SOURCE}",
                                    f"all-reduce of {row['size']} over {document['gpus']} GPUs: bus bandwidth "
                                    f"{value:.0f} GB/s"))
    rule = refs.rules.get("collective_transport") or {}
    transport = document.get("transport") or {}
    if document.get("sku") in rule.get("network_fails", []) and transport.get("paths"):
        network = {k: v for k, v in transport["paths"].items() if k.split("/")[0] in ("NET", "COLLNET")}
        checks.append(check("collective.transport", "job", "fail" if network else "pass", sorted(transport["paths"]),
                            "NVLink (P2P, NVLS)", "path", "!=", f"{rule['source']}; {TRANSPORT_SOURCE}",
                            f"NCCL fell back to the network ({', '.join(sorted(network))}) inside the NVLink domain"
                            if network else f"NCCL's channels went over NVLink ({', '.join(sorted(transport['paths']))})"))
    if document["status"] != "complete":
        return document, EXIT_INCOMPLETE
    failed = any(c["verdict"] == "fail" for c in checks)
    return document, EXIT_FAILED if failed else EXIT_OK
