"""What a flood of connections costs `opsctl exporter --rack rack07` (72 GPUs, about 3.3 MB a
scrape): 200 half-sent requests closed at once, then 200 scrapes at once, and the scrape after
each, with the exporter's resident memory before and after. The exporter renders once per new
reading and shares the bytes (exporters/server.py); docs/benchmarks.md records the figures.

    .venv/bin/python bench/exporter_bounded.py [--connections 200]
"""

import argparse
import os
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exporter_scrape import rss_mib, scrape, start, wait_for_every_gpu  # noqa: E402


def scrape_until_answered(port):
    """(seconds until a scrape was answered, 503s before it): a busy answer is retried at once."""
    import urllib.error

    began, busy = time.perf_counter(), 0
    while True:
        try:
            scrape(port)
            return time.perf_counter() - began, busy
        except urllib.error.HTTPError as error:
            if error.code != 503:
                raise
            busy += 1
            time.sleep(0.01)


def half_sent_then_closed(port, count):
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never the blank line that ends the request
        sockets.append(sock)
    for sock in sockets:
        sock.close()


def concurrent_scrapes(port, count):
    """(seconds until all ended, answered 200, refused or failed)."""
    outcomes = []

    def one():
        try:
            scrape(port)
            outcomes.append(True)
        except OSError:
            outcomes.append(False)

    threads = [threading.Thread(target=one) for _ in range(count)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - began, outcomes.count(True), outcomes.count(False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=200)
    args = parser.parse_args()
    exporter, port = start([sys.executable, "-m", "opsctl", "exporter", "--rack", "rack07", "--listen", "127.0.0.1",
                            "--port", "0", "--json"])
    try:
        wait_for_every_gpu(port)
        took, body, _ = scrape(port)
        rss, _ = rss_mib(exporter.pid)
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        print(f"one scrape of the round's cached render (a cache hit, not a render): {len(body) / 1e6:.2f} MB in "
              f"{took * 1000:.0f} ms; exporter RSS {rss:.0f} MiB")
        half_sent_then_closed(port, args.connections)
        took, busy = scrape_until_answered(port)
        rss, peak = rss_mib(exporter.pid)
        print(f"{args.connections} half-sent requests closed at once: next scrape answered after {took * 1000:.0f} ms "
              f"({busy} busy answers first); RSS {rss:.0f} MiB (peak {peak:.0f} MiB)")
        took, answered, refused = concurrent_scrapes(port, args.connections)
        rss, peak = rss_mib(exporter.pid)
        print(f"{args.connections} scrapes at once: all ended in {took:.1f} s, {answered} answered, {refused} refused "
              f"(busy, over the connection cap); RSS {rss:.0f} MiB (peak {peak:.0f} MiB)")
        took, busy = scrape_until_answered(port)
        print(f"the scrape after: answered after {took * 1000:.0f} ms ({busy} busy answers first)")
    finally:
        exporter.terminate()
        exporter.wait()


if __name__ == "__main__":
    main()
