"""Compile a fault scenario and a rack topology into the simulator's RackSpec.

Here the physical parts are resolved to what the hardware would show: a cartridge with bad
pins becomes error rates on the links through those pins, a failed switch chip becomes its 72
links down, and a link that drops makes its own GPU log the link-down XID (149 on NVLink 5,
NVLINK_NETIR_ERROR; 74 before). The simulator makes no other GPU log anything for it: NVIDIA's
XID catalog documents no such relation, and the simulator injects only what the rulebook names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

import pynvml

from opsctl.errors import InputError
from opsctl.simulation.scenario import DL_RATES, DL_TOTALS, NVLINK5_RATES, Fault, Scenario
from probes.sim.profiles import seeded_random
from probes.sim.sku_models import SIM_SKUS
from opsctl.rack_models import HGX_TRAY
from opsctl.topology.graph import Component, Topology
from probes.sim.spec import Effect, GpuSpec, LinkSpec, RackSpec, TraySpec

XID_NVLINK = 74  # NVLink error (NVLink 4)
XID_NVLINK5_LINK_DOWN = 149  # NVLINK_NETIR_ERROR: its NETIR_LINK_DOWN unit (NVIDIA XID catalog, 144-150 decode)
XID_DBE = 48
XID_ROW_REMAP = 63
XID_ROW_REMAP_FAILURE = 64
XID_FELL_OFF_BUS = 79

HGX_PCI_BUSES = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")  # a DGX/HGX H100 board's GPUs
# What bad pins without rates of their own count at: a marginal contact, in the counters the rack's
# GPUs have. The data-link ones (NVLink 4) by DCGM's MonitorNVLink4Fields: CRC errors above the
# 100/s that fails, and replays, any of which fails. On NVLink 5 the errors forward error
# correction left (symbol errors and their effective BER) and the packets they spoiled (receive
# errors): DCGM's MonitorNVLink5Fields fails any. The rates are the simulator's choice.
BAD_PINS_DL_RATES = {"crc_per_s": 150.0, "replay_per_s": 1.0, "ber": 2e-10}
BAD_PINS_NVLINK5_RATES = {"symbol_per_s": 80.0, "rcv_errors_per_s": 40.0, "ber": 2e-10}
# The keys to give on NVLink 5 instead of the data-link ones, named when a key is refused.
NVLINK5_KEYS = ", ".join(("symbol_per_s", *NVLINK5_RATES, "ber"))


def _hex(*keys: object, length: int = 32) -> str:
    return hashlib.sha256("/".join(map(str, keys)).encode()).hexdigest()[:length]


def _uuid(seed: int, gpu_id: str) -> str:
    h = _hex(seed, gpu_id, "uuid")
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


class _Builder:
    def __init__(self, scenario: Scenario, topology: Topology) -> None:
        self.scenario = scenario
        self.topology = topology
        self.model = topology.model
        self.rack = topology.rack
        self.gpus: dict[str, GpuSpec] = {}
        self.links: dict[str, LinkSpec] = {}
        self.unreachable: set[str] = set()
        self.switch_firmware: dict[str, str] = {}  # switch tray -> the NVSwitch firmware it was flashed with
        self.domain: dict[str, Any] = {}  # the NVLink domain's software state (RackSpec.domain)
        self.host_effects: dict[str, list[Effect]] = {}  # tray -> its host's own effects (an HGX switch chip's SXids)

    # --- the healthy rack --------------------------------------------------------------------
    def build_hardware(self) -> list[TraySpec]:
        model, rack, seed = self.model, self.rack, self.scenario.seed
        per_serial = SIM_SKUS[model.sku].gpus_per_serial
        trays = []
        for tray_index, tray in enumerate(model.compute_tray_names()):
            gpus = []
            for local in range(model.gpus_per_tray):
                rack_index = tray_index * model.gpus_per_tray + local
                gpu_id = model.gpu_id(rack, rack_index)
                if model.is_nvl72:
                    bus_id = f"{(0x0008, 0x0009, 0x0018, 0x0019)[local]:08X}:01:00.0"
                else:
                    bus_id = f"00000000:{HGX_PCI_BUSES[local]}:00.0"
                # The serial is the board's: the GPUs of one superchip report one (the SKU's record).
                board = f"{rack}/{tray}/superchip{local // per_serial}" if per_serial > 1 else gpu_id
                links = []
                for port in range(model.nvlink_ports):
                    link = self.topology.link_for(gpu_id, port)
                    spec = LinkSpec(port=port, remote_switch=link.switch, remote_port=link.switch_port)
                    self.links[link.id] = spec
                    links.append(spec)
                gpu = GpuSpec(
                    id=gpu_id,
                    local_index=local,
                    rack_index=rack_index,
                    uuid=_uuid(seed, gpu_id),
                    serial=str(1650000000000 + int(_hex(seed, board, "serial", length=8), 16) % 10**9),
                    pci_bus_id=bus_id,
                    module_id=local + 1,
                    links=links,
                )
                self.gpus[gpu_id] = gpu
                gpus.append(gpu)
            trays.append(TraySpec(name=tray, slot=tray_index + 1, tray_index=tray_index, gpus=gpus))
        for index, tray in enumerate(model.switch_tray_names()):
            trays.append(TraySpec(name=tray, slot=model.compute_trays + index + 1, tray_index=index))
        return trays

    # --- resolving what a fault names --------------------------------------------------------
    def _full_id(self, target: str) -> str:
        return target if target.startswith(self.rack + "/") or target == self.rack else f"{self.rack}/{target}"

    def _fail(self, fault: Fault, message: str) -> NoReturn:
        raise InputError(f"{self.scenario.source}: {fault.label}: {message}")

    def link_ids(self, fault: Fault) -> list[str]:
        if fault.port is not None:
            gpu = self._gpu_id(fault)
            if fault.port >= self.model.nvlink_ports:
                self._fail(fault, f"port {fault.port} out of range 0–{self.model.nvlink_ports - 1}")
            return [self.model.link_id(self.rack, self.gpus[gpu].rack_index, fault.port)]
        link_id = self._full_id(fault.target)
        if link_id not in self.links:
            self._fail(fault, f"unknown link {fault.target!r} (links look like {self.rack}/"
                       f"{self.model.gpu_id(self.rack, 0).split('/', 1)[1]}/nvl05)")
        return [link_id]

    def _gpu_id(self, fault: Fault) -> str:
        gpu_id = self._full_id(fault.target)
        if gpu_id not in self.gpus:
            self._fail(fault, f"unknown GPU {fault.target!r}")
        return gpu_id

    def gpu_ids(self, fault: Fault) -> list[str]:
        if fault.target == "all":
            return list(self.gpus)
        return [self._gpu_id(fault)]

    def part(self, fault: Fault, kinds: tuple[str, ...] | None = None) -> Component:
        part_id = self._full_id(fault.target)
        component = self.topology.components.get(part_id)
        if component is None:
            self._fail(fault, f"unknown part {fault.target!r}")
        if kinds and component.kind not in kinds:
            self._fail(fault, f"{part_id} is a {component.kind}, expected a {' or '.join(kinds)}")
        return component

    # --- effects -------------------------------------------------------------------------------
    def link_effect(self, link_id: str, kind: str, params: dict[str, Any], fault: Fault) -> None:
        self.links[link_id].effects.append(Effect(kind, dict(params), source=fault.label))

    def gpu_effect(self, gpu_id: str, kind: str, params: dict[str, Any], fault: Fault) -> None:
        self.gpus[gpu_id].effects.append(Effect(kind, dict(params), source=fault.label))

    def xid(self, gpu_id: str, xid: int, at_s: float, fault: Fault, repeat_s: float | None = None,
            count: int | None = None, **extra: object) -> None:
        """An XID the GPU logs; `extra`: its recovery action and kernel log registers, where given."""
        params = {"xid": xid, "at_s": at_s, **{key: value for key, value in extra.items() if value is not None}}
        if repeat_s is not None:
            params["repeat_s"] = repeat_s
        if count is not None:
            params["count"] = count
        self.gpu_effect(gpu_id, "xid", params, fault)

    def link_drop(self, link_ids: Iterable[str], fault: Fault, start_s: float, period_s: float | None = None,
                  end_s: float | None = None) -> None:
        """The link-down XID on each GPU whose link goes down, every time it goes down."""
        origins = sorted({"/".join(link_id.split("/")[:-1]) for link_id in link_ids})
        count: int | None = None
        if period_s is not None and end_s is not None:
            count = int((end_s - start_s) // period_s) + 1
        xid = XID_NVLINK5_LINK_DOWN if self.model.is_nvl72 else XID_NVLINK
        for gpu_id in origins:
            self.xid(gpu_id, xid, start_s, fault, period_s, count)

    def apply(self, fault: Fault) -> None:
        """Resolve one fault through its kind's handler (FAULT_HANDLERS, below the class)."""
        if not SIM_SKUS[self.model.sku].nvlink_dl_counters:
            self.refuse_dl_keys(fault)
        FAULT_HANDLERS[fault.kind](self, fault)

    def refuse_dl_keys(self, fault: Fault) -> None:
        """A data-link counter's rate or total asked of a GPU that has none (Blackwell) is bad
        input: it would count where nothing reads it, and no NVLink 5 counter is documented as
        its equivalent, so none is chosen for it."""
        given = [key for key in (DL_TOTALS if fault.kind == "link_totals" else DL_RATES) if key in fault.params]
        if given:
            instead = "recovery_failed, recovery_successful" if fault.kind == "link_totals" else NVLINK5_KEYS
            what = "counts" if fault.kind == "link_totals" else "rates"
            self._fail(fault, f"{', '.join(given)}: {dl_counters_gone(self.model.sku, what)}; give the NVLink 5 {what} instead: {instead}")

    # --- one handler per fault kind: what the hardware shows for it ------------------------------
    def _window(self, fault: Fault) -> dict[str, float]:
        return {k: fault.params[k] for k in ("start_s", "end_s") if k in fault.params}

    def link_errors(self, fault: Fault) -> None:
        for link_id in self.link_ids(fault):
            self.link_effect(link_id, "errors", fault.params, fault)

    def link_down(self, fault: Fault) -> None:
        links = self.link_ids(fault)
        for link_id in links:
            self.link_effect(link_id, "down", self._window(fault), fault)
        self.link_drop(links, fault, fault.params.get("start_s", 0.0))

    def link_flap(self, fault: Fault) -> None:
        p = fault.params
        links = self.link_ids(fault)
        for link_id in links:
            self.link_effect(link_id, "flap", p, fault)
        self.link_drop(links, fault, p.get("start_s", 0.0), p.get("period_s", 60.0), p.get("end_s"))

    def link_degraded(self, fault: Fault) -> None:
        for link_id in self.link_ids(fault):
            self.link_effect(link_id, "bandwidth", fault.params, fault)

    def switch_part_failed(self, fault: Fault) -> None:
        wanted = ("switch_chip",) if fault.kind == "switch_chip_failed" else ("switch_tray",)
        part = self.part(fault, wanted)
        for link_id in part.links:
            self.link_effect(link_id, "down", self._window(fault), fault)
        self.link_drop(part.links, fault, fault.params.get("start_s", 0.0))

    def slow_gpu(self, fault: Fault) -> None:
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "slow", fault.params, fault)

    def throttle(self, fault: Fault) -> None:
        reason = "thermal" if fault.kind == "thermal_throttle" else "power_brake"
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "throttle", {"reason": reason, **fault.params}, fault)

    def ecc(self, fault: Fault) -> None:
        p = fault.params
        start = p.get("start_s", 0.0)
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "ecc", p, fault)
            if p.get("uncorrected", 0) > 0:
                self.xid(gpu_id, XID_DBE, start, fault)
                self.gpu_effect(gpu_id, "row_remap", {"start_s": start, "uncorrected_rows": p["uncorrected"], "pending": True}, fault)

    def row_remap(self, fault: Fault) -> None:
        p = fault.params
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "row_remap", p, fault)
            self.xid(gpu_id, XID_ROW_REMAP_FAILURE if p.get("failure") else XID_ROW_REMAP, p.get("start_s", 0.0), fault)

    def logged_xid(self, fault: Fault) -> None:
        p = fault.params
        for gpu_id in self.gpu_ids(fault):
            self.xid(gpu_id, p["xid"], p.get("at_s", 0.0), fault, p.get("repeat_s"), p.get("count"),
                     recovery_action=p.get("recovery_action"), intr_info=p.get("intr_info"),
                     error_status=p.get("error_status"))

    def sdc(self, fault: Fault) -> None:
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "sdc", fault.params, fault)

    def gpu_lost(self, fault: Fault) -> None:
        start = fault.params.get("start_s", 0.0)
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "lost", {"start_s": start}, fault)
            self.xid(gpu_id, XID_FELL_OFF_BUS, start, fault)
            if self.model.is_nvl72:
                # Its links go with it; the lost GPU itself logged 79.
                for port in range(self.model.nvlink_ports):
                    link_id = self.model.link_id(self.rack, self.gpus[gpu_id].rack_index, port)
                    self.link_effect(link_id, "down", {"start_s": start}, fault)

    def gpu_hang(self, fault: Fault) -> None:
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "hang", {**self._window(fault), "nvml": fault.params.get("nvml", True)}, fault)

    def not_supported(self, fault: Fault) -> None:
        p = fault.params
        fields = []
        for name in p.get("fields", []):
            value = getattr(pynvml, name, None)
            if not name.startswith("NVML_FI_") or not isinstance(value, int):
                self._fail(fault, f"unknown NVML field {name!r}")
            fields.append(value)
        for name in p.get("calls", []):
            if not name.startswith("nvml") or not callable(getattr(pynvml, name, None)):
                self._fail(fault, f"unknown NVML call {name!r}")
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "not_supported", {"calls": p.get("calls", []), "fields": fields}, fault)

    def fabric_degraded(self, fault: Fault) -> None:
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "fabric", {"degraded_bw": True, **fault.params}, fault)

    def tray_unreachable(self, fault: Fault) -> None:
        tray = fault.target.split("/")[-1]
        if tray not in self.model.tray_names():
            self._fail(fault, f"unknown tray {fault.target!r}")
        self.unreachable.add(tray)

    # --- tray depth ------------------------------------------------------------------------------
    def hbm_bad_cells(self, fault: Fault) -> None:
        p = fault.params  # size_mib above 0: the schema's bound
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "hbm_bad_cells", {"offset_bytes": int(p["offset_gib"] * 2**30),
                                                      "size_bytes": max(1, int(p["size_mib"] * 2**20))}, fault)

    def firmware_mismatch(self, fault: Fault) -> None:
        if not self.model.is_nvl72:
            self._fail(fault, "an HGX rack is one server, with no other tray to differ from: firmware_mismatch is for NVL72 racks")
        tray = fault.target.split("/")[-1]
        if tray in self.model.switch_tray_names():
            if "switch_firmware" not in fault.params or "vbios" in fault.params:
                self._fail(fault, f"a switch tray ({tray}) has NVSwitch chips, no GPU: give switch_firmware, not vbios")
            self.switch_firmware[tray] = fault.params["switch_firmware"]
            return
        if tray not in self.model.compute_tray_names():
            self._fail(fault, f"unknown compute tray {fault.target!r}")
        if "vbios" not in fault.params or "switch_firmware" in fault.params:
            self._fail(fault, f"a compute tray ({tray}) has GPUs, no NVSwitch chip: give vbios, not switch_firmware")
        for gpu in self.gpus.values():
            if self.model.gpu_tray(gpu.rack_index) == tray:
                self.gpu_effect(gpu.id, "firmware", {"vbios": fault.params["vbios"]}, fault)

    def ecc_disabled(self, fault: Fault) -> None:
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "ecc_mode", {"enabled": False}, fault)

    def pcie_degraded(self, fault: Fault) -> None:
        if self.model.is_nvl72:
            self._fail(fault, "a GB200 GPU reaches its CPU over NVLink-C2C, not PCIe: pcie_degraded is for HGX racks")
        p = fault.params  # width, gen and the AER rates: the schema's choices and bounds
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "pcie", dict(p), fault)

    def deterministic_sdc(self, fault: Fault) -> None:
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "deterministic_sdc", {}, fault)

    def c2c_link_down(self, fault: Fault) -> None:
        if not self.model.is_nvl72:
            self._fail(fault, "an HGX GPU reaches its CPU over PCIe, not NVLink-C2C: c2c_link_down is for GB200 racks")
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "c2c_down", {}, fault)

    def link_totals(self, fault: Fault) -> None:
        for link_id in self.link_ids(fault):
            self.link_effect(link_id, "totals", fault.params, fault)

    def volatile_dbe(self, fault: Fault) -> None:
        # Counted from the start, with no XID and no row remap: what DCGM's volatile-DBE rule sees alone.
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "ecc", {"uncorrected": fault.params.get("count", 1)}, fault)

    def gpu_state(self, fault: Fault) -> None:
        """memory_unrepairable, inforom_invalid, power_unreadable: an effect of the same name."""
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, fault.kind, {}, fault)

    def imex_missing(self, fault: Fault) -> None:
        tray = fault.target.split("/")[-1]
        if tray not in self.model.compute_tray_names():
            self._fail(fault, f"unknown compute tray {fault.target!r}")
        self.domain.setdefault("imex_missing", []).append(tray)

    def fabric_clique(self, fault: Fault) -> None:
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "fabric", {"clique_id": fault.params["clique_id"]}, fault)

    def nccl_fallback(self, fault: Fault) -> None:
        self.domain["nccl_fallback"] = True

    def switch_chip_degraded(self, fault: Fault) -> None:
        for link_id in self.part(fault, ("switch_chip",)).links:
            self.link_effect(link_id, "bandwidth", fault.params, fault)

    def sxid(self, fault: Fault) -> None:
        """An HGX baseboard switch chip's SXid: a line in its host's kernel log, from the
        nvidia-nvswitch device of the chip's number (opsctl's nvsN is the driver's
        nvidia-nvswitchN, probes/nvswitch_sxids.py). A GB200 rack's switch chips are in switch
        trays, whose kernel log the probe does not read: refused there."""
        if self.model.is_nvl72:
            self._fail(fault, "sxid is an HGX fault: on an NVL72 rack the switch chips are in the switch trays")
        part = self.part(fault, ("switch_chip",))
        number = int(part.id.rsplit("/nvs", 1)[1])
        p = fault.params
        params = {"switch": number, "pci_bus_id": f"0000:{0xC0 + number:02x}:00.0",  # a simulated bus, one per chip
                  "sxid": p["sxid"], "fatal": p.get("fatal"), "at_s": p.get("at_s", 0.0), "text": p.get("text")}
        self.host_effects.setdefault(part.tray or HGX_TRAY, []).append(
            Effect("sxid", {key: value for key, value in params.items() if value is not None or key == "fatal"},
                   source=fault.label))

    def driver_reload(self, fault: Fault) -> None:
        """The driver's load line in a compute tray's host kernel log at at_s (probes.kernel_history
        keeps only what came after the last one)."""
        tray = fault.target.split("/")[-1]
        if tray not in self.model.compute_tray_names():
            self._fail(fault, f"unknown compute tray {fault.target!r}")
        self.host_effects.setdefault(tray, []).append(Effect("driver_reload", {"at_s": fault.params["at_s"]},
                                                             source=fault.label))

    def gpu_reset(self, fault: Fault) -> None:
        """The reset job's journal line at at_s (probes.kernel_history clears what came before it)."""
        for gpu_id in self.gpu_ids(fault):
            self.gpu_effect(gpu_id, "gpu_reset", {"at_s": fault.params["at_s"],
                                                  "success": fault.params.get("success", True)}, fault)

    def bad_pins(self, fault: Fault) -> None:
        p = fault.params
        part = self.part(fault)
        candidates = sorted(part.links)
        if not candidates:
            self._fail(fault, f"{part.id} carries no links")
        if "links" in p:
            n = min(p["links"], len(candidates))
        else:
            n = max(1, round(p.get("fraction", 0.1) * len(candidates)))
        rng = seeded_random(self.scenario.seed, fault.index, part.id, "pins")
        chosen = sorted(rng.sample(candidates, n))
        if p.get("down"):
            window: dict[str, Any] = {k: p[k] for k in ("start_s", "end_s") if k in p}
            for link_id in chosen:
                self.link_effect(link_id, "down", window, fault)
            self.link_drop(chosen, fault, p.get("start_s", 0.0))
            return
        rates = {k: v for k, v in p.items() if k not in ("links", "fraction", "down")}
        if not any(k in rates for k in (*DL_RATES, "symbol_per_s", "ber", *NVLINK5_RATES)):
            rates.update(BAD_PINS_DL_RATES if SIM_SKUS[self.model.sku].nvlink_dl_counters else BAD_PINS_NVLINK5_RATES)
        for link_id in chosen:
            self.link_effect(link_id, "errors", rates, fault)


