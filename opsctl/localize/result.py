"""The localization result for one rack: the suspects, each with the evidence that
points at it, its repair action, MTTR, blast radius and runbook."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from opsctl.localize.evidence import COUNTERS, NVLINK_XIDS, SOURCE, XID_SOURCE, gpu_xid, link_rules
from opsctl.localize.gpu_faults import worst_fault
from opsctl.localize.measured import JUDGED_BASEBOARD, JUDGED_TRAY, TRAY_KINDS, judged_trays, tray_part
from opsctl.localize.parts import PRIOR_SOURCE, TEMPLATE_RACK
from opsctl.localize.search import DECIDE
from opsctl.runbooks import runbook_for
from probes.nvlink_ber import decode_ber, symbol_ber_exceeded

if TYPE_CHECKING:
    from opsctl.localize.parts import PartIndex
    from opsctl.localize.search import Evidence, Slot
    from opsctl.localize.snapshot import SideReadings
    from opsctl.mttr import MttrModel, Repair

COUNTER_WORDS = {"crc_errors": "CRC", "replay_errors": "replays", "recovery_errors": "recoveries",
                 "symbol_errors": "symbol errors", "link_down_events": "drops", "rcv_errors": "receive errors",
                 "malformed_packet_errors": "malformed packets", "buffer_overrun_errors": "buffer overruns",
                 "local_link_integrity_errors": "link integrity errors", "effective_errors": "effective errors",
                 "recovery_successful": "recoveries", "rcv_remote_errors": "remote errors",
                 "rcv_general_errors": "general errors", "recovery_events": "recovery events"}
EVIDENCE_LINKS_SHOWN = 5  # the worst links named in a suspect's evidence; the rest are counted
JUDGEMENT = {
    "judged": "posterior probability that this part is the fault explaining its symptoms, given the other suspects",
    "threshold": DECIDE,
    "source": f"{SOURCE}; {PRIOR_SOURCE}; a further fault is declared when its posterior exceeds {DECIDE}",
}


JUDGED = {
    "judged": "the GPU failed rulebook checks of its own on its tray (failed_checks in its evidence)",
    "threshold": None,
    "source": "probes/references/rules.yaml and the GPU model's reference figures, as each failed check names",
}


def gpu_repair_context(xid_codes: Iterable[int], lost: bool, failed_checks: Sequence[dict[str, Any]] = ()) -> str | None:
    """How a GPU suspected from its own symptoms is repaired first: the repair of the worst
    fault its failed checks show (gpu_faults.py), else the XID catalog's action."""
    fault = worst_fault(failed_checks)
    contexts = {known.repair for known in map(gpu_xid, xid_codes) if known is not None}
    if "rma" in contexts or (fault and fault.context == "rma"):
        return "rma"
    # XID 79 (RESTART_BM) or a GPU that stopped answering (GPU_IS_LOST): reboot the machine; a
    # reboot resets every GPU of the machine, so it covers a reset-grade fault too.
    reboot = "reboot" in contexts or lost or (fault is not None and fault.context == "reboot")
    if reboot and (fault is None or fault.context in ("reset", "reboot")):
        return "reboot"
    if fault is not None:
        return fault.context
    return "reset" if contexts else None


