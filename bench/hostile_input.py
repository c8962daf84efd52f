"""Hostile input through every command: how many are refused cleanly, how many accepted
correctly, and which are BAD (a crash, a traceback, a hang, runaway memory, a leaked secret,
a refusal of more than one line, or an exit code the case does not allow).

Each case is one `opsctl …` subprocess with a time limit and an address-space limit
(resource.setrlimit), in a throw-away state folder. Flags get NaN, infinities, huge and
negative numbers, 400-digit integers, years 0026 and 9999, malformed ledger URLs with
passwords; each input format (inventory, fault scenario, criteria, snapshot, ledger import in
JSON and CSV, TCO scenario) gets every field of a valid file replaced in turn by a list, a
mapping, NaN, 10**400, a 200,000-character string… plus the cases of issue 15 as written. Issue
28's files: a FIFO, a socket, /dev/zero, /dev/urandom and links to them (and to /dev/null) as
every input and every output, a folder where a file goes, a probe that prints without end, and
every secret form of a --db URL; a FIFO or a device that does not survive a case is BAD.

    .venv/bin/python bench/hostile_input.py [--jobs 2] [--only WORD] [--skip-slow] [--list]

Exit 0 when nothing is BAD.
"""

import argparse
import copy
import json
import os
import resource
import socket
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# -P: the case's folder is not on opsctl's own sys.path (a case may put a fake `probes` there for its trays).
OPSCTL = [sys.executable, "-P", "-c", "import sys; from opsctl.cli import main; sys.argv[0] = 'opsctl'; main()"]
MEMORY_LIMIT = 6 * 2**30  # address space per case: torch's import in a simulated probe fits, a runaway does not
SECRET = "S3cr3tPw"


@dataclass
class Case:
    name: str
    argv: list  # "{dir}" is the case's own folder
    files: dict = field(default_factory=dict)  # name -> text or bytes, written into {dir}
    ok: tuple = ()  # exit codes besides a clean 2 that are a correct answer
    timeout: float = 30.0
    area: str = "input"  # input | hardware | tco: which part of issue 15 it belongs to
    secret: str | None = None  # must appear in no output
    slow: bool = False
    fifos: tuple = ()  # FIFOs made in {dir} before the case; each must still be one after
    links: dict = field(default_factory=dict)  # name -> what it links to ("{dir}" is the case's folder); each must survive


# --- values --------------------------------------------------------------------------------
HUGE_INT = "1" + "0" * 400
NUMBER_TEXTS = ["nan", "inf", "-Infinity", "1e308", "-1", "0", HUGE_INT, "0x10"]
TIME_TEXTS = ["0026-11-30", "0999-01-01", "0001-01-01T00:00+01:00", "9999-12-31", "2026-13-45", "1" * 5000]
# What replaces a field of a valid file (YAML values; JSON gets the same through json.dumps).
FIELD_VALUES = {
    "list": ["x"],
    "mapping": {"a": 1},
    "null": None,
    "bool": True,
    "text": "x",
    "nan": float("nan"),
    "inf": float("inf"),
    "-inf": float("-inf"),
    "1e308": 1e308,
    "negative": -1,
    "zero": 0,
    "10**400": 10**400,
    "long text": "x" * 200_000,
    "nested": [[[[[["x"]]]]]],
}


def deep(levels):
    return "[" * levels + "]" * levels


BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8))


# --- valid documents each format starts from --------------------------------------------------
def sim_inventory(rack="rackx", model="gb200-nvl72", scenario=None, extra_vars=None, hosts=None):
    rack_vars = {"opsctl_model": model, "opsctl_backend": "sim", "opsctl_transport": "local"}
    if scenario:
        rack_vars["opsctl_scenario"] = scenario
    rack_vars.update(extra_vars or {})
    if hosts is None:
        hosts = {f"{rack}-ct[01:18]": None, f"{rack}-st[1:9]": None} if model == "gb200-nvl72" else {f"{rack}-node": None}
    return {"all": {"children": {rack: {"vars": rack_vars, "hosts": hosts}}}}


# A rack no probe can reach (port 1 refuses at once): a valid criteria file costs a second.
UNREACHABLE_INVENTORY = {"all": {"children": {"hgxu": {
    "vars": {"opsctl_model": "hgx-h100", "opsctl_transport": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1},
    "hosts": {"hgxu-node": None}}}}}

