"""Every check family the rack decides, in one place: each one module whose entry point
`rack_checks(evidence) -> RackFindings` judges the rack's trays together (opsctl/burnin/rack_evidence.py)
— what no tray can see alone. The rack judge (opsctl/burnin/rack_judge.py) calls each in this order
after the probes' own checks, and the checks come out in it. A new family is its module and one
line here (docs/contributing.md); a check one tray decides goes in probes/gpu_check_families.py.
"""

from __future__ import annotations

from collections.abc import Callable

from opsctl.burnin import configuration, fabric_domain, golden_results, nvlink_domain, rack_relative, switch_firmware
from opsctl.burnin.rack_evidence import RackEvidence, RackFindings

RackCheckFamily = Callable[[RackEvidence], RackFindings]

RACK_CHECK_FAMILIES: tuple[RackCheckFamily, ...] = (
    rack_relative.rack_checks,  # each GPU against the others of its SKU
    fabric_domain.rack_checks,  # one NVLink fabric clique on an NVL72
    nvlink_domain.rack_checks,  # the NVLink domain test, where it ran
    configuration.rack_checks,  # one configuration on every GPU of a model
    golden_results.rack_checks,  # the same golden GEMM result on every GPU of a model
    switch_firmware.rack_checks,  # one NVSwitch firmware on every switch tray
)
