"""Every check family of a tray, in one place: a GPU's families, each one module whose entry point
judges one GPU entry of the run document, a compute tray's own (the host's), and a switch tray's. The tray judge
(probes/tray_judge.py) calls each in this order, and the checks come out in it (reports and
JUnit list them so). A new family is its module and one line here (docs/contributing.md).

A GPU family's entry point: `gpu_checks(gpu, refs, context) -> list[Check]` — the GPU's entry,
the references (probes/sku_references.py), and what the tray knows besides (its component, the
tray's peer medians). It returns nothing where the entry has no section of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from probes import (c2c_link, configuration, counter_checks, gemm, gpu_failures, hbm_checks, host_copy, host_links,
                    link_rules, membw, nvlink_bw, pulse, running_totals, sustained_power, thermal_margins, under_load,
                    nvswitch_sxids, xid_checks)
from probes.check_record import Check, GpuContext
from probes.sku_references import References

GpuCheckFamily = Callable[[dict[str, Any], References, GpuContext], list[Check]]
TrayCheckFamily = Callable[[dict[str, Any], References], list[Check]]  # (the tray's run document, refs)
SwitchCheckFamily = Callable[[list[dict[str, Any]], float, References], list[Check]]  # (its ports' window, seconds, refs)

GPU_CHECK_FAMILIES: tuple[GpuCheckFamily, ...] = (
    gpu_failures.gpu_checks,  # lost, hung, failed under a probe
    gemm.gpu_checks,  # verified GEMM results and their throughput
    under_load.gpu_checks,  # throttling under load
    membw.gpu_checks,  # memory bandwidth
    nvlink_bw.gpu_checks,  # NVLink peer copies
    counter_checks.gpu_checks,  # the window's counters: link rules, health, XIDs of the window
    xid_checks.gpu_checks,  # XIDs logged before the run
    configuration.gpu_checks,  # ECC, MIG, power limit, clocks
    host_links.gpu_checks,  # the PCIe link to the host
    host_copy.gpu_checks,  # pinned host copies
    hbm_checks.gpu_checks,  # the HBM memory test
    c2c_link.gpu_checks,  # NVLink-C2C to the Grace CPU
    sustained_power.gpu_checks,  # power held through the load
    pulse.gpu_checks,  # the power delivery under load steps
    thermal_margins.gpu_checks,  # thermal margins under load
    running_totals.gpu_checks,  # the state the GPU arrived in
)

# A compute tray's checks of what its host holds beside its GPUs, after the GPUs' checks.
TRAY_CHECK_FAMILIES: tuple[TrayCheckFamily, ...] = (
    nvswitch_sxids.tray_checks,  # the HGX baseboard's NVSwitch errors since the driver loaded
)

SWITCH_CHECK_FAMILIES: tuple[SwitchCheckFamily, ...] = (
    link_rules.switch_checks,  # the link rules over the switch tray's ports, per chip
)