class RackResult:
    """Builds the result document of one rack from its evidence and the search's slots."""

    def __init__(self, rack: str, index: PartIndex, evidence: Evidence, details: LinkDetails,
                 mttr: MttrModel | None) -> None:
        self.rack = rack
        self.index = index
        self.evidence = evidence
        self.details = details  # LinkDetails: readings to quote, GPUs with NVLink XIDs, lost GPUs
        self.mttr = mttr
        self.repairs: list[Repair] = []  # of the declared faults, for what they take out together

    def full(self, relative_id: str) -> str:
        return f"{self.rack}/{relative_id}"

    def suspect(self, slot_part: int, score: float, q: float | None = None, alternative_to: str | None = None,
                judged: bool = False) -> dict[str, Any]:
        index = self.index
        kind = index.part_kinds[slot_part]
        part_id = index.part_ids[slot_part]
        links = index.part_links(slot_part)
        log_r = self.evidence.log_r[links]
        bad = links[np.argsort(-log_r)][: int(np.sum(log_r > 0))]
        read = int(np.sum(self.details.observed[links]))
        gpu = index.gpu_index.get(part_id) if kind == "gpu" else None
        xids = self.details.gpu_xid_codes.get(gpu, []) if gpu is not None else []
        lost = gpu in self.details.lost if gpu is not None else False
        # A tray's own failed checks are the part that holds them: the tray, or an HGX server's baseboard.
        failed = self.details.gpu_checks.get(gpu, []) if gpu is not None else \
            [c for tray, checks in self.details.tray_checks.items() if tray_part(index, tray) == slot_part for c in checks]
        tray_fault = worst_fault(failed) if kind != "gpu" else None  # a tray's own failed check may name its repair
        context = gpu_repair_context(xids, lost, failed) if kind == "gpu" else tray_fault.context if tray_fault else None
        # A GPU named on its NVLink XIDs alone, no link of its own failing: the NVLink workflow's
        # first step, a GPU reset; a part is replaced only if the links still fail after it.
        nvlink_only = kind == "gpu" and context is None and not len(bad) and any(c in NVLINK_XIDS for c in xids)
        if nvlink_only:
            context = "nvlink"
        # A link named only for the totals it arrived with, clean in the window: NVIDIA's first
        # step, a reset of its GPU (which clears them), then a burn-in; a part only if errors return.
        if kind in ("link", "cable") and len(bad) and set(bad.tolist()) <= self.details.arrival_only:
            context = "reset"
        repair = self.mttr.repair(f"{TEMPLATE_RACK}/{part_id}", index.topology, context) if self.mttr else None
        if repair is not None and alternative_to is None:
            self.repairs.append(repair)
        entry: dict[str, Any] = {
            "component": self.full(part_id),
            "kind": kind,
            "score": round(score, 4),
            "links": [self.full(index.link_ids[link]) for link in bad],
            "links_through": len(links),
            "links_read": read,
        }
        if q is not None:
            entry["share_of_links_bad"] = round(q, 3)
        if index.part_same_as[slot_part]:  # a link's cables: no reading tells them from the link
            entry["same_links_as"] = [self.full(other) for other in index.part_same_as[slot_part]]
        if alternative_to is not None:
            entry["alternative_to"] = alternative_to
        if repair is not None:
            entry.update({
                "action": repair.action.action,
                "repair": repair.action.name,
                "mttr_hours": round(repair.mttr_hours, 2),
                "mttr_steps": repair.action.hours,
                "out_of_service": repair.action.out_of_service,
                "gpus_idled": repair.gpus_idled,
                "gpus_lost_to_training": repair.gpus_lost_to_training,
                "repair_source": repair.action.source,
            })
        # The runbook of its most telling GPU-fault XID, else of its kind (an NVLink XID on a
        # GPU blamed for its links is the link's symptom, not the GPU's workflow).
        telling = sorted({c for c in xids if gpu_xid(c) is not None},
                         key=lambda c: -gpu_xid(c).log_ratio)  # type: ignore[union-attr]  # codes it knows, filtered above
        fault = worst_fault(failed)
        if nvlink_only:
            telling = sorted({c for c in xids if c in NVLINK_XIDS})
        entry["runbook"] = (runbook_for(kind=fault.kind) if fault and not telling else None) or runbook_for(kind=kind, xids=telling)
        entry["evidence"] = self.describe(bad, xids, lost, gpu, failed)
        judgement = (JUDGED_TRAY if kind in TRAY_KINDS else JUDGED_BASEBOARD if kind == "baseboard" else JUDGED) \
            if judged else JUDGEMENT
        entry["judgement"] = {**judgement, "value": entry["score"]}
        return entry

    def describe(self, bad_links: np.ndarray, xids: list[int], lost: bool, gpu: int | None,
                 failed: Sequence[dict[str, Any]] = ()) -> list[str]:
        lines = [f"failed {c['check']}: {c['reason']}" if c.get("reason") else f"failed {c['check']}" for c in failed]
        for link in bad_links[:EVIDENCE_LINKS_SHOWN]:
            lines.append(f"{self.full(self.index.link_ids[link])}: {self.details.reading(link)}")
        if len(bad_links) > EVIDENCE_LINKS_SHOWN:
            lines.append(f"and {len(bad_links) - EVIDENCE_LINKS_SHOWN} more link(s) with symptoms")
        for code in sorted(set(xids)):
            known = gpu_xid(code)
            if known is not None:
                lines.append(f"XID {code} ({known.name}) — {XID_SOURCE}")
        if lost:
            lines.append("the GPU did not answer while the rest of its tray did")
        if gpu is not None and gpu in self.details.nvlink_gpus:
            lines.append("logged an NVLink XID (NVIDIA's NVLink workflow: a problem on its own links)")
        return lines

    def repair_plan(self) -> dict[str, Any] | None:
        """What all the declared faults' repairs take out of service together (None without a
        repair model): the GPUs, against the rack's hot spares, and what that means."""
        if not self.mttr:
            return None
        plan = self.mttr.together(self.repairs, self.index.topology)
        plan["gpu_ids"] = [self.full(gpu.split("/", 1)[1]) for gpu in plan["gpu_ids"]]
        return plan

    def judged_gpus(self, slots: Sequence[Slot]) -> list[int]:
        """GPUs that failed rulebook checks of their own on their trays and that no declared
        part (the GPU itself, its tray, its baseboard) already names: faults by judgment, not
        inference, so each is a suspect of its own with score 1, whatever the other faults."""
        index = self.index
        covered: set[int] = set()
        for slot in slots:
            if index.part_kinds[slot.part] in ("gpu", "compute_tray", "baseboard"):
                covered.update(index.part_gpus(slot.part).tolist())
        return [gpu for gpu in sorted(self.details.gpu_checks) if gpu not in covered and index.gpu_part[gpu] >= 0]

    def document(self, slots: list[Slot], window_s: float, unread: list[str], source: str,
                 taken: str | None = None) -> dict[str, Any]:
        suspects = [self.suspect(s.part, s.score, s.q) for s in slots]
        judged = [int(self.index.gpu_part[gpu]) for gpu in self.judged_gpus(slots)]
        suspects += [self.suspect(part, 1.0, judged=True) for part in judged]
        declared = [s.part for s in slots] + judged
        suspects += [self.suspect(part, 1.0, judged=True) for part in judged_trays(self.index, declared, self.details.tray_checks)]
        for s in slots:
            for part, score in s.alternatives:
                suspects.append(self.suspect(part, score, alternative_to=self.full(self.index.part_ids[s.part])))
        faulty = any("alternative_to" not in s for s in suspects)
        status = "faulty" if faulty else ("incomplete" if unread else "healthy")
        details = self.details
        return {
            "rack": self.rack,
            "model": self.index.model.name,
            "healthy": status == "healthy",
            "status": status,
            "window_seconds": window_s,
            "taken": taken,
            "suspects": suspects,
            "observed": {
                "links": int(np.sum(details.observed)),
                "links_total": self.index.links,
                "switch_side_links": int(details.switch_observed),
                "gpus_answered": int(details.gpus_answered),
                "gpus_total": len(self.index.gpu_ids),
            },
            "unread_trays": unread,
            "repair_plan": self.repair_plan(),
            "xids": {
                "nvlink_xid_gpus": [self.full(self.index.gpu_ids[g]) for g in sorted(details.nvlink_gpus)],
            },
            "source": source,
        }