# A GB200 rack's (rackx): NVLink 5 counters, as a Blackwell rack refuses the data-link ones.
SCENARIO = {"scenario": "hostile", "seed": 7, "noise": {"ber": 1e-15}, "faults": [
    {"kind": "link_errors", "link": "ct05/gpu1/nvl07", "symbol_per_s": 12, "rcv_errors_per_s": 6, "ber": 3e-11},
    {"kind": "link_flap", "link": "ct07/gpu0/nvl13", "start_s": 2, "period_s": 30, "down_s": 2},
    {"kind": "xid", "gpu": "ct17/gpu1", "xid": 48, "at_s": 1, "repeat_s": 5, "count": 3},
    {"kind": "slow_gpu", "gpu": "ct15/gpu0", "factor": 0.86},
]}

CRITERIA = {"criteria": "hostile", "version": "1", "probes": ["gemm", "counters"], "duration_s": 5,
            "run_timeout_s": 30, "warnings_fail": False, "rack_relative": {"min_gpus": 4, "rules": [
                {"metric": "gemm_bf16_tflops", "worse": "lower", "pct": 5, "robust_sigmas": 6, "verdict": "fail"}]}}

SNAPSHOT = {"format": "opsctl-snapshot/1", "rack": "rack07", "model": "gb200-nvl72", "window_seconds": 60,
            "links": [{"gpu": "rack07/ct01/gpu0", "port": 5, "state": "up", "symbol_errors": 0, "rcv_errors": 0},
                      {"gpu": "rack07/ct05/gpu1", "port": 7, "state": "up", "symbol_errors": 9000, "rcv_errors": 40}],
            "gpus": [{"id": "rack07/ct01/gpu0", "reachable": True, "xids": [{"xid": 149, "time": 1767225602.31}]}],
            "trays": [{"tray": "ct01", "status": "complete"}]}

LEDGER_EXPORT = {"format": "opsctl-ledger/1",
                 "racks": [{"rack": "rack07", "model": "gb200-nvl72", "gpus": 72, "handover_at": "2026-01-05T00:00:00Z"}],
                 "incidents": [{"occurred_at": "2026-02-01T10:00:00Z", "part": "rack07/ct12/j2", "note": "bent pins"}],
                 "repairs": [{"part": "rack07/ct12/j2", "action": "reseat", "opened_by": "ops", "opened_at": "2026-02-01T11:00:00Z",
                              "closed_at": "2026-02-01T13:00:00Z", "rma_ids": ["A1"]}]}


def leaf_paths(document, prefix=()):
    """Every path to a value in a document (keys of mappings, indices of lists)."""
    items = document.items() if isinstance(document, dict) else enumerate(document) if isinstance(document, list) else ()
    for key, value in items:
        path = (*prefix, key)
        yield path
        if isinstance(value, (dict, list)):
            yield from leaf_paths(value, path)


def replaced(document, path, value):
    changed = copy.deepcopy(document)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


def as_yaml(document):
    return yaml.safe_dump(document, sort_keys=False, width=10**9)


def as_json(document):
    return json.dumps(document)  # NaN and Infinity as Python writes them: a hostile JSON file


def mutations(document, paths=None):
    """(label, mutated document): each field becomes a list and NaN, and two more of the
    hostile values in turn (so that every value meets many fields, in a few hundred cases)."""
    others = [label for label in FIELD_VALUES if label not in ("list", "nan")]
    for number, path in enumerate(paths or list(leaf_paths(document))):
        for label in ("list", "nan", others[number % len(others)], others[(number + 5) % len(others)]):
            yield f"{'.'.join(map(str, path))}={label}", replaced(document, path, FIELD_VALUES[label])


