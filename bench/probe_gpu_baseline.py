"""What plain PyTorch does on this GPU with the probe's shapes, and how the probe compares.

    python bench/probe_gpu_baseline.py --run RUN.json [--gpu 0] [--seconds 10]

Runs a bare torch.matmul loop (bf16, the probe's N × N × N, no verification) and a bare
device-to-device copy of the probe's buffer size, each for --seconds, on one GPU; then prints,
in the shape of docs/benchmarks.md, the probe's figures from RUN.json (a `python -m probes run
--json` document from this machine) beside them, the NVML read time per GPU, and what NVML
reported unsupported.
"""

import argparse
import json
import statistics
import time

COPY_BYTES = 2**30  # the probe's buffer (probes/compute/torch_device.py COPY_BYTES on CUDA)


def timed(step, seconds, torch, device):
    """(iterations, seconds) of `step` repeated for about `seconds`, after a warm-up."""
    step()
    torch.cuda.synchronize(device)
    started = time.perf_counter()  # one timed call sizes the batches, so the clock is read rarely
    step()
    torch.cuda.synchronize(device)
    per_call = max(time.perf_counter() - started, 1e-6)
    iterations = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        batch = max(1, int(0.5 / per_call))
        for _ in range(batch):
            step()
        torch.cuda.synchronize(device)
        iterations += batch
    return iterations, time.perf_counter() - started


def baseline(n, seconds, index):
    import torch

    device = torch.device("cuda", index)
    a = torch.randn(n, n, device=device).to(torch.bfloat16)
    b = torch.randn(n, n, device=device).to(torch.bfloat16)
    iterations, took = timed(lambda: torch.matmul(a, b), seconds, torch, device)  # noqa: F821 (a, b are deleted below, after use)
    tflops = 2.0 * n**3 * iterations / took / 1e12
    del a, b
    source = torch.empty(COPY_BYTES, dtype=torch.uint8, device=device).fill_(0x5A)
    target = torch.empty_like(source)
    iterations, took = timed(lambda: target.copy_(source, non_blocking=True), seconds / 2, torch, device)
    gbps = 2 * COPY_BYTES * iterations / took / 1e9  # read + written, as the probe counts
    return {"gpu": torch.cuda.get_device_name(device), "torch": torch.__version__, "tflops": tflops, "copy_gbps": gbps}


def report(run, plain, index):
    gpu = run["gpus"][index]
    bf16 = gpu["gemm"]["bf16"]
    lines = [
        f"GPU: {plain['gpu']} (driver {run['system'].get('driver_version')}, torch {plain['torch']}); "
        f"probe run {run['duration_s']:.0f} s, probes {', '.join(run['probes'])}",
        "",
        "| figure | tray probe | plain torch, same shape | probe / plain |",
        "|---|---|---|---|",
        f"| bf16 GEMM {bf16['n']}³, TFLOPS (median of {len(bf16['tflops_windows'])} windows; every result verified) | "
        f"{bf16['tflops_median']:.0f} (min {bf16['tflops_min']:.0f}, drop {bf16['drop_pct']:.1f}%) | "
        f"{plain['tflops']:.0f} | {bf16['tflops_median'] / plain['tflops']:.1%} |",
    ]
    fp8 = gpu["gemm"].get("fp8", {})
    if "tflops_median" in fp8:
        lines.append(f"| fp8 GEMM {fp8['n']}³ (torch._scaled_mm), TFLOPS | {fp8['tflops_median']:.0f} | — | — |")
    elif fp8:
        lines.append(f"| fp8 GEMM | skipped: {fp8.get('skipped')} | — | — |")
    if gpu.get("membw"):
        lines.append(f"| device copy {COPY_BYTES >> 20} MiB, GB/s read + written | {gpu['membw']['gbps']:.0f} | "
                     f"{plain['copy_gbps']:.0f} | {gpu['membw']['gbps'] / plain['copy_gbps']:.1%} |")
    reads = [g["before"]["read_seconds"] for g in run["gpus"]] + [g["after"]["read_seconds"] for g in run["gpus"]]
    lines += ["", f"NVML read of one GPU (identity, health, every link in one batched field call): median "
              f"{statistics.median(reads) * 1000:.1f} ms, max {max(reads) * 1000:.1f} ms over {len(reads)} reads"]
    calls = sorted({call for g in run["gpus"] for call in g["before"]["unsupported"]})
    fields = sorted({name for g in run["gpus"] for link in g["before"]["links"] for name in link["unsupported"]})
    errors = sorted({f"{call}: {error}" for g in run["gpus"] for call, error in g["before"]["errors"].items()})
    lines.append(f"NVML unsupported calls: {', '.join(calls) or 'none'}")
    lines.append(f"NVML unsupported link fields: {', '.join(fields) or 'none'}")
    lines.append(f"NVML errors: {'; '.join(errors) or 'none'}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", required=True, help="the probe's run document (JSON)")
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with open(args.run, encoding="utf-8") as file:
        run = json.load(file)
    n = run["gpus"][args.gpu]["gemm"]["bf16"]["n"]
    print(report(run, baseline(n, args.seconds, args.gpu), args.gpu))


if __name__ == "__main__":
    main()
