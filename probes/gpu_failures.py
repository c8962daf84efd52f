"""A GPU that stopped answering or failed under a load: lost (NVML GPU_IS_LOST), hung (its NVML
calls ran past the deadline, probes/gpu_deadline.py) or failed by a probe (a CUDA error, no NVLink
path). Each is named and failed on its own account while its siblings are judged as usual.
"""

from __future__ import annotations

from typing import Any

from probes.check_record import Check, GpuContext, check
from probes.gpu_deadline import DEADLINE_SOURCE
from probes.sku_references import References

LOST_SOURCE = ("NVML NVML_ERROR_GPU_IS_LOST; NVIDIA XID catalog: XID 79, GPU has fallen off the bus, immediate RESTART_BM "
               "(reboot the machine)")
DEVICE_SOURCE = "a GPU that fails under load fails burn-in (CUDA error, fell off the bus, no NVLink path)"


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """gpu.lost, gpu.hung and <probe>.device, where the GPU entry says so."""
    component = context.component
    checks: list[Check] = []
    if gpu.get("lost"):
        checks.append(check("gpu.lost", component, "fail", True, False, "lost", "==", LOST_SOURCE,
                            gpu.get("lost_reason") or "the GPU stopped answering NVML (GPU_IS_LOST)"))
    if gpu.get("hung"):
        checks.append(check("gpu.hung", component, "fail", gpu.get("hung_deadline_s"), gpu.get("hung_deadline_s"),
                            "seconds without an answer", ">=", DEADLINE_SOURCE,
                            gpu.get("hung_reason") or "its NVML calls did not return within the deadline"))
    for failure in gpu.get("failures", []):
        checks.append(check(f"{failure['probe']}.device", component, "fail", failure["error"], None, "error", "raised",
                            DEVICE_SOURCE, f"{failure['probe']} failed on this GPU: {failure['error']}"))
    return checks