# --- the cases -----------------------------------------------------------------------------
def flag_cases():
    seconds_flags = [
        ("snapshot --window", ["snapshot", "rack07", "-o", "{dir}/s.json", "--window"]),
        ("snapshot --connect-timeout", ["snapshot", "rack07", "-o", "{dir}/s.json", "--connect-timeout"]),
        ("triage --window", ["triage", "rack07", "--no-ledger", "--window"]),
        ("burnin --duration", ["burnin", "rack07", "--no-ledger", "--out", "{dir}/run", "--duration"]),
        ("burnin --run-timeout", ["burnin", "rack07", "--no-ledger", "--out", "{dir}/run", "--run-timeout"]),
        ("burnin --connect-timeout", ["burnin", "rack07", "--no-ledger", "--out", "{dir}/run", "--connect-timeout"]),
        ("accept --duration", ["accept", "rack07", "--no-ledger", "--out", "{dir}/run", "--duration"]),
        ("exporter --interval", ["exporter", "--rack", "rack07", "--port", "0", "--interval"]),
        ("exporter --stale-after", ["exporter", "--rack", "rack07", "--port", "0", "--stale-after"]),
        ("fleet plan --duration", ["fleet", "plan", "{dir}/fleet", "--racks", "rack07", "--duration"]),
        ("fleet plan --run-timeout", ["fleet", "plan", "{dir}/fleet", "--racks", "rack07", "--run-timeout"]),
        ("ledger stats --confidence", ["ledger", "stats", "--db", "sqlite:///{dir}/l.sqlite", "--confidence"]),
    ]
    for label, argv in seconds_flags:
        for value in NUMBER_TEXTS:
            yield Case(f"{label} {value[:12]!r}", [*argv, value])
    for label, argv in [("snapshot --concurrency", ["snapshot", "rack07", "-o", "{dir}/s.json", "--concurrency"]),
                        ("burnin --concurrency", ["burnin", "rack07", "--no-ledger", "--out", "{dir}/run", "--concurrency"]),
                        ("ledger stats --infant-weeks", ["ledger", "stats", "--db", "sqlite:///{dir}/l.sqlite", "--infant-weeks"]),
                        ("exporter --port", ["exporter", "--rack", "rack07", "--port"])]:
        for value in ["nan", "-1", "0" if "port" not in label else "70000", HUGE_INT, "1.5", "abc"]:
            yield Case(f"{label} {value[:12]!r}", [*argv, value])
    times = [("ledger incident --at", ["ledger", "incident", "rack07/ct03", "--db", "sqlite:///{dir}/l.sqlite", "--at"]),
             ("repair open --at", ["repair", "open", "rack07/ct03/gpu1", "--action", "reset_gpu", "--db",
                                   "sqlite:///{dir}/l.sqlite", "--at"]),
             ("ledger rack --handover", ["ledger", "rack", "rack07", "--db", "sqlite:///{dir}/l.sqlite", "--handover"]),
             ("ledger stats --since", ["ledger", "stats", "--db", "sqlite:///{dir}/l.sqlite", "--since"]),
             ("repair close --at", ["repair", "close", "rack07/ct03/gpu1", "--db", "sqlite:///{dir}/l.sqlite", "--at"])]
    for label, argv in times:
        for value in TIME_TEXTS:
            yield Case(f"{label} {value[:24]!r}", [*argv, value])
    urls = ["postgresql://[::1", f"postgresql://u:{SECRET}@h:notaport/db", f"postgresql://u@127.0.0.1:1/db?password={SECRET}",
            f"host=127.0.0.1 port=1 password={SECRET}", f"postgresql://u:{SECRET}@127.0.0.1:1/db",
            f"postgresql://u:p@ss{SECRET}@127.0.0.1:1/db", "postgresql://%zz@/", "mysql://x/y", "", "sqlite://",
            "/proc/x/ledger.sqlite", "sqlite:////proc/ledger.sqlite", f"postgresql://u@127.0.0.1:1/db?sslmode=bogus&password={SECRET}"]
    for url in urls:
        for argv in (["ledger", "stats", "--db", url], ["ledger", "incident", "rack07/ct03", "--db", url]):
            yield Case(f"{' '.join(argv[:2])} --db {url[:40]!r}", argv, ok=(3,), secret=SECRET)
    # A burn-in that cannot record gives the hint to record it later: with the --db it was given, no password.
    yield Case("burnin hint keeps --db, hides its password",
               ["-i", "{dir}/inv.yaml", "burnin", "hgxu", "--out", "{dir}/run", "--db", f"postgresql://u:{SECRET}@127.0.0.1:1/db"],
               {"inv.yaml": as_yaml(UNREACHABLE_INVENTORY)}, ok=(3,), secret=SECRET, timeout=60)


