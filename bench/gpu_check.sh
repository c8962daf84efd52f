#!/usr/bin/env bash
# The tray probe on a real GPU machine — H100, H200, B200 or a GB200 compute tray (about 3
# minutes): its preflight, then every probe (gemm, membw, nvlink, pulse, hbm, configuration,
# counters) for a minute of load, then a plain torch.matmul loop and a plain torch copy of the
# same shapes, a 5 s NVLink snapshot, the exporter over the same GPUs under 10 scrapers
# (bench/exporter_real_gpu.py), the kernel history's real read, NVML read time per GPU, and what this GPU and driver report
# unsupported: every NVML call and every NVLink field (per link) that answered NOT_SUPPORTED,
# which reference file and NVLink generation the PCI device id chose, and which of the rulebook's
# required counters (rules.yaml nvlink_required) could therefore not be judged. Printed in the
# shape docs/benchmarks.md wants. Needs the NVIDIA driver and PyTorch with CUDA.
#
#   bash bench/gpu_check.sh            # writes run.json and the report under ${OUT:-/tmp}
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp}
python=${PYTHON:-python3}
[ -x .venv/bin/python ] && python=.venv/bin/python

"$python" - <<'PY'
import torch, pynvml
assert torch.cuda.is_available(), "no CUDA GPU for torch"
pynvml.nvmlInit()
print("GPUs:", pynvml.nvmlDeviceGetCount(), torch.cuda.get_device_name(0), "torch", torch.__version__)
PY

# PROBES_DEBUG: a bug in the real path shows its traceback rather than one line.
export PROBES_DEBUG=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
set +e
timeout 60 "$python" -m probes preflight --backend nvml --json > "$out/preflight.json" 2> "$out/preflight.err"
echo "preflight exit code: $? (0 every probe can run)"; head -c 1500 "$out/preflight.json"; echo; tail -n 5 "$out/preflight.err"
# The probe itself, all GPUs of the machine, every probe: 60 s of load shared 4:1:1:1 by gemm
# (bf16 then fp8), membw, nvlink and pulse, then the HBM test and the configuration checks.
TIMEFORMAT="probe run: %R s wall, %U s user, %S s system"
time timeout 240 "$python" -m probes run --backend nvml --duration 60 --json \
  > "$out/run.json" 2> "$out/run.err"
code=$?
echo "probe exit code: $code (0 pass, 1 a check failed, 3 incomplete)"
tail -n 30 "$out/run.err"
timeout 60 "$python" -m probes snapshot --backend nvml --window 5 --json > "$out/snapshot.json" 2> "$out/snapshot.err"
echo "snapshot exit code: $?"; tail -n 5 "$out/snapshot.err"
timeout 60 "$python" bench/exporter_real_gpu.py --seconds 12 --interval 1 --scrapers 10 2>&1 | tee "$out/exporter.txt"
timeout 60 "$python" bench/kernel_history.py --lines 20000 200000 2>&1 | tee "$out/kernel_history.txt"
set -e
[ -s "$out/run.json" ] || { echo "no run document"; exit 1; }
# Bare torch with the same shapes on GPU 0, then the table.
timeout 90 "$python" bench/probe_gpu_baseline.py --run "$out/run.json" --gpu 0 --seconds 10 | tee "$out/report.md"
"$python" - "$out/run.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
for gpu in run["gpus"]:
    bad = [f"{c['check']} {c['component']}: {c['reason']}" for c in gpu["checks"] if c["verdict"] != "pass"]
    print(f"gpu{gpu['index']}: {len(gpu['checks'])} checks, not passed: {bad or 'none'}")
PY
# What this GPU and driver do not report, and what the rulebook could therefore not judge.
"$python" - "$out/run.json" <<'PY' | tee "$out/unsupported.md"
import json, sys
from collections import Counter
run = json.load(open(sys.argv[1]))
print(f"driver {run['system'].get('driver_version')}, NVML {run['system'].get('nvml_version')}, "
      f"references {run['system'].get('references')}")
for gpu in run["gpus"]:
    before = gpu.get("before") or {}
    fields = Counter(name for link in before.get("links") or [] for name in link.get("unsupported") or [])
    links = len(before.get("links") or [])
    print(f"gpu{gpu['index']} {gpu.get('name')} (PCI device {gpu.get('pci_device_id')}), {links} NVLinks")
    print(f"  NVML calls NOT_SUPPORTED: {', '.join(before.get('unsupported') or []) or 'none'}")
    print(f"  NVML calls that failed otherwise: {before.get('errors') or 'none'}")
    print(f"  NVLink fields NOT_SUPPORTED: {', '.join(f'{n} ({c}/{links} links)' for n, c in sorted(fields.items())) or 'none'}")
    print(f"  recovery action: {before.get('recovery_action')}; fabric: {(before.get('fabric') or {}).get('state')}")
    for check in gpu["checks"]:
        if check["verdict"] == "incomplete":
            print(f"  not judged: {check['check']} {check['component']}: {check['reason']}")
PY
