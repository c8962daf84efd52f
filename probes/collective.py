"""A rack-wide all-reduce: one node's part of it (`python -m probes collective`).

An orchestrator starts this on every compute tray of an NVL72 with the same --nodes,
--master-addr and --master-port and each tray's --node-rank; each tray starts one process per
GPU (torch.distributed, NCCL on GPUs, gloo on CPUs), and together they form one job of
nodes × GPUs ranks. Each tray prints its own document with the job's figures (the slowest
rank's time sets them). Bus bandwidth follows nccl-tests (doc/PERFORMANCE.md):
algbw = bytes / time, busbw = algbw × 2(n − 1)/n for an all-reduce.

On the simulator no process starts: the all-reduce over every GPU of the simulated rack is
modelled from its links (a down or degraded link lowers its GPU's bandwidth, and the slowest
GPU sets the pace), and spent on the simulator's clock.
"""

import multiprocessing
import queue
import time

from probes.backend import BackendError, read_spec
from probes.exit_codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE
from probes.judge import check, load_references
from probes.snapshot import FORMAT

VERIFY_SOURCE = "every rank adds rank + 1: each element of the result must be n(n + 1)/2 (exact in float32)"


def add_arguments(parser):
    parser.add_argument("--node-rank", type=int, default=0, metavar="K", help="this tray's place in the job, 0…nodes-1")
    parser.add_argument("--nodes", type=int, default=1, metavar="N", help="how many trays take part")
    parser.add_argument("--gpus-per-node", type=int, metavar="G", help="processes on this tray (default: its GPUs)")
    parser.add_argument("--master-addr", default="127.0.0.1", metavar="HOST", help="node 0's address (the rendezvous)")
    parser.add_argument("--master-port", type=int, default=29500, metavar="PORT")
    parser.add_argument("--size-mb", type=float, default=256.0, metavar="MB", help="bytes all-reduced per call, in MiB")
    parser.add_argument("--iterations", type=int, default=20, metavar="N")
    parser.add_argument("--dist-backend", choices=("nccl", "gloo"), help="default: nccl on GPUs, gloo on CPUs")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="where the ranks run (cpu: tests)")
    parser.add_argument("--rendezvous-timeout", type=float, default=300.0, metavar="S",
                        help="seconds to wait for every node to join (default 300)")


def busbw(algbw, world):
    return algbw * 2 * (world - 1) / world if world > 1 else algbw


def run_collective(args, stdin=None):
    """(document, exit code) for this node."""
    if args.nodes < 1 or not 0 <= args.node_rank < args.nodes or args.iterations < 1 or args.size_mb <= 0:
        raise BackendError("need 0 <= --node-rank < --nodes, --iterations >= 1 and --size-mb > 0")
    nbytes = int(args.size_mb * 2**20)
    document = {"format": FORMAT, "kind": "collective", "tray": args.tray, "backend": args.backend,
                "node_rank": args.node_rank, "nodes": args.nodes, "operation": "all_reduce", "bytes": nbytes,
                "iterations": args.iterations, "status": "complete", "checks": [], "errors": []}
    if args.backend == "sim":
        result = _simulated(args, nbytes, stdin)
    else:
        result = _torch_distributed(args, nbytes)
    document.update(result)
    return _judge(document)


# --- the simulator -----------------------------------------------------------------------------------
def _simulated(args, nbytes, stdin):
    from probes.sim import SimRack
    from probes.sim.hardware import allreduce_busbw_gbps

    if not args.sim_spec or not args.tray:
        raise BackendError("--backend sim needs --sim-spec FILE (or - for stdin) and --tray NAME")
    rack = SimRack(read_spec(args.sim_spec, stdin))
    missing = [tray.name for tray in rack.spec.trays if tray.gpus and tray.unreachable]
    if args.tray not in rack.trays:
        raise BackendError(f"rack {rack.spec.rack} has no tray {args.tray!r}")
    gpus = rack.gpus()
    world = len(gpus)
    base = {"dist_backend": "sim", "world_size": world, "sku": rack.spec.sku}
    if missing:
        return {**base, "status": "incomplete", "errors": [f"tray {', '.join(missing)} unreachable: the job cannot form"]}
    t = rack.now()
    lost = [gpu.id for gpu in gpus if gpu.is_lost(t)]
    if lost:
        return {**base, "status": "incomplete", "errors": [f"{', '.join(lost)} lost: the all-reduce cannot complete"]}
    bandwidth = allreduce_busbw_gbps(gpus, t)
    seconds = args.iterations * nbytes * 2 * (world - 1) / world / (bandwidth * 1e9)
    rack.clock.sleep(seconds)
    prefix = rack.spec.rack + "/"
    slowest = min(gpus, key=lambda gpu: sum(link.bandwidth_factor(t) for link in gpu.links))
    mine = rack.trays[args.tray].gpus
    return {**base, "seconds": seconds, "algbw_gbps": round(args.iterations * nbytes / seconds / 1e9, 2),
            "busbw_gbps": round(bandwidth, 2), "verified": None,
            "slowest_gpu": slowest.id.removeprefix(prefix),
            "ranks": [{"gpu": gpu.id.removeprefix(prefix), "verified": None} for gpu in mine],
            "note": "the simulator models bandwidth from link state; no data moves, so nothing is verified"}