def file_cases():
    # Inventory: `inventory show` reads and checks it.
    base = sim_inventory()
    for label, document in mutations(base):
        yield Case(f"inventory {label}", ["-i", "{dir}/inv.yaml", "inventory", "list"], {"inv.yaml": as_yaml(document)}, ok=(0,))
    for pattern in ["r[0:999][0:999][0:999]-ct01", "rack99-ct[1:100000000]", f"rack99-ct[1:{'9' * 5000}]",
                    "rack99-ct[5:1]", "rack99-ct[01:18]-[1:9]", "../../etc-ct01", "x" * 100_000 + "-ct01"]:
        document = sim_inventory("rack99", hosts={pattern: None})
        yield Case(f"inventory host {pattern[:40]!r}", ["-i", "{dir}/inv.yaml", "inventory", "list"], {"inv.yaml": as_yaml(document)})
    for label, text in [("nested 100,000 deep", "all: " + deep(100_000)), ("billion laughs", BILLION_LAUGHS),
                        ("not UTF-8", b"all:\n  \xff\xfe\n"), ("empty", ""), ("a list", "- a\n- b\n"),
                        ("recursive alias", "all: &a\n  children: *a\n"), ("tab", "all:\n\tchildren: {}\n")]:
        yield Case(f"inventory {label}", ["-i", "{dir}/inv.yaml", "inventory", "list"], {"inv.yaml": text}, ok=(0,))

    # Fault scenario: `sim faults` compiles it onto the rack.
    for label, document in mutations(SCENARIO):
        yield Case(f"scenario {label}", ["-i", "{dir}/inv.yaml", "sim", "faults", "rackx"],
                   {"inv.yaml": as_yaml(sim_inventory(scenario="scenario.yaml")), "scenario.yaml": as_yaml(document)}, ok=(0,))
    floods = [{"kind": "xid", "gpu": "all", "xid": 48, "repeat_s": 1e-6},
              {"kind": "xid", "gpu": "ct01/gpu0", "xid": 48, "repeat_s": 1, "count": 10**9},
              {"kind": "link_flap", "link": "ct01/gpu0/nvl01", "period_s": 1e-6, "down_s": 1e-7},
              {"kind": "xid", "gpu": "ct01/gpu0", "xid": 48, "repeat_s": 0}]
    for fault in floods:
        document = {"scenario": "flood", "faults": [fault]}
        yield Case(f"scenario flood {json.dumps(fault)[:60]}", ["-i", "{dir}/inv.yaml", "sim", "faults", "rackx"],
                   {"inv.yaml": as_yaml(sim_inventory(scenario="scenario.yaml")), "scenario.yaml": as_yaml(document)})
    yield Case("scenario 100,000 faults", ["-i", "{dir}/inv.yaml", "sim", "faults", "rackx"],
               {"inv.yaml": as_yaml(sim_inventory(scenario="scenario.yaml")),
                "scenario.yaml": json.dumps({"faults": [{"kind": "slow_gpu", "gpu": "ct01/gpu0", "factor": 0.5}] * 100_000})})
    yield Case("sim spec -o /proc/x", ["sim", "spec", "rack07", "-o", "/proc/x"])
    yield Case("sim spec -o a missing folder", ["sim", "spec", "rack07", "-o", "{dir}/no/such/spec.json"])
    yield Case("sim spec -o a folder", ["sim", "spec", "rack07", "-o", "{dir}"])

    # Criteria: `accept` on a rack no probe can reach — a valid file costs a second and is exit 3.
    for label, document in mutations(CRITERIA):
        yield Case(f"criteria {label}", ["-i", "{dir}/inv.yaml", "accept", "hgxu", "--criteria", "{dir}/criteria.yaml",
                                         "--no-ledger", "--out", "{dir}/run"],
                   {"inv.yaml": as_yaml(UNREACHABLE_INVENTORY), "criteria.yaml": as_yaml(document)}, ok=(3,), timeout=90)

    # Snapshot: `localize` reads and judges it.
    for label, document in mutations(SNAPSHOT):
        yield Case(f"snapshot {label}", ["localize", "{dir}/snap.json", "--json"], {"snap.json": as_json(document)}, ok=(0, 1, 3))
    for label, text in [("nested 100,000 deep", deep(100_000)), ("a 5,000-digit counter", as_json(SNAPSHOT).replace(
            '"symbol_errors": 9000', '"symbol_errors": ' + "9" * 5000)),
                        ("NaN counter", as_json(SNAPSHOT).replace('"symbol_errors": 9000', '"symbol_errors": NaN')),
                        ("truncated", as_json(SNAPSHOT)[:200]), ("empty list", "[]"), ("binary", b"\x00\xff" * 100)]:
        yield Case(f"snapshot {label}", ["localize", "{dir}/snap.json", "--json"], {"snap.json": text}, ok=(0, 1, 3))

    # Ledger import, JSON.
    for label, document in mutations(LEDGER_EXPORT):
        yield Case(f"ledger import {label}", ["ledger", "import", "{dir}/export.json", "--db", "sqlite:///{dir}/l.sqlite"],
                   {"export.json": as_json(document)}, ok=(0,))
    yield Case("ledger import nested 100,000 deep", ["ledger", "import", "{dir}/export.json", "--db", "sqlite:///{dir}/l.sqlite"],
               {"export.json": deep(100_000)})
    # Ledger import, CSV.
    header = "rack,model,gpus,handover_at\n"
    for label, text in [("a 200,000-character field", header + "rack07,gb200-nvl72,72," + "x" * 200_000 + "\n"),
                        ("unbalanced quote", header + 'rack07,"gb200-nvl72,72,2026-01-01\nrack08,gb200-nvl72,72,2026-01-01\n'),
                        ("NUL byte", header + "rack07,gb200\x00,72,2026-01-01\n"),
                        ("handover 0001-01-01", header + "rack07,gb200-nvl72,72,0001-01-01\n"),
                        ("gpus 10**400", header + f"rack07,gb200-nvl72,{HUGE_INT},2026-01-01\n"),
                        ("gpus ²", header + "rack07,gb200-nvl72,²,2026-01-01\n"),
                        ("a 5,000-digit gpus", header + f"rack07,gb200-nvl72,{'9' * 5000},2026-01-01\n"),
                        ("too many cells", header + "rack07,gb200-nvl72,72,2026-01-01,x\n")]:
        yield Case(f"ledger import csv {label}", ["ledger", "import", "{dir}/racks.csv", "--db", "sqlite:///{dir}/l.sqlite"],
                   {"racks.csv": text}, ok=(0,))
    yield Case("ledger import handover_at 0001-01-01", ["ledger", "import", "{dir}/export.json", "--db", "sqlite:///{dir}/l.sqlite"],
               {"export.json": as_json(replaced(LEDGER_EXPORT, ("racks", 0, "handover_at"), "0001-01-01"))})


