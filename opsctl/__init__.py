"""opsctl: the operator's side of burn-in, acceptance, triage, alerting and TCO for GPU racks."""

import os

# One OpenBLAS thread unless the user sets it, before anything imports NumPy: probes/__init__.py
# says why (the probes, deployed on their own, cannot import this package for it).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
