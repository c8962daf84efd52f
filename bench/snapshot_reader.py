"""Reading and checking one rack's link-health snapshot: the two reads of
opsctl/localize/snapshot.py (the strict parse then the schema's conversion, and the fast one that
decodes straight into the schema and rules out repeated keys by count, opsctl/unique_json.py) and
the reader's column pass, per rack, for a GB200 NVL72 with both ends of its 1,296 links read (2,592
link entries, 72 GPUs) as a Blackwell tray reports them (NVLink 5 counters, no data-link ones).

    .venv/bin/python bench/snapshot_reader.py [--repeat 200]

Prints the median and the fastest time per rack of: json.loads of the rack's JSON; the strict read
(json.loads refusing repeated keys, the schema's conversion); the fast read; parse_snapshot (ids
resolved, arrays built).
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opsctl.localize.parts import part_index_for  # noqa: E402
from opsctl.localize.snapshot import checked_snapshot, parse_snapshot  # noqa: E402
from opsctl.localize.snapshot_schema import SnapshotFile  # noqa: E402
from opsctl.rack_models import MODELS  # noqa: E402
from opsctl.unique_json import decode_unique  # noqa: E402
from opsctl.yaml_input import unique_keys  # noqa: E402


def rack_snapshot(rack: str = "rack07") -> dict:
    """Every link read at both ends, symbol-error noise and a BER on each, one link far out of spec."""
    index = part_index_for(MODELS["gb200-nvl72"])
    links = []
    for n, link_id in enumerate(index.link_ids):
        gpu, port = next(key for key, value in index.link_by_gpu_port.items() if value == n)
        counters = {"symbol_errors": n % 5, "link_down_events": 0, "rcv_errors": 0, "local_link_integrity_errors": 0,
                    "recovery_events": 0, "effective_ber": 1e-15 * (1 + n % 7)}
        links.append({"gpu": f"{rack}/{gpu}", "port": port, "side": "gpu", "state": "up", **counters})
        links.append({"side": "switch", "link": f"{rack}/{link_id}", "state": "up", **counters})
    links[0].update(symbol_errors=90000, local_link_integrity_errors=400)
    gpus = [{"id": f"{rack}/{gpu}", "reachable": True, "xids": []} for gpu in index.gpu_ids]
    return {"format": "opsctl-snapshot/1", "rack": rack, "model": "gb200-nvl72", "window_seconds": 60,
            "links": links, "gpus": gpus, "trays": [{"tray": "ct01", "status": "complete"}]}


def timed(work, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    document = rack_snapshot()
    text = json.dumps(document)
    index = part_index_for(MODELS["gb200-nvl72"])
    snapshot = checked_snapshot(document, "bench")
    data = text.encode()
    assert decode_unique(data, SnapshotFile) == snapshot  # the fast read vouches for this file
    rows = [("json.loads", lambda: json.loads(text)),
            ("strict read + schema conversion", lambda: checked_snapshot(json.loads(text, object_pairs_hook=unique_keys), "bench")),
            ("fast read (schema included)", lambda: decode_unique(data, SnapshotFile)),
            ("parse_snapshot", lambda: parse_snapshot(snapshot, "bench", index))]
    print(f"one GB200 NVL72 snapshot: {len(document['links'])} link entries, {len(text) / 1e6:.2f} MB of JSON; "
          f"{args.repeat} runs")
    for name, work in rows:
        median, best = timed(work, args.repeat)
        print(f"  {name:<32} median {median * 1e3:6.2f} ms   fastest {best * 1e3:6.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