def tco_cases():
    scenario = yaml.safe_load((ROOT / "scenarios" / "llama3-70b-h100-bf16-64gpu-neocloud.yaml").read_text())
    for label, document in mutations(scenario, [p for p in leaf_paths(scenario) if p[0] in ("cluster", "workload", "reliability")]):
        yield Case(f"tco scenario {label}", ["tco", "run", "{dir}/s.yaml"], {"s.yaml": as_yaml(document)}, ok=(0,), area="tco")
    spares = replaced(scenario, ("cluster", "spare_servers"), 1e30) if "cluster" in scenario else scenario
    yield Case("tco spare_servers 1e30", ["tco", "run", "{dir}/s.yaml"], {"s.yaml": as_yaml(spares)}, area="tco")
    yield Case("tco gpus 10**400", ["tco", "run", "{dir}/s.yaml"],
               {"s.yaml": as_yaml(replaced(scenario, ("cluster", "gpus"), 10**400))}, area="tco")
    yield Case("tco sweep 1e9 steps", ["tco", "sweep", str(ROOT / "scenarios" / "llama3-70b-h100-bf16-64gpu-neocloud.yaml"),
                                       "--vary", "cluster.gpu_hour_cost=1:2:1000000000"], area="tco")
    yield Case("tco sweep --out /proc/x.csv", ["tco", "sweep", str(ROOT / "scenarios" / "llama3-70b-h100-bf16-64gpu-neocloud.yaml"),
                                               "--vary", "cluster.gpu_hour_cost=1:2:3", "--out", "/proc/x.csv"], area="tco")


