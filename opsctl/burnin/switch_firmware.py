"""Every switch tray of a rack on one NVSwitch firmware: every chip of the rack runs the firmware
most of them run, or its switch tray fails `switch_tray.firmware` with what it should run. Judged
across the rack, as the GPUs' configuration is (opsctl/burnin/configuration.py): no switch tray
sees the others.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from opsctl.burnin.checks import Check
from opsctl.burnin.rack_evidence import RackEvidence, RackFindings
from probes.sku_references import load_references


def rack_checks(evidence: RackEvidence) -> RackFindings:
    return RackFindings(switch_firmware_checks(evidence.switch_ports))


def switch_firmware_checks(switch_ports: dict[tuple[str, int], dict[str, Any]]) -> list[Check]:
    """switch_ports: {(switch chip id, port): its row of its switch tray's document}, whose
    `firmware` is its chip's. One check per switch tray whose chips reported a firmware."""
    rule = load_references().rules["switch_firmware_rack"]
    chips = {chip: row["firmware"] for (chip, _), row in switch_ports.items() if isinstance(row.get("firmware"), str)}
    if len({chip.rsplit("/", 1)[0] for chip in chips}) < 2:
        return []  # one switch tray (or none) reported: nothing to compare it with
    seen = Counter(chips.values())
    (usual, count), = seen.most_common(1)
    majority = count * 2 > len(chips)
    by_tray: dict[str, dict[str, str]] = {}
    for chip, firmware in sorted(chips.items()):
        tray, name = chip.rsplit("/", 1)
        by_tray.setdefault(tray, {})[name] = firmware
    checks: list[Check] = []
    for tray, firmware in sorted(by_tray.items()):
        odd = {name: version for name, version in firmware.items() if version != usual}
        if not majority:
            verdict, reason = "incomplete", (f"no NVSwitch firmware most of the rack's {len(chips)} switch chips share "
                                             f"({', '.join(f'{v}: {n}' for v, n in seen.most_common())})")
        elif odd:
            verdict, reason = "fail", (f"{', '.join(f'{name} runs {version}' for name, version in odd.items())} where {count} "
                                       f"of the rack's {len(chips)} switch chips run {usual}: update the switch tray's "
                                       f"NVSwitch firmware to {usual}")
        else:
            verdict, reason = "pass", f"{len(firmware)} switch chips run {usual}, as {count} of the rack's {len(chips)}"
        checks.append(Check("switch_tray.firmware", tray, verdict, odd or dict(firmware), usual if majority else None,
                            "firmware", "!=", rule["source"], reason))
    return checks
