"""How long a scrape of the whole simulated NVL72 takes from `opsctl exporter --rack rack07`
(72 GPUs, 1,296 links), against prometheus_client serving the same number of plain gauges.
Both run as their own process, as deployed, at the same time, and are scraped in interleaved
pairs (the order swapped every round), so a busy machine slows both alike. The exporter reads
every GPU every 10 s and serves the render of its last completed reading round (a scrape waits
only when it arrives as a round's render is made); the plain gauges render at every scrape: this
is the latency a scraper sees, not the cost of a render — that is the in-process comparison
printed last (fresh renders against fresh renders, CPU time). Percentiles come only from enough
samples (a p99 from 100 up). Prints its figures; docs/benchmarks.md records them.

    .venv/bin/python bench/exporter_scrape.py [--scrapes 60] [--cpu-only]
"""

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# What Prometheus 2.x sends (it prefers OpenMetrics, and compresses).
PROMETHEUS_HEADERS = {"Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
                      "Accept-Encoding": "gzip"}


def plain_gauges(series):
    """The baseline: a registry of `series` children of one labelled Gauge, labels shaped like a link's."""
    from prometheus_client import CollectorRegistry, Gauge

    registry = CollectorRegistry()
    gauge = Gauge("plain_gauge", "A plain gauge.", ["rack", "tray", "gpu", "uuid", "port", "switch"], registry=registry)
    for i in range(series):
        tray, gpu, port = i // 72 % 18 + 1, i // 18 % 4, i % 18
        gauge.labels("rack07", f"ct{tray:02d}", str(gpu), f"GPU-{i:08x}-0000-0000-0000-000000000000", str(port),
                     f"rack07/st{port // 2 + 1}/sw{port % 2}").set(i * 0.5)
    return registry


def serve_plain_gauges(series):
    from prometheus_client import start_http_server

    server, _ = start_http_server(0, addr="127.0.0.1", registry=plain_gauges(series))
    print(json.dumps({"port": server.server_port}), flush=True)
    while True:
        time.sleep(3600)


def start(command):
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO)
    text = ""
    for line in process.stdout:
        text += line
        try:
            return process, json.loads(text)["port"]
        except json.JSONDecodeError:
            continue
    raise SystemExit(f"{command} did not start")


def scrape(port, headers=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers or {})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
        encoding = response.headers.get("Content-Encoding")
    return time.perf_counter() - started, body, encoding


def series_of(body, encoding):
    text = (gzip.decompress(body) if encoding == "gzip" else body).decode()
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def percentile(sorted_times, fraction):
    """The sample at `fraction` of the way up, or None when too few samples stand above it to say
    (a p99 needs at least 100: of 60, it would be the largest but one)."""
    if len(sorted_times) * (1 - fraction) < 1:
        return None
    return sorted_times[round(fraction * (len(sorted_times) - 1))]


def measure_pairs(ports, scrapes, headers=None):
    """Scrape each server in turn, `scrapes` rounds, the order swapped every round, so a busy
    machine slows both alike: {port: (median, p90, p99 or None, bytes, series)}."""
    times = {port: [] for port in ports}
    last = {}
    for round_ in range(scrapes):
        for port in (ports if round_ % 2 == 0 else ports[::-1]):
            elapsed, body, encoding = scrape(port, headers)
            times[port].append(elapsed)
            last[port] = (body, encoding)
    found = {}
    for port, samples in times.items():
        samples.sort()
        body, encoding = last[port]
        found[port] = (statistics.median(samples), percentile(samples, 0.9), percentile(samples, 0.99), len(body),
                       len(series_of(body, encoding)))
    return found


def render_cpu_seconds(registries, repeats):
    """CPU seconds of this thread to build and render one scrape of each registry (median, p90 of
    `repeats` fresh renders each), interleaved: render i of one, then render i of the other, the
    order swapped each time, so a busy machine slows both alike. Unlike wall time, other
    processes barely move it."""
    from prometheus_client import generate_latest

    times = [[] for _ in registries]
    for i in range(repeats):
        order = list(range(len(registries)))[::1 if i % 2 == 0 else -1]
        for k in order:
            started = time.thread_time()
            generate_latest(registries[k])
            times[k].append(time.thread_time() - started)
    return [(statistics.median(t), statistics.quantiles(t, n=10, method="inclusive")[8]) for t in times]


def in_process_cpu(repeats):
    """The exporter's collector over rack07 (read once) against plain gauges, in this process."""
    from prometheus_client import CollectorRegistry

    from exporters.metrics import RackCollector
    from opsctl.cli.commands.exporter import pollers_for
    from opsctl.inventory import load_inventory

    rack = load_inventory(None).rack("rack07")
    pollers, _ = pollers_for(rack, rack.model.compute_tray_names(), interval=3600)
    for poller in pollers:
        poller.start()
    collector = RackCollector(pollers)
    while sum(1 for p in pollers for g in p.sample().gpus if g.status == "ok") < 72:
        time.sleep(0.2)
    ours = CollectorRegistry(auto_describe=False)
    ours.register(collector)
    series = sum(len(family.samples) for family in collector.collect())
    result = (*render_cpu_seconds([ours, plain_gauges(series)], repeats), series)
    for poller in pollers:
        poller.stop()
    return result


