"""Where the tray probe builds its view of the hardware: the one place in probes/ that tells
the simulator from real GPUs apart (`--backend sim|nvml`). Everything above it is the same code.

- nvml: the real `pynvml`, and PyTorch on CUDA for the load probes (imported only when a load
  probe runs, so a tray without torch can still read its counters).
- sim: the simulated rack of a RackSpec (what `opsctl sim spec RACK` writes), one tray of it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TextIO

from probes.switch_reader import NvosSwitchReader, SimSwitchReader

if TYPE_CHECKING:
    from probes.kernel_history import KernelHistory
    from probes.compute import ComputeDevice
    from probes.nvml_library import NvmlLibrary
    from probes.sim import RackSpec
    from probes.sim.clock import Clock

SIM_HINT = "run with --backend sim --sim-spec FILE --tray NAME to use the simulator"
SWITCH_TRAY = re.compile(r"st\d+")


class BackendError(Exception):
    """The probe cannot start: one line for stderr, and the exit code it means."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class TrayBackend:
    kind: str  # "sim" or "nvml"
    tray: str | None
    nvml: NvmlLibrary | None  # pynvml or a SimNvml, initialised; None on a switch tray
    clock: Clock  # wall time, or the simulator's
    switch: SimSwitchReader | NvosSwitchReader | None = None  # a switch reader on a switch tray
    open_devices: Callable[[], dict[int, ComputeDevice]] = field(default=lambda: {})  # {nvml index: compute device}
    # The kernel log since a clock time: (lines, None), or ([], why it cannot be read).
    kernel_log: Callable[[float], tuple[list[str], str | None]] = field(default=lambda since: ([], "no kernel log on this backend"))
    # The kernel log from the driver's load up to a clock time (probes/kernel_history.py).
    kernel_history: KernelHistory = field(
        default=lambda until: ([], "no kernel log on this backend"))
    imex: Callable[[], dict[str, Any]] | None = None  # the tray's IMEX service and channels (probes/imex.py)
    # Why the load probes (GEMM, copies) cannot run on this tray, or None: what a preflight asks
    # before any load (probes/preflight.py). The collective's own, likewise.
    compute_missing: Callable[[], str | None] = field(default=lambda: None)
    collective_missing: Callable[[], str | None] = field(default=lambda: None)

    def close(self) -> None:
        if self.nvml is not None:
            try:
                self.nvml.nvmlShutdown()
            except self.nvml.NVMLError:
                pass


def open_backend(kind: str, sim_spec: str | None = None, tray: str | None = None, stdin: TextIO | None = None,
                 load: bool = True) -> TrayBackend:
    """The tray's backend; `load=False` when no load probe will run (`opsctl health`): the
    simulator then leaves out its compute device and NumPy with it (a real tray imports PyTorch
    only when a load runs anyway)."""
    if kind == "sim":
        return _open_sim(sim_spec, tray, stdin or sys.stdin, load)
    if kind == "nvml":
        return _open_nvml(tray)
    raise BackendError(f"unknown backend {kind!r} (nvml or sim)")


