"""What reading a tray's kernel history costs the probe (probes/kernel_history.py): parsing a
synthetic kernel log of --lines lines (one in --xid-every an NVRM Xid line of one of 8 GPUs, two
driver loads, one GPU reset line) into each GPU's recorded XIDs, CPU time, best of --runs; and, where this machine
lets it, the real read (journalctl -k -b, else dmesg) timed once.

    .venv/bin/python bench/kernel_history.py --lines 20000 200000
"""

from __future__ import annotations

import argparse
import time

from probes.kernel_history import DRIVER_LOADED, read_kernel_history, recorded_xids

PCI = {index: f"00000000:{0x18 + 0x11 * index:02X}:00.0" for index in range(8)}
UUID = {index: f"GPU-{index:08x}-0000-0000-0000-000000000000" for index in range(8)}


def synthetic_log(lines: int, xid_every: int) -> list[str]:
    log = []
    for n in range(lines):
        if n in (lines // 3, 2 * lines // 3):
            log.append(f"[{n}.0] {DRIVER_LOADED} x86_64 Kernel Module  570.133.20")
        elif n == 5 * lines // 6:
            log.append(f"GPU reset executed: {UUID[3]}, success: true")
        elif n % xid_every == 0:
            bus = 0x18 + 0x11 * (n % 8)
            log.append(f"[{n}.0] NVRM: Xid (PCI:0000:{bus:02x}:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
        else:
            log.append(f"[{n}.0] eth0: link up, 100Gbps, full duplex, something else the kernel said")
    return log


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[20000, 200000])
    parser.add_argument("--xid-every", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for lines in args.lines:
        log = synthetic_log(lines, args.xid_every)
        best = float("inf")
        for _ in range(args.runs):
            started = time.process_time()
            found = recorded_xids(log, PCI, UUID)
            best = min(best, time.process_time() - started)
        print(f"{lines:>8,} lines: {best * 1000:7.1f} ms CPU to find {sum(map(len, found.values()))} recorded XIDs")
    started = time.perf_counter()
    real, why = read_kernel_history(time.time())
    took = time.perf_counter() - started
    print(f"this machine's kernel log: {len(real):,} lines read in {took * 1000:.0f} ms" if why is None
          else f"this machine's kernel log could not be read ({why}) in {took * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
