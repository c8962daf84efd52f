"""The exporter over this machine's real GPUs (pynvml): what one scrape serves and what it costs.

    python bench/exporter_real_gpu.py [--seconds 12] [--interval 1] [--scrapers 10]

Starts the same TrayPoller and Exporter that `opsctl exporter` starts on a real tray (the kernel
history read as it reads it), lets it read for --seconds while --scrapers threads scrape
/metrics at 1 Hz, and prints: the series served and their families, the renders made against
the scrapes answered, the scrape latency, the process's CPU per second of wall, and the
families whose value on GPU 0 says what NVML answered (up, fabric, kernel log read or not).
Needs only probes/, exporters/ and prometheus_client (no opsctl, no inventory).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import threading
import time
import urllib.request

import pynvml

from exporters.server import Exporter
from exporters.tray_poller import TrayPoller
from probes.kernel_history import read_kernel_history


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--scrapers", type=int, default=10)
    args = parser.parse_args()

    pynvml.nvmlInit()
    gpus = pynvml.nvmlDeviceGetCount()
    pynvml.nvmlShutdown()
    poller = TrayPoller("local", "node", pynvml, interval_s=args.interval, expected_gpus=gpus,
                        kernel_history=lambda: read_kernel_history(time.time()))
    exporter = Exporter([poller], listen="127.0.0.1", port=0, refresh_s=args.interval).start()
    url = f"http://127.0.0.1:{exporter.port}/metrics"
    time.sleep(min(3.0, args.seconds / 3))  # the first reading round
    latencies: list[float] = []
    stop = threading.Event()

    def scrape_loop() -> None:
        while not stop.is_set():
            began = time.perf_counter()
            with urllib.request.urlopen(url, timeout=10) as answer:
                answer.read()
            latencies.append(time.perf_counter() - began)
            stop.wait(max(0.0, 1.0 - (time.perf_counter() - began)))

    renders_before, cpu_before, wall_before = exporter.cache.renders, cpu_seconds(), time.perf_counter()
    threads = [threading.Thread(target=scrape_loop, daemon=True) for _ in range(args.scrapers)]
    for thread in threads:
        thread.start()
    time.sleep(args.seconds)
    stop.set()
    for thread in threads:
        thread.join()
    wall, cpu = time.perf_counter() - wall_before, cpu_seconds() - cpu_before
    renders = exporter.cache.renders - renders_before
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    exporter.stop()

    samples = [line for line in text.splitlines() if line and not line.startswith("#")]
    families = {line.split("{")[0].split(" ")[0] for line in samples}
    print(f"GPUs {gpus}; {len(samples)} series in {len(families)} families; {len(text)} bytes a scrape")
    print(f"{len(latencies)} scrapes by {args.scrapers} scrapers over {wall:.1f} s; {renders} renders "
          f"(reading interval {args.interval} s); scrape latency median {statistics.median(latencies) * 1000:.1f} ms, "
          f"max {max(latencies) * 1000:.1f} ms")
    print(f"CPU of the whole process (pollers reading NVML, renders, HTTP): {cpu:.2f} s over {wall:.1f} s wall "
          f"= {cpu / wall:.3f} cores")
    wanted = ("opsctl_exporter_up", "opsctl_exporter_kernel_log_read", "opsctl_exporter_collect_duration_seconds",
              "opsctl_tray_gpus", "opsctl_gpu_up", "opsctl_gpu_info", "opsctl_gpu_status", "opsctl_gpu_power",
              "opsctl_gpu_temperature_celsius", "opsctl_gpu_sm_clock", "opsctl_gpu_fabric", "opsctl_gpu_recovery_action",
              "opsctl_gpu_ecc", "opsctl_gpu_row_remap", "opsctl_gpu_remapped_rows", "opsctl_gpu_inforom_valid",
              "opsctl_gpu_memory_unrepairable", "opsctl_gpu_xid_recorded", "opsctl_gpu_all_xid_events_total",
              "opsctl_nvlink_up")
    shown: dict[str, int] = {}
    for line in samples:  # GPU 0's first few series of each family worth reading
        name = line.split("{")[0].split(" ")[0]
        if 'gpu="' in line and 'gpu="0"' not in line:
            continue
        if name.startswith(wanted) and shown.get(name, 0) < 3:
            shown[name] = shown.get(name, 0) + 1
            print("  " + line[:240])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