def hardware_cases():
    hang = {"scenario": "hang", "faults": [{"kind": "gpu_hang", "gpu": "gpu0", "nvml": True}, {"kind": "gpu_lost", "gpu": "gpu1"}]}
    files = {"inv.yaml": as_yaml(sim_inventory("hgxh", "hgx-h100", "scenario.yaml")), "scenario.yaml": as_yaml(hang)}
    # A hung GPU is named, its siblings judged: FAIL (1), within the probe's deadline.
    yield Case("burnin, one GPU hung (nvml) and one lost", ["-i", "{dir}/inv.yaml", "burnin", "hgxh", "--no-ledger",
                                                           "--out", "{dir}/run", "--duration", "5"],
               files, ok=(1,), timeout=240, area="hardware", slow=True)
    noisy = {"scenario": "noise", "noise": {"crc_per_s": 1e300}}
    yield Case("triage, noise 1e300 CRC/s is not healthy", ["-i", "{dir}/inv.yaml", "triage", "hgxn", "--window", "2", "--no-ledger"],
               {"inv.yaml": as_yaml(sim_inventory("hgxn", "hgx-h100", "scenario.yaml")), "scenario.yaml": as_yaml(noisy)},
               ok=(1, 3), timeout=120, area="hardware", slow=True)
    yield Case("burnin --duration 1e-9 is no pass", ["burnin", "hgx01", "--no-ledger", "--out", "{dir}/run", "--duration", "1e-9"],
               ok=(3,), timeout=180, area="hardware", slow=True)
    yield Case("localize, window 1e308", ["localize", "{dir}/snap.json", "--json"],
               {"snap.json": as_json({**SNAPSHOT, "window_seconds": 1e308})}, ok=(2, 3), area="hardware")
    yield Case("localize, a snapshot with no links", ["localize", "{dir}/snap.json", "--json"],
               {"snap.json": as_json({**SNAPSHOT, "links": [], "gpus": []})}, ok=(3,), area="hardware")
    yield Case("exporter rules -o /proc/x", ["exporter", "rules", "-o", "/proc/x"], area="hardware")
    yield Case("ledger stats --plot /proc/x.png", ["ledger", "stats", "--db", "sqlite:///{dir}/l.sqlite", "--plot", "/proc/x.png"],
               area="hardware")


# --- issue 28: what a path names ------------------------------------------------------------
# Each name, made in the case's folder, and what the refusal says it is.
HOSTILE_PATHS = {"fifo": "a FIFO", "zero": "a link to /dev/zero", "urandom": "a link to /dev/urandom",
                 "null": "a link to /dev/null", "to-fifo": "a link to a FIFO", "sock": "a socket"}
HOSTILE_LINKS = {"zero": "/dev/zero", "urandom": "/dev/urandom", "null": "/dev/null", "to-fifo": "{dir}/fifo"}
ENDLESS_PROBE = "import sys\nchunk = b'x' * 65536\nwhile True:\n    sys.stdout.buffer.write(chunk)\n"