class LinkDetails:
    """The readings behind the evidence, kept to quote them in a suspect's evidence."""

    def __init__(self, observation_sides: dict[str, SideReadings], window_s: float,
                 gpu_xids: dict[int, list[tuple[int, float | None]]], nvlink_gpus: set[int], lost: Iterable[int],
                 gpus_answered: int, gpu_checks: dict[int, list[dict[str, Any]]] | None = None,
                 link_checks: dict[int, list[dict[str, Any]]] | None = None,
                 tray_checks: dict[str, list[dict[str, Any]]] | None = None, arrival_only: set[int] | None = None) -> None:
        self.sides = observation_sides
        self.window_s = window_s
        self.observed = np.zeros_like(next(iter(observation_sides.values())).observed)
        for readings in observation_sides.values():
            self.observed |= readings.observed
        self.switch_observed = int(np.sum(observation_sides["switch"].observed)) if "switch" in observation_sides else 0
        self.gpu_xid_codes = {gpu: [code for code, _ in events] for gpu, events in gpu_xids.items()}
        self.nvlink_gpus = nvlink_gpus
        self.gpu_checks = gpu_checks or {}
        self.link_checks = link_checks or {}  # link index -> the checks it failed on its own measurement (measured.py)
        self.tray_checks = tray_checks or {}  # tray -> likewise
        self.arrival_only = arrival_only or set()  # links failed only on their totals since the driver loaded
        self.lost = set(lost)
        self.gpus_answered = gpus_answered

    def reading(self, link: int) -> str:
        """A link's readings in words: 'CRC 2472, replays 11 at the GPU end; … in 60 s'."""
        parts: list[str] = []
        symbol_rule = link_rules()[2]
        for side, readings in self.sides.items():
            if not readings.observed[link]:
                continue
            values = [f"{COUNTER_WORDS[name]} {int(readings.counts[link, i])}" for i, name in enumerate(COUNTERS)
                      if not np.isnan(readings.counts[link, i]) and readings.counts[link, i] > 0]
            if readings.state[link] == 1:
                values.insert(0, "down")
            if not np.isnan(readings.ber[link]):
                values.append(f"BER {readings.ber[link]:.0e}")
            symbol = readings.symbol_ber_raw[link]
            if not np.isnan(symbol) and symbol_ber_exceeded(int(symbol), symbol_rule["floor_exponent"], symbol_rule["floor_mantissa"]):
                values.append(f"symbol BER {decode_ber(symbol):.0e}")
            parts.append(f"{', '.join(values) or 'clean'} at the {side.upper() if side == 'gpu' else side} end")
        parts += [f"failed {c['check']}" + (f" ({c['reason']})" if c.get("reason") else "") for c in self.link_checks.get(link, [])]
        return f"{'; '.join(parts)}, in {self.window_s:g} s" if parts else "judged failing"
