"""Write the default cabling maps shipped in opsctl/data/cabling/.

These maps are a MODEL of the physical NVLink path, documented in the README ("Topology"),
not a vendor drawing. An operator with the vendor's map writes a CSV with the same columns
and points the inventory at it (`opsctl_cabling_map`). Run from the repository root:

    python tools/make_cabling_maps.py
"""

import csv
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "opsctl" / "data" / "cabling"

NVL72_UPPER_TRAYS = range(1, 11)  # ct01–ct10 sit above the switch trays, ct11–ct18 below


def nvl72_rows():
    for tray in range(1, 19):
        upper = tray in NVL72_UPPER_TRAYS
        for local in range(4):
            rack_gpu = 4 * (tray - 1) + local
            for port in range(18):
                low_ports = port < 9  # ports 0–8 leave by one connector, 9–17 by the other
                pair = local // 2  # GPUs 0,1 share connectors j0/j1; GPUs 2,3 share j2/j3
                tray_connector = f"j{2 * pair + (0 if low_ports else 1)}"
                cartridge = f"cart{(1 if upper else 3) + (0 if low_ports else 1)}"
                chip = port  # the cabling model (docs/topology.md): port p of every GPU goes to chip p
                chip_local = chip % 2
                switch_connector = f"j{2 * chip_local + (0 if upper else 1)}"
                yield {
                    "tray": f"ct{tray:02d}",
                    "gpu": local,
                    "port": port,
                    "switch_chip": chip,
                    "switch_port": rack_gpu,
                    "tray_connector": tray_connector,
                    "cartridge": cartridge,
                    "switch_connector": switch_connector,
                    "cables": 4,  # NVLink 5: 2 lanes × 2 directions, one twinax pair each
                }


HGX_PORTS_PER_SWITCH = (5, 4, 4, 5)  # an HGX H100/H200 GPU's 18 links spread over 4 NVSwitches


def hgx_rows():
    for gpu in range(8):
        port = 0
        for chip, count in enumerate(HGX_PORTS_PER_SWITCH):
            for k in range(count):
                yield {
                    "tray": "node",
                    "gpu": gpu,
                    "port": port,
                    "switch_chip": chip,
                    "switch_port": gpu * count + k,
                    "board": "baseboard",
                }
                port += 1


def write(name, rows):
    rows = list(rows)
    with open(OUT / name, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {OUT / name}: {len(rows)} links")


if __name__ == "__main__":
    write("gb200-nvl72.csv", nvl72_rows())
    write("hgx-8gpu.csv", hgx_rows())
