"""The tray probe's load probes by name, and how long `run` loads by default: what its command
line offers, importable without the probes themselves (`imex` and `collective` start quicker)."""

PROBES = ("gemm", "membw", "nvlink", "pulse", "hbm", "configuration", "counters")
DEFAULT_DURATION_S = 60.0