def hostile_file_cases():
    """Every input and output given a FIFO, a socket or a device (issue 28): refused in one line,
    at once, the FIFO and the device as they were."""
    scenario = str(ROOT / "scenarios" / "llama3-70b-h100-bf16-64gpu-neocloud.yaml")
    inputs = {
        "inventory": ["-i", "{path}", "inventory", "list"],
        "tco scenario": ["tco", "run", "{path}"],
        "tco --mttr-config": ["tco", "run", scenario, "--mttr-config", "{path}"],
        "criteria": ["accept", "hgx01", "--no-ledger", "--criteria", "{path}", "--out", "{dir}/run"],
        "snapshot": ["localize", "{path}"],
        "ledger import": ["ledger", "import", "{path}", "--db", "sqlite:///{dir}/l.sqlite"],
        "ledger record-triage": ["ledger", "record-triage", "{path}", "--db", "sqlite:///{dir}/l.sqlite"],
        "scenario (inventory)": ["-i", "{dir}/inv.yaml", "sim", "faults", "rackx"],
        "cabling map (inventory)": ["-i", "{dir}/inv.yaml", "topology", "show", "rackx"],
    }
    outputs = {
        "sim spec -o": ["sim", "spec", "hgx01", "-o", "{path}"],
        "snapshot -o": ["snapshot", "hgx01", "-o", "{path}"],
        "triage --save": ["triage", "hgx01", "--no-ledger", "--save", "{path}"],
        "ledger stats --plot": ["ledger", "stats", "--db", "sqlite:///{dir}/l.sqlite", "--plot", "{path}"],
        "ledger export -o": ["ledger", "export", "--db", "sqlite:///{dir}/l.sqlite", "-o", "{path}"],
        "burnin --out": ["burnin", "hgx01", "--no-ledger", "--out", "{path}"],
        "exporter rules -o": ["exporter", "rules", "-o", "{path}"],
        "tco sensitivity --out": ["tco", "sensitivity", scenario, "--out", "{path}"],
        "ledger --db sqlite:///": ["ledger", "incident", "rack07/ct03", "--db", "sqlite:///{path}"],
    }
    for area, commands in (("input", inputs), ("output", outputs)):
        for label, argv in commands.items():
            for name, what in HOSTILE_PATHS.items():
                if area == "input" and name == "null":
                    continue  # /dev/null reads as an empty file would: the zero and urandom links stand for devices
                variable = "opsctl_scenario" if label.startswith("scenario") else "opsctl_cabling_map"
                files = {"inv.yaml": as_yaml(sim_inventory(extra_vars={variable: f"{{dir}}/{name}"}))} if "inventory)" in label else {}
                yield Case(f"{area} {label} is {what}", [a.replace("{path}", f"{{dir}}/{name}") for a in argv], files,
                           timeout=15, area=f"{area}s", fifos=("fifo",), links=HOSTILE_LINKS)
    for label, argv in (("sim spec -o", outputs["sim spec -o"]), ("ledger export -o", outputs["ledger export -o"])):
        yield Case(f"output {label} is a folder", [a.replace("{path}", "{dir}/folder") for a in argv], {"folder/keep": ""},
                   area="outputs")
    # A probe printing without end (a fake `probes` in the case's folder, where `python -m probes`
    # finds it first): exit 3 naming the tray and the cap, opsctl's memory bounded.
    yield Case("a tray's probe prints without end", ["snapshot", "hgx01", "-o", "{dir}/s.json"],
               {"probes/__init__.py": "", "probes/__main__.py": ENDLESS_PROBE}, ok=(3,), timeout=120, area="hardware")
    for url in [f"postgresql://u@127.0.0.1:1/db?sslpassword={SECRET}", f"host=127.0.0.1 port=1 sslpassword={SECRET}",
                f"postgresql://u@127.0.0.1:1/db?pass%77ord={SECRET}", f"postgresql://u:pa?ss{SECRET}@127.0.0.1:1/db",
                f"postgresql://u@127.0.0.1:1/db?sslmode=require&sslpassword={SECRET}&password={SECRET}"]:
        yield Case(f"ledger stats --db {url[:48]!r}", ["ledger", "stats", "--db", url], ok=(3,), secret=SECRET)
    yield Case("triage hint keeps --db, hides its sslpassword",
               ["triage", "hgx01", "--window", "0.5", "--db", f"postgresql://u@127.0.0.1:1/db?sslpassword={SECRET}"],
               ok=(0, 1), secret=SECRET, timeout=60)


def all_cases():
    return [*flag_cases(), *file_cases(), *tco_cases(), *hardware_cases(), *hostile_file_cases()]


# --- running and judging -------------------------------------------------------------------
def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    os.setsid()  # the case and every probe it starts are one process group, killed together