# --- the simulator ---------------------------------------------------------------------------------
def read_spec(sim_spec: str, stdin: TextIO) -> RackSpec:
    """The RackSpec in a file, or on stdin for `-`."""
    from probes.sim import RackSpec

    where = "stdin" if sim_spec == "-" else sim_spec
    try:
        text = stdin.read() if sim_spec == "-" else open(sim_spec, encoding="utf-8").read()
        return RackSpec.from_dict(json.loads(text))
    except OSError as error:
        raise BackendError(f"cannot read the simulator spec {where}: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise BackendError(f"{where}: not JSON: {error.msg} at line {error.lineno}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise BackendError(f"{where}: not a simulator spec: {error}") from None


def _open_sim(sim_spec: str | None, tray: str | None, stdin: TextIO, load: bool = True) -> TrayBackend:
    if not sim_spec or not tray:
        raise BackendError("--backend sim needs --sim-spec FILE (or - for stdin) and --tray NAME")
    spec = read_spec(sim_spec, stdin)
    from probes.sim import SimNvml, SimRack
    from probes.sim.switch import SimSwitchTray

    try:
        tray_spec = spec.tray(tray)
    except KeyError:
        names = ", ".join(t.name for t in spec.trays)
        raise BackendError(f"rack {spec.rack} has no tray {tray!r} (its trays: {names})") from None
    if tray_spec.unreachable:
        raise BackendError(f"{spec.rack}/{tray}: no route to host (simulated unreachable tray)", exit_code=3)
    if not tray_spec.gpus:
        rack = SimRack(spec)
        return TrayBackend("sim", tray, None, rack.clock, switch=SimSwitchReader(SimSwitchTray(rack, tray)))
    if load:
        from probes.compute.sim_device import SimDevice  # numpy: a compute tray's only
        from probes.sim.device import SimComputeDevice

    # Built once the imports are done: a spec without an epoch starts its clock here, so its
    # faults' times count from just before the probe's first reading, on a slow machine too.
    rack = SimRack(spec)
    nvml = SimNvml(rack, tray)
    nvml.nvmlInit()
    gpus = rack.trays[tray].gpus
    return TrayBackend("sim", tray, nvml, rack.clock,
                       open_devices=lambda: {i: SimDevice(SimComputeDevice(rack, gpu)) for i, gpu in enumerate(gpus)} if load else {},
                       kernel_log=lambda since: rack.kernel_log(tray, since),
                       kernel_history=lambda until: rack.kernel_history(tray, until), imex=lambda: rack.imex(tray),
                       compute_missing=lambda: _modules_missing(("numpy", "probes.compute.sim_device")),
                       collective_missing=lambda: _modules_missing(("numpy", "probes.sim.collective", "probes.sim.exchange")))


def _modules_missing(modules: tuple[str, ...]) -> str | None:
    """Why one of `modules` cannot be imported here, or None."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as error:  # ImportError, or a module that breaks as it loads
            return f"cannot import {module} ({type(error).__name__}: {error})"
    return None


# --- real GPUs ---------------------------------------------------------------------------------------
def _open_nvml(tray: str | None) -> TrayBackend:
    from probes.sim.clock import WallClock

    if tray and SWITCH_TRAY.fullmatch(tray):
        return TrayBackend("nvml", tray, None, WallClock(), switch=NvosSwitchReader())
    try:
        import pynvml
    except ImportError as error:
        raise BackendError(f"pynvml (nvidia-ml-py) cannot be imported ({error}); {SIM_HINT}") from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        raise BackendError(f"NVML library not found (no NVIDIA driver on this machine?); {SIM_HINT}") from None
    except pynvml.NVMLError as error:
        # A driver that is there but not answering is a sick tray, not a usage error.
        raise BackendError(f"NVML failed to initialise: {error}", exit_code=3) from None
    from probes.kernel_history import read_kernel_history
    from probes.kernel_log import read_kernel_log

    from probes.imex import read_host_imex

    return TrayBackend("nvml", tray, pynvml, WallClock(), open_devices=lambda: _cuda_devices(pynvml),
                       kernel_log=read_kernel_log, kernel_history=read_kernel_history, imex=read_host_imex,
                       compute_missing=torch_cuda_missing, collective_missing=nccl_missing)


TORCH_INSTALL = "pip install 'opsctl[gpu]'"


def torch_cuda_missing() -> str | None:
    """Why PyTorch cannot run the load probes on this tray's GPUs, or None."""
    try:
        import torch
    except ImportError as error:
        return f"PyTorch cannot be imported ({error}); install it: {TORCH_INSTALL}"
    if not torch.cuda.is_available():
        return ("PyTorch sees no CUDA GPU (a CPU-only torch, or CUDA_VISIBLE_DEVICES empty); install a CUDA build: "
                f"{TORCH_INSTALL}")
    return None


def nccl_missing() -> str | None:
    """Why the rack-wide collective (torch.distributed over NCCL) cannot run here, or None."""
    missing = torch_cuda_missing()
    if missing:
        return missing
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_nccl_available():
        return f"this PyTorch has no NCCL (torch.distributed.is_nccl_available() is false); install a CUDA build: {TORCH_INSTALL}"
    return None


def _cuda_devices(nvml: NvmlLibrary) -> dict[int, ComputeDevice]:
    """{NVML index: TorchDevice}, matched by GPU UUID (CUDA may number GPUs differently)."""
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # NVML's order, where UUIDs are not given
    try:
        import torch
    except ImportError:
        raise BackendError("the gemm, membw and nvlink probes need PyTorch with CUDA (pip install 'opsctl[gpu]'); "
                           "--probes counters reads NVML alone") from None
    if not torch.cuda.is_available():
        raise BackendError("PyTorch sees no CUDA GPU (a CPU-only torch, or CUDA_VISIBLE_DEVICES empty); "
                           "--probes counters reads NVML alone")
    from probes.compute.torch_device import TorchDevice

    by_uuid: dict[str, int] = {}
    for cuda_index in range(torch.cuda.device_count()):
        uuid = getattr(torch.cuda.get_device_properties(cuda_index), "uuid", None)
        if uuid is not None:
            by_uuid[_uuid_key(uuid)] = cuda_index
    devices: dict[int, ComputeDevice] = {}
    for index in range(nvml.nvmlDeviceGetCount()):
        try:
            uuid = _uuid_key(nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetHandleByIndex(index)))
        except nvml.NVMLError:
            continue  # a GPU NVML cannot name is judged from its NVML reading (lost)
        match = by_uuid.get(uuid, index if not by_uuid and index < torch.cuda.device_count() else None)
        if match is not None:
            devices[index] = TorchDevice(f"cuda:{match}")
    return devices


def _uuid_key(uuid: object) -> str:
    return str(uuid).lower().removeprefix("gpu-").replace("-", "")