def bytecode_state():
    """Whether this checkout's modules run from cached bytecode: start-up and first-use figures differ by it."""
    tag = sys.implementation.cache_tag
    cached = all(any((REPO / package / "__pycache__").glob(f"*.{tag}.pyc")) for package in ("opsctl", "probes", "exporters"))
    writes = "off" if sys.flags.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"
    return f"bytecode {'cached' if cached else 'not cached'} ({tag}), writing it {writes}"


def rss_mib(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scrapes", type=int, default=60)
    parser.add_argument("--cpu-only", action="store_true", help="only the in-process CPU-time comparison")
    parser.add_argument("--serve-plain-gauges", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_plain_gauges:
        serve_plain_gauges(args.serve_plain_gauges)
        return
    if args.cpu_only:
        mine, theirs, count = in_process_cpu(args.scrapes)
        print(f"{count} series; CPU ms a fresh render, {args.scrapes} interleaved pairs, median / p90: exporter {mine[0] * 1000:.0f} / {mine[1] * 1000:.0f}, "
              f"plain gauges {theirs[0] * 1000:.0f} / {theirs[1] * 1000:.0f}; ratio {mine[0] / theirs[0]:.3f}x")
        return

    load_before = os.getloadavg()[0]
    # The exporter as deployed (a read of every GPU every 10 s; a scrape gets the render of the
    # last completed reading round) and prometheus_client's plain gauges of as many series (each
    # scrape renders afresh), both running, scraped in interleaved pairs: what a scraper waits for.
    exporter, port = start([sys.executable, "-m", "opsctl", "exporter", "--rack", "rack07", "--listen", "127.0.0.1",
                            "--port", "0", "--interval", "10", "--json"])
    baseline_process = None
    try:
        wait_for_every_gpu(port)
        series = len(series_of(*scrape(port)[1:]))
        baseline_process, baseline_port = start([sys.executable, __file__, "--serve-plain-gauges", str(series)])
        rows = {kind: measure_pairs([port, baseline_port], args.scrapes, headers)
                for kind, headers in (("text", None), ("prometheus", PROMETHEUS_HEADERS))}
        rss, peak = rss_mib(exporter.pid)
    finally:
        for process in (exporter, baseline_process):
            if process is not None:
                process.terminate()
                process.wait()

    def ms(value):
        return f"{value * 1000:7.0f} ms" if value is not None else "      –   "

    print(f"machine: {os.cpu_count()} cores, load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
          f"{bytecode_state()}")
    print(f"opsctl exporter --rack rack07 (reads every 10 s): {series} series, {rows['text'][port][3] / 1e6:.2f} MB a scrape "
          f"(text 0.0.4); exporter RSS {rss:.0f} MiB (peak {peak:.0f} MiB)")
    print(f"{args.scrapes} interleaved pairs of scrapes each (p99 only from 100 samples up)")
    print(f"{'scrape':88} {'median':>10} {'p90':>10} {'p99':>10}   exporter / plain (median)")
    formats = {"text": "text 0.0.4, uncompressed", "prometheus": "as Prometheus asks (Accept prefers OpenMetrics; gzip)"}
    for kind, found in rows.items():
        mine, theirs = found[port], found[baseline_port]
        print(f"{'opsctl exporter, ' + formats[kind]:88} {ms(mine[0])} {ms(mine[1])} {ms(mine[2])}   {mine[0] / theirs[0]:.3f}x")
        print(f"{'prometheus_client plain gauges, ' + formats[kind]:88} {ms(theirs[0])} {ms(theirs[1])} {ms(theirs[2])}")
    mine, theirs, count = in_process_cpu(args.scrapes)
    print(f"CPU time of one fresh render in-process (build + render text, {count} series; reads idle; "
          f"{args.scrapes} interleaved pairs; median, p90):")
    print(f"{'  opsctl exporter collector':72} {mine[0] * 1000:7.0f} ms {mine[1] * 1000:7.0f} ms   "
          f"{mine[0] / theirs[0]:.2f}x, {mine[1] / theirs[1]:.2f}x")
    print(f"{'  prometheus_client plain gauges':72} {theirs[0] * 1000:7.0f} ms {theirs[1] * 1000:7.0f} ms")


def wait_for_every_gpu(port):
    while True:
        _, body, encoding = scrape(port)
        if sum(1 for line in series_of(body, encoding) if line.startswith("opsctl_gpu_up{") and line.endswith(" 1.0")) == 72:
            return
        time.sleep(0.5)


if __name__ == "__main__":
    main()