def run_case(case, root):
    folder = Path(tempfile.mkdtemp(prefix="case-", dir=root))
    for name, content in case.files.items():
        content = content.replace("{dir}", str(folder)) if isinstance(content, str) else content
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    for name in case.fifos:
        os.mkfifo(folder / name)
    links = {name: target.replace("{dir}", str(folder)) for name, target in case.links.items()}
    for name, target in links.items():
        os.symlink(target, folder / name)
    sock = None
    if case.fifos:  # the cases of FIFOs and devices get a socket too
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(folder / "sock"))
    argv = [a.replace("{dir}", str(folder)) for a in case.argv]
    env = {**os.environ, "XDG_STATE_HOME": str(folder / "state"), "HOME": str(folder), "COLUMNS": "200"}
    for name in ("OPSCTL_DB", "OPSCTL_INVENTORY", "OPSCTL_DEBUG"):
        env.pop(name, None)
    started = time.monotonic()
    process = subprocess.Popen([*OPSCTL, *argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=folder, env=env, preexec_fn=_limits)
    try:
        stdout, stderr = process.communicate(timeout=case.timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        stdout, stderr = process.communicate()
        timed_out = True
    seconds = time.monotonic() - started
    if sock is not None:
        sock.close()
    replaced = _replaced(folder, case.fifos, links)
    if replaced:
        return ("BAD", replaced), seconds
    return judge(case, process.returncode, stdout.decode(errors="replace"), stderr.decode(errors="replace"), timed_out), seconds


def _replaced(folder, fifos, links):
    """What a case replaced that it must not have: a FIFO, a link to a device, a device."""
    for name in fifos:
        if not stat.S_ISFIFO(os.lstat(folder / name).st_mode):
            return f"replaced the FIFO {name}"
    for name, target in links.items():
        if not os.path.islink(folder / name) or os.readlink(folder / name) != target:
            return f"replaced the link {name} -> {target}"
    for device in ("/dev/null", "/dev/zero", "/dev/urandom"):
        if not stat.S_ISCHR(os.stat(device).st_mode):
            return f"replaced the device {device}"
    return None


def judge(case, code, stdout, stderr, timed_out):
    """('refused' | 'accepted' | 'BAD', why)."""
    if timed_out:
        return "BAD", f"no answer in {case.timeout:g} s"
    if case.secret and (case.secret in stdout or case.secret in stderr):
        return "BAD", "printed the password"
    if "Traceback" in stderr or "internal error" in stderr or "MemoryError" in stderr:
        return "BAD", f"exit {code}: {_last_line(stderr)}"
    if code < 0:
        return "BAD", f"killed by signal {-code}"
    if code == 2:
        lines = [line for line in stderr.splitlines() if line.strip()]
        if len(lines) != 1:
            return "BAD", f"exit 2 in {len(lines)} lines: {' | '.join(lines[:3])[:200]}"
        return "refused", lines[0]
    if code in case.ok:
        return "accepted", f"exit {code}"
    return "BAD", f"exit {code} (allowed: 2{''.join(f', {c}' for c in case.ok)}): {_last_line(stderr)}"


def _last_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:240] if lines else "(nothing on stderr)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="cases at once")
    parser.add_argument("--only", help="only cases whose name or area contains this")
    parser.add_argument("--skip-slow", action="store_true", help="leave out the burn-ins and triages of the hardware cases")
    parser.add_argument("--list", action="store_true", help="print the cases and stop")
    parser.add_argument("--verbose", action="store_true", help="print every case's outcome, not only the BAD ones")
    args = parser.parse_args()
    cases = [c for c in all_cases() if (not args.only or args.only in c.name or args.only == c.area)
             and not (args.skip_slow and c.slow)]
    if args.list:
        for case in cases:
            print(f"{case.area:9} {case.name}")
        return 0
    started = time.monotonic()
    outcomes = []
    counts = {}
    with tempfile.TemporaryDirectory(prefix="opsctl-hostile-") as root, ThreadPoolExecutor(args.jobs) as pool:
        for case, ((verdict, why), seconds) in zip(cases, pool.map(lambda c: run_case(c, root), cases)):
            outcomes.append(case)
            counts.setdefault(case.area, {"refused": 0, "accepted": 0, "BAD": 0})[verdict] += 1
            if verdict == "BAD" or args.verbose:
                print(f"{verdict:8} [{case.area}] {case.name} ({seconds:.1f} s): {why}", flush=True)
    total = {k: sum(c[k] for c in counts.values()) for k in ("refused", "accepted", "BAD")}
    print(f"\n{len(outcomes)} hostile inputs in {time.monotonic() - started:.0f} s "
          f"(limits: {max(c.timeout for c in cases):g} s at most a case, {MEMORY_LIMIT // 2**30} GiB address space)")
    for area, count in sorted(counts.items()):
        n = sum(count.values())
        print(f"  {area:9} {n:4}: {count['refused']} refused cleanly, {count['accepted']} accepted correctly, {count['BAD']} BAD")
    clean = total["refused"] + total["accepted"]
    print(f"  all       {len(outcomes):4}: {clean} clean ({100 * clean / len(outcomes):.1f}%), {total['BAD']} BAD")
    return 1 if total["BAD"] else 0


if __name__ == "__main__":
    sys.exit(main())
