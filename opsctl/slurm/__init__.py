"""opsctl and the scheduler the racks run under (Slurm): which nodes a fault takes out of
service (scope.py), draining and resuming them without touching anyone else's drain
(containment.py), and the scontrol and sinfo calls it takes, as argument lists, with the
parsing of `scontrol show node` (scontrol.py). The fan-out reaches trays through Slurm jobs in
opsctl/fanout/slurm.py; `opsctl health` is Slurm's HealthCheckProgram (docs/slurm.md).
"""

from opsctl.slurm.containment import drain_parts, resume_parts
from opsctl.slurm.scope import nodes_of_part, nodes_of_rack

__all__ = ["drain_parts", "resume_parts", "nodes_of_part", "nodes_of_rack"]
