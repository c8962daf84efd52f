"""How a healthy GPU of each SKU behaves in the simulator: what it reports and how fast it
computes. These are the simulator's ground truth, not judging thresholds (those live in the
probes' reference file with their sources).

Throughput: measured-to-peak ratios like the one measured on an H200 here (bf16 8192³ through
PyTorch: 770–800 of the datasheet's 989 TFLOP/s; opsctl's measurement, docs/sources.md); device
copy about 4.3 TB/s on H200. NVLink: the 18 links × 50 GB/s (NVLink 4) or × 100 GB/s (NVLink 5)
of NVIDIA's datasheets and NVLink page (docs/sources.md) count both directions, so each link
carries 25 or 50 GB/s each way — the line rates below (2 lanes × 100 or 200 Gb/s); a GPU sends
450 or 900 GB/s.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class SkuModel:
    name: str  # what nvmlDeviceGetName reports
    compute_capability: tuple[int, int]
    bf16_tflops: float  # achieved, sustained, healthy
    fp8_tflops: float | None  # None: no fp8
    copy_gbps: float  # device-to-device copy, bytes read + written per second / 1e9
    nvlink_gbps_per_link: float  # one direction
    nvlink_version: int
    memory_bytes: int
    tdp_w: float
    idle_w: float
    load_w: float
    idle_c: float
    load_c: float
    sm_clock_max_mhz: int
    mem_clock_mhz: int
    nvlink5_fields: bool  # Blackwell reports the NVLink 5 counters as field values
    platform_info: bool  # GB200 trays report chassis, slot and tray through NVML
    fabric_health: bool  # the fabric health mask and summary
    # Thermal limits the simulated GPUs report (simulator ground truth, not judging thresholds: the
    # judge takes each GPU's own from NVML): HW slowdown (NVML_TEMPERATURE_THRESHOLD_SLOWDOWN) and
    # HBM slowdown (NVML_TEMPERATURE_THRESHOLD_MEM_MAX), and how much warmer the HBM runs than the die.
    slowdown_c: float = 90.0
    memory_slowdown_c: float = 95.0
    memory_above_gpu_c: float = 4.0
    # NVLink-C2C links to the CPU NVML reports (GB200's Grace; the count and speed are the
    # simulator's own, not a published figure: the judge asks only that each present link be active).
    c2c_links: int = 0
    c2c_mbps: int = 0
    # The NVLink speed NVML reports (NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON, MB/s one way): NVIDIA's
    # figures (Health Validation nvlink_bandwidth_count_speed: GB200 53,125, H100 26,562; NVIDIA's
    # mock-NVML GB200 profile, NVIDIA/k8s-test-infra, 53,125), H200 and B200 as the same NVLink
    # generation. The modelled copy throughput above stays nvlink_gbps_per_link.
    nvlink_speed_mbps: int = 26_562


SKU_MODELS = {
    "h100": SkuModel("NVIDIA H100 80GB HBM3", (9, 0), 785.0, 1450.0, 2900.0, 25.0, 4, 80 * 2**30,
                     700.0, 72.0, 690.0, 33.0, 71.0, 1980, 2619, False, False, False),
    "h200": SkuModel("NVIDIA H200", (9, 0), 785.0, 1450.0, 4300.0, 25.0, 4, 141 * 2**30,
                     700.0, 75.0, 690.0, 33.0, 70.0, 1980, 3201, False, False, False),
    "b200": SkuModel("NVIDIA B200", (10, 0), 1750.0, 3300.0, 6800.0, 50.0, 5, 180 * 2**30,
                     1000.0, 140.0, 980.0, 34.0, 73.0, 1965, 3996, True, False, True, nvlink_speed_mbps=53_125),
    "gb200": SkuModel("NVIDIA GB200", (10, 0), 1950.0, 3700.0, 6800.0, 50.0, 5, 186 * 2**30,
                      1200.0, 150.0, 1150.0, 32.0, 69.0, 2062, 3996, True, True, True, c2c_links=1, c2c_mbps=450_000,
                      nvlink_speed_mbps=53_125),
}

NVLINK5_LINE_RATE_BITS = 2 * 200e9  # bits/s on one NVLink 5 link: 2 lanes × 200 Gb/s
NVLINK4_LINE_RATE_BITS = 2 * 100e9