# Each fault kind of the scenario format (opsctl/simulation/scenario.py FAULT_KINDS) and its handler.
FAULT_HANDLERS: dict[str, Callable[[_Builder, Fault], None]] = {
    "link_errors": _Builder.link_errors,
    "link_down": _Builder.link_down,
    "link_flap": _Builder.link_flap,
    "link_degraded": _Builder.link_degraded,
    "bad_pins": _Builder.bad_pins,
    "switch_chip_failed": _Builder.switch_part_failed,
    "switch_tray_failed": _Builder.switch_part_failed,
    "slow_gpu": _Builder.slow_gpu,
    "thermal_throttle": _Builder.throttle,
    "power_brake": _Builder.throttle,
    "ecc": _Builder.ecc,
    "row_remap": _Builder.row_remap,
    "xid": _Builder.logged_xid,
    "sdc": _Builder.sdc,
    "gpu_lost": _Builder.gpu_lost,
    "gpu_hang": _Builder.gpu_hang,
    "not_supported": _Builder.not_supported,
    "fabric_degraded": _Builder.fabric_degraded,
    "tray_unreachable": _Builder.tray_unreachable,
    "imex_missing": _Builder.imex_missing,
    "fabric_clique": _Builder.fabric_clique,
    "nccl_fallback": _Builder.nccl_fallback,
    "switch_chip_degraded": _Builder.switch_chip_degraded,
    "sxid": _Builder.sxid,
    "driver_reload": _Builder.driver_reload,
    "gpu_reset": _Builder.gpu_reset,
    "hbm_bad_cells": _Builder.hbm_bad_cells,
    "firmware_mismatch": _Builder.firmware_mismatch,
    "ecc_disabled": _Builder.ecc_disabled,
    "pcie_degraded": _Builder.pcie_degraded,
    "deterministic_sdc": _Builder.deterministic_sdc,
    "c2c_link_down": _Builder.c2c_link_down,
    "link_totals": _Builder.link_totals,
    "volatile_dbe": _Builder.volatile_dbe,
    "memory_unrepairable": _Builder.gpu_state,
    "inforom_invalid": _Builder.gpu_state,
    "power_unreadable": _Builder.gpu_state,
}


