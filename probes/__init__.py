"""What runs ON a tray: NVML reading, GEMM burn-in, memory and NVLink bandwidth.

Deployed to trays on its own: it imports nothing from `opsctl`. `python -m probes` prints one
JSON document.
"""

import os

# NumPy's OpenBLAS starts a thread per core as it loads, which costs a process ~0.1 CPU-s
# (bench/numpy_threads.py) and buys nothing here: no product opsctl or a probe asks of NumPy is
# large enough for threads to help (a simulated GPU's are 64×64, on that GPU's own thread). One
# thread unless the user sets it; here, before anything imports NumPy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
