#!/usr/bin/env bash
# The tray probe on a real GPU machine (prepared for one NVIDIA H200; about 2 minutes):
# gemm, membw and counters for a minute, then a plain torch.matmul loop and a plain torch copy
# of the same shapes, NVML read time per GPU and what NVML reports unsupported — printed in the
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
