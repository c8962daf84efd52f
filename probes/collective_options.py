"""The collective's command line (`python -m probes collective`): its options and their defaults,
importable without the collective itself, so that building the probe's parser for `run` or
`snapshot` does not load the job's machinery (multiprocessing, the references)."""

from __future__ import annotations

import argparse

OPERATIONS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
DEFAULT_SIZES = "8K,64K,512K,4M,32M,256M,1G,4G"  # nccl-tests' sweep, from latency- to bandwidth-bound


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job-trays", metavar="LIST", help="every tray of the job, in order (ct01,ct02,…); this tray's "
                        "place is its --tray's position (else --node-rank)")
    parser.add_argument("--node-rank", type=int, default=0, metavar="K", help="this tray's place in the job, 0…nodes-1")
    parser.add_argument("--nodes", type=int, default=1, metavar="N", help="how many trays take part")
    parser.add_argument("--gpus-per-node", type=int, metavar="G", help="processes on this tray (default: its GPUs)")
    parser.add_argument("--master-addr", default="127.0.0.1", metavar="HOST", help="the first tray's address (the rendezvous)")
    parser.add_argument("--master-port", type=int, default=29500, metavar="PORT")
    parser.add_argument("--sizes", default=DEFAULT_SIZES, metavar="LIST", help=f"bytes per collective (default {DEFAULT_SIZES})")
    parser.add_argument("--operations", default=",".join(OPERATIONS), metavar="LIST", help="of " + ",".join(OPERATIONS))
    parser.add_argument("--size-mb", type=float, metavar="MB", help="one size, in MiB (instead of --sizes)")
    parser.add_argument("--iterations", type=int, default=5, metavar="N", help="timed calls per size (default 5)")
    parser.add_argument("--op-timeout", type=float, default=120.0, metavar="S",
                        help="seconds one collective may take before the job is given up as incomplete (default 120)")
    parser.add_argument("--bisect-size", default="256M", metavar="SIZE", help="all-reduce size of the bisection (default 256M)")
    parser.add_argument("--no-bisect", dest="bisect", action="store_false", help="do not narrow a slow domain by halves")
    parser.add_argument("--dist-backend", choices=("nccl", "gloo"), help="default: nccl on GPUs, gloo on CPUs")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="where the ranks run (cpu: tests)")
    parser.add_argument("--rendezvous-timeout", type=float, default=300.0, metavar="S",
                        help="seconds to wait for every tray to join (default 300)")
