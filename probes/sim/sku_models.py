"""One record per GPU model (SKU) the simulator can be: everything it reports of a healthy GPU of
that model and how fast it computes. Every module of the simulator (and opsctl's scenario
compiler, which builds the rack it simulates) reads the model from `SIM_SKUS`, so a new SKU is
one `SimSku` here. These are the simulator's ground truth, not judging thresholds (those live in
the probes' reference file with their sources).

Throughput: measured-to-peak ratios like the one measured on an H200 here (bf16 8192³ through
PyTorch: 770–800 of the datasheet's 989 TFLOP/s; opsctl's measurement, docs/sources.md); device
copy about 4.3 TB/s on H200. NVLink: the 18 links × 50 GB/s (NVLink 4) or × 100 GB/s (NVLink 5)
of NVIDIA's datasheets and NVLink page (docs/sources.md) count both directions, so each link
carries 25 or 50 GB/s each way — the line rates below (2 lanes × 100 or 200 Gb/s); a GPU sends
450 or 900 GB/s.

PCI device ids: NVIDIA/DCGM nvvs/diag-skus.yaml.in (H100 SXM 2330, H200 2335, B200 2901, GB200
2941). The PCIe link at its best: Gen5 x16 on every model here. An HGX GPU's host copies run over
it; a GB200 GPU reaches its Grace CPU over NVLink-C2C (its host copies run there), yet NVML
reports its PCIe link too, and DCGM runs its PCIe test on it: Gen5 x16 as NVIDIA/k8s-test-infra's
real-hardware nvidia-smi capture of a GB200 tray reports it (tests/e2e/go/assertions/nvidiasmi/
testdata/hardware/qx-gb200.xml: max and current Gen5, 16x; the same repository's mock profile says
Gen6 x16, which the capture contradicts). The serial is the board's: the two GPUs of a
Grace-Blackwell superchip report one (the same capture: GPUs 0 and 1 share a serial, 2 and 3
another); an HGX GPU its own.
"""

from dataclasses import dataclass

NVLINK5_LINE_RATE_BITS = 2 * 200e9  # bits/s on one NVLink 5 link: 2 lanes × 200 Gb/s
NVLINK4_LINE_RATE_BITS = 2 * 100e9


@dataclass(frozen=True, kw_only=True)
class SimSku:
    # --- what it reports itself as
    name: str  # nvmlDeviceGetName
    pci_device_id: int  # the device half of nvmlDeviceGetPciInfo's pciDeviceId (vendor NVIDIA in the low half)
    compute_capability: tuple[int, int]
    driver_version: str  # the driver a simulated rack of this model runs (nvmlSystemGetDriverVersion)
    vbios_version: str  # as flashed; a firmware_mismatch fault reports another
    inforom_version: str
    board_part_number: str
    gpus_per_serial: int = 1  # GPUs on one board, reporting its one serial: 2 on a GB200 superchip
    memory_bytes: int
    # --- how fast it computes and copies
    bf16_tflops: float  # achieved, sustained, healthy
    fp8_tflops: float | None  # None: no fp8
    copy_gbps: float  # device-to-device copy, bytes read + written per second / 1e9
    # --- power, heat and clocks
    tdp_w: float
    idle_w: float
    load_w: float
    idle_c: float
    load_c: float
    sm_clock_max_mhz: int
    mem_clock_mhz: int
    # Thermal limits the simulated GPUs report (simulator ground truth, not judging thresholds: the
    # judge takes each GPU's own from NVML): HW slowdown (NVML_TEMPERATURE_THRESHOLD_SLOWDOWN) and
    # HBM slowdown (NVML_TEMPERATURE_THRESHOLD_MEM_MAX), and how much warmer the HBM runs than the die.
    slowdown_c: float = 90.0
    memory_slowdown_c: float = 95.0
    memory_above_gpu_c: float = 4.0
    # --- NVLink (the number of links a GPU has is its rack model's: opsctl/rack_models.py)
    nvlink_version: int
    nvlink_gbps_per_link: float  # one direction, the modelled copy throughput
    nvlink_line_rate_bits: float  # bits/s one way on one link: at most one error per bit carried
    # The NVLink speed NVML reports (NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON, MB/s one way): NVIDIA's
    # figures (Health Validation nvlink_bandwidth_count_speed: GB200 53,125, H100 26,562; NVIDIA's
    # mock-NVML GB200 profile, NVIDIA/k8s-test-infra, 53,125), H200 and B200 as the same NVLink
    # generation. The modelled copy throughput stays nvlink_gbps_per_link.
    nvlink_speed_mbps: int
    nvlink5_fields: bool  # Blackwell reports the NVLink 5 counters as field values
    # The data-link (DL) error counters: nvmlDeviceGetNvLinkErrorCounter and the fields
    # NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, _RECOVERY and _CRC. NVML removed them on Blackwell (NVML
    # API Reference, Change Log, "Changes between v560 and v565"; the simulated Blackwell GPUs run
    # driver 570): there they answer NOT_SUPPORTED, and DCGM 4.6 judges them "pre-Blackwell only".
    nvlink_dl_counters: bool
    # The GPU's NVLink data ECC error total (NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL), which
    # DCGM 4.6 reads in MonitorNVLink5Fields. Neither nvml.h nor dcgm_fields.h says which GPUs report
    # it; the simulated Blackwell GPUs do (zero on a healthy GPU), the simulated Hopper ones answer
    # NOT_SUPPORTED: the rulebook judges it where it is reported, and requires it nowhere.
    nvlink_ecc_data_total: bool
    platform_info: bool  # GB200 trays report chassis, slot and tray through NVML
    fabric_health: bool  # the fabric health mask and summary
    # --- the link to the host CPU (probes/sim/host_link.py)
    host_link: str  # where pinned host copies run: "pcie", or "c2c" (NVLink-C2C to a Grace CPU)
    pcie_max: tuple[int, int] | None  # the PCIe link at its best (generation, width); None: no PCIe to its host
    # NVLink-C2C links to the CPU NVML reports (GB200's Grace; the count and speed are the
    # simulator's own, not a published figure: the judge asks only that each present link be active).
    c2c_links: int = 0
    c2c_mbps: int = 0