# --- torch.distributed ------------------------------------------------------------------------------------
def _torch_distributed(args, nbytes):
    try:
        import torch
    except ImportError:
        raise BackendError("the collective needs PyTorch (pip install 'opsctl[gpu]')") from None
    if args.device == "cuda" and not torch.cuda.is_available():
        raise BackendError("PyTorch sees no CUDA GPU; --device cpu --dist-backend gloo runs on CPUs")
    local = args.gpus_per_node or (torch.cuda.device_count() if args.device == "cuda" else 1)
    world = args.nodes * local
    dist_backend = args.dist_backend or ("nccl" if args.device == "cuda" else "gloo")
    rank_args = (world, dist_backend, args.device, args.master_addr, args.master_port, nbytes, args.iterations,
                 args.rendezvous_timeout)
    if local == 1:  # one rank: run it here, without starting (and importing torch in) another process
        results = queue.Queue()
        _rank_main(args.node_rank, 0, *rank_args, results)
        ranks = [results.get()]
    else:
        ranks = _spawn_ranks(local, args.node_rank * local, rank_args, args.rendezvous_timeout + 120)
    ranks.sort(key=lambda r: r["rank"])
    document = {"dist_backend": dist_backend, "world_size": world, "local_ranks": local, "ranks": ranks,
                "gpu_name": ranks[0].get("gpu_name") if ranks else None}
    errors = [f"rank {r['rank']}: {r['error']}" for r in ranks if r.get("error")]
    if len(ranks) < local:
        errors.append(f"{local - len(ranks)} of {local} local ranks never reported")
    if errors:
        return {**document, "status": "incomplete", "errors": errors}
    seconds = max(r["job_seconds"] for r in ranks)
    algbw = args.iterations * nbytes / seconds / 1e9
    return {**document, "seconds": seconds, "algbw_gbps": round(algbw, 2), "busbw_gbps": round(busbw(algbw, world), 2),
            "verified": all(r["verified"] for r in ranks)}


def _spawn_ranks(local, first_rank, rank_args, limit_s):
    """One process per local rank; their reports, as many as came back within `limit_s`."""
    context = multiprocessing.get_context("spawn")  # CUDA cannot be used in a forked child
    results = context.Queue()
    workers = [context.Process(target=_rank_main, args=(first_rank + i, i, *rank_args, results), daemon=True)
               for i in range(local)]
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + limit_s
    ranks = []
    while len(ranks) < local and time.monotonic() < deadline:
        try:
            ranks.append(results.get(timeout=1))
        except queue.Empty:
            if not any(worker.is_alive() for worker in workers) and results.empty():
                break
    for worker in workers:
        worker.join(timeout=5)
        if worker.is_alive():
            worker.kill()
    return ranks


def _rank_main(rank, local_rank, world, dist_backend, device_kind, addr, port, nbytes, iterations, timeout_s, results):
    """One rank, in its own process."""
    import datetime

    import torch
    import torch.distributed as dist

    report = {"rank": rank, "local_rank": local_rank}
    try:
        if device_kind == "cuda":
            torch.cuda.set_device(local_rank)
            device = torch.device("cuda", local_rank)
            report["device"] = f"cuda:{local_rank}"
            report["gpu_name"] = torch.cuda.get_device_name(device)
        else:
            device = torch.device("cpu")
            report["device"] = "cpu"
        dist.init_process_group(dist_backend, init_method=f"tcp://{addr}:{port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout_s))
        try:
            data = torch.zeros(nbytes // 4, dtype=torch.float32, device=device)
            dist.all_reduce(data)  # warm-up: connections are set up on first use
            _synchronize(torch, device)
            dist.barrier()
            started = time.perf_counter()
            for _ in range(iterations):
                dist.all_reduce(data)
            _synchronize(torch, device)
            took = torch.tensor([time.perf_counter() - started], dtype=torch.float64, device=device)
            dist.all_reduce(took, op=dist.ReduceOp.MAX)  # the slowest rank's time is the job's
            data.fill_(rank + 1)
            dist.all_reduce(data)
            expected = world * (world + 1) / 2
            report.update(seconds=float(time.perf_counter() - started), job_seconds=float(took.item()),
                          verified=bool(torch.all(data == expected).item()))
        finally:
            dist.destroy_process_group()
    except Exception as error:  # reported, and the node's document is incomplete
        report["error"] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    results.put(report)


def _synchronize(torch, device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --- judging -------------------------------------------------------------------------------------------------
def _judge(document):
    if document["status"] != "complete":
        document["checks"].append(check("collective.all_reduce", "tray", "incomplete", None, None, "", "",
                                        "a collective that cannot form or finish is not a pass", "; ".join(document["errors"])))
        return document, EXIT_INCOMPLETE
    if document.get("verified") is not None:
        document["checks"].append(check("collective.verified", "tray", "pass" if document["verified"] else "fail",
                                        document["verified"], True, "result", "!=", VERIFY_SOURCE,
                                        "every rank's result was exact" if document["verified"]
                                        else "a rank's all-reduce result was wrong"))
    refs = load_references(document.get("gpu_name"), sku=document.get("sku"))
    figure = (refs.sku or {}).get("collective")
    if figure:
        value = document["busbw_gbps"]
        verdict = "fail" if value < figure["min_busbw_gbps"] else "pass"
        slowest = f"; slowest GPU {document['slowest_gpu']}" if document.get("slowest_gpu") else ""
        document["checks"].append(check("collective.busbw", "tray", verdict, value, figure["min_busbw_gbps"], "GB/s", "<",
                                        figure["source"],
                                        f"all-reduce of {document['bytes'] / 2**20:.0f} MiB over {document['world_size']} "
                                        f"ranks: bus bandwidth {value:.0f} GB/s{slowest}"))
    failed = any(c["verdict"] == "fail" for c in document["checks"])
    return document, EXIT_FAILED if failed else EXIT_OK

