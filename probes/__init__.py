"""What runs ON a tray: NVML reading, GEMM burn-in, memory and NVLink bandwidth.

Deployed to trays on its own: it imports nothing from `opsctl`. `python -m probes` prints one
JSON document.
"""