SIM_SKUS = {
    "h100": SimSku(
        name="NVIDIA H100 80GB HBM3", pci_device_id=0x2330, compute_capability=(9, 0), driver_version="550.127.08",
        vbios_version="96.00.99.00.01", inforom_version="G520.0200.00.05", board_part_number="699-2G530-0200-A00",
        memory_bytes=80 * 2**30, bf16_tflops=785.0, fp8_tflops=1450.0, copy_gbps=2900.0,
        tdp_w=700.0, idle_w=72.0, load_w=690.0, idle_c=33.0, load_c=71.0, sm_clock_max_mhz=1980, mem_clock_mhz=2619,
        nvlink_version=4, nvlink_gbps_per_link=25.0, nvlink_line_rate_bits=NVLINK4_LINE_RATE_BITS, nvlink_speed_mbps=26_562,
        nvlink5_fields=False, nvlink_dl_counters=True, nvlink_ecc_data_total=False, platform_info=False, fabric_health=False,
        host_link="pcie", pcie_max=(5, 16),
    ),
    "h200": SimSku(
        name="NVIDIA H200", pci_device_id=0x2335, compute_capability=(9, 0), driver_version="550.127.08",
        vbios_version="96.00.99.00.01", inforom_version="G520.0200.00.05", board_part_number="699-2G530-0200-A00",
        memory_bytes=141 * 2**30, bf16_tflops=785.0, fp8_tflops=1450.0, copy_gbps=4300.0,
        tdp_w=700.0, idle_w=75.0, load_w=690.0, idle_c=33.0, load_c=70.0, sm_clock_max_mhz=1980, mem_clock_mhz=3201,
        nvlink_version=4, nvlink_gbps_per_link=25.0, nvlink_line_rate_bits=NVLINK4_LINE_RATE_BITS, nvlink_speed_mbps=26_562,
        nvlink5_fields=False, nvlink_dl_counters=True, nvlink_ecc_data_total=False, platform_info=False, fabric_health=False,
        host_link="pcie", pcie_max=(5, 16),
    ),
    "b200": SimSku(
        name="NVIDIA B200", pci_device_id=0x2901, compute_capability=(10, 0), driver_version="570.133.20",
        vbios_version="97.00.A5.00.2F", inforom_version="G548.0201.00.06", board_part_number="699-2G548-0201-A00",
        memory_bytes=180 * 2**30, bf16_tflops=1750.0, fp8_tflops=3300.0, copy_gbps=6800.0,
        tdp_w=1000.0, idle_w=140.0, load_w=980.0, idle_c=34.0, load_c=73.0, sm_clock_max_mhz=1965, mem_clock_mhz=3996,
        nvlink_version=5, nvlink_gbps_per_link=50.0, nvlink_line_rate_bits=NVLINK5_LINE_RATE_BITS, nvlink_speed_mbps=53_125,
        nvlink5_fields=True, nvlink_dl_counters=False, nvlink_ecc_data_total=True, platform_info=False, fabric_health=True,
        host_link="pcie", pcie_max=(5, 16),
    ),
    "gb200": SimSku(
        name="NVIDIA GB200", pci_device_id=0x2941, compute_capability=(10, 0), driver_version="570.133.20",
        vbios_version="97.00.A5.00.2F", inforom_version="G548.0201.00.06", board_part_number="699-2G548-0201-A00",
        gpus_per_serial=2, memory_bytes=186 * 2**30, bf16_tflops=1950.0, fp8_tflops=3700.0, copy_gbps=6800.0,
        tdp_w=1200.0, idle_w=150.0, load_w=1150.0, idle_c=32.0, load_c=69.0, sm_clock_max_mhz=2062, mem_clock_mhz=3996,
        nvlink_version=5, nvlink_gbps_per_link=50.0, nvlink_line_rate_bits=NVLINK5_LINE_RATE_BITS, nvlink_speed_mbps=53_125,
        nvlink5_fields=True, nvlink_dl_counters=False, nvlink_ecc_data_total=True, platform_info=True, fabric_health=True,
        host_link="c2c", pcie_max=(5, 16), c2c_links=1, c2c_mbps=450_000,
    ),
}