def dl_counters_gone(sku: str, what: str) -> str:
    """Why a data-link counter's key is refused on a rack of this SKU, in words."""
    return (f"data-link (DL) counter {what}, but NVML removed the DL counters on Blackwell (NVML API Reference, "
            f"Change Log, v560 to v565) and this rack's {sku} GPUs answer NOT_SUPPORTED for them")


def compile_rack_spec(scenario: Scenario, topology: Topology) -> RackSpec:
    """The RackSpec of `topology`'s rack with `scenario`'s faults in it."""
    if scenario.rack is not None and scenario.rack != topology.rack:
        raise InputError(f"{scenario.source}: written for rack {scenario.rack}, not {topology.rack}")
    noisy = [key for key in DL_RATES if key in scenario.noise]
    if noisy and not SIM_SKUS[topology.model.sku].nvlink_dl_counters:
        raise InputError(f"{scenario.source}: noise: {', '.join(noisy)}: {dl_counters_gone(topology.model.sku, 'rates')}; "
                         f"on NVLink 5 every counted error fails (DCGM MonitorNVLink5Fields), so a healthy link's "
                         f"in-spec noise is its BER alone (ber, below 1e-12)")
    builder = _Builder(scenario, topology)
    trays = builder.build_hardware()
    for fault in scenario.faults:
        builder.apply(fault)
    for tray in trays:
        tray.unreachable = tray.name in builder.unreachable
        tray.switch_firmware = builder.switch_firmware.get(tray.name)
        tray.effects = builder.host_effects.get(tray.name, [])
    sku = topology.model.sku
    return RackSpec(
        rack=topology.rack,
        model=topology.model.name,
        sku=sku,
        seed=scenario.seed,
        chassis_serial=str(1821124000000 + int(_hex(scenario.seed, topology.rack, "chassis", length=8), 16) % 10**6),
        cluster_uuid=_hex(scenario.seed, topology.rack, "cluster"),
        clique_id=int(_hex(scenario.seed, topology.rack, "clique", length=4), 16) % 32767 + 1,
        driver_version=SIM_SKUS[sku].driver_version,
        noise=dict(scenario.noise),
        domain=builder.domain,
        trays=trays,
    )
