#!/usr/bin/env bash
# The tray probe on a real GPU machine — H100, H200, B200 or a GB200 compute tray (about 2
# minutes): gemm, membw and counters for a minute, then a plain torch.matmul loop and a plain
# torch copy of the same shapes, NVML read time per GPU, and what this GPU and driver report
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

# The probe itself, all GPUs of the machine: 48 s of GEMM (bf16 then fp8), 12 s of copies.
set +e
timeout 150 "$python" -m probes run --backend nvml --probes gemm,membw,counters --duration 60 --json \
  > "$out/run.json" 2> "$out/run.err"
code=$?
set -e
echo "probe exit code: $code (0 pass, 1 a check failed, 3 incomplete)"
tail -n 3 "$out/run.err" || true
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
