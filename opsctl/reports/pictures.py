"""The report's pictures, as inline SVG drawn from a burn-in summary: the rack (compute and
switch trays), the link heatmap (GPU × switch chip) and per-GPU bar charts.

Plain SVG strings: no plotting library, nothing fetched, and every cell carries a <title>
so hovering it in a browser names the part and its reading.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from opsctl.rack_models import model_named
from opsctl.runs.tray_names import tray_label
from opsctl.runs.verdicts import worst

if TYPE_CHECKING:
    from opsctl.rack_models import RackModel

# One colour per verdict, the same in every picture and table of the report.
VERDICT_COLOURS = {
    "pass": "#2f9e44",
    "warn": "#f08c00",
    "fail": "#e03131",
    "incomplete": "#9c36b5",
    "unobserved": "#ced4da",
}
INK = "#212529"
MUTED = "#868e96"
# GB200 NVL72: compute trays 1–10 sit above the switch trays and 11–18 below (docs/topology.md, the cabling model).
NVL72_TRAYS_ABOVE_SWITCHES = 10


def _rect(x: float, y: float, w: float, h: float, fill: str, title: str, extra: str = "") -> str:
    return (f'<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{fill}" {extra}>'
            f"<title>{escape(title)}</title></rect>")


def _text(x: float, y: float, text: object, size: float = 11, anchor: str = "start", fill: str = INK,
          extra: str = "") -> str:
    return (f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" fill="{fill}" {extra}>'
            f"{escape(str(text))}</text>")


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(label)}" '
            f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'font-family="DejaVu Sans, Arial, sans-serif">{"".join(body)}</svg>')


def _chip_cell(chip: str, own_verdicts: list[str], links: list[dict[str, Any]]) -> tuple[str, str, str]:
    """A switch chip coloured by its own checks; its failing links are the links' own (heatmap),
    and the title counts them."""
    observed = [link for link in links if link["verdict"] != "unobserved"]
    if own_verdicts:
        verdict = worst(own_verdicts)
    else:
        verdict = "pass" if observed else "unobserved"
    failing = sum(link["verdict"] == "fail" for link in links)
    title = f"{chip}: {verdict}; {failing} of its {len(links)} links fail (each drawn in the link heatmap)"
    return chip.rsplit("/", 1)[1], verdict, title


def rack_view(summary: dict[str, Any]) -> str:
    """The rack as it stands: trays top to bottom, GPUs and switch chips coloured by verdict."""
    model = model_named(summary["model"])
    gpus = {gpu["id"]: gpu for gpu in summary["gpus"]}
    trays = {tray["tray"]: tray for tray in summary["trays"]}
    links_by_chip: dict[str, list[dict[str, Any]]] = {}
    for link in summary["links"]:
        links_by_chip.setdefault(link["switch"], []).append(link)
    own: dict[str, list[str]] = {}  # a part's own checks: a chip is red for a failure of its own, not for a link's
    for check in summary.get("checks") or []:
        own.setdefault(check["component"], []).append(check["verdict"])
    rack = summary["rack"]
    if model.is_nvl72:
        compute = model.compute_tray_names()
        order = compute[:NVL72_TRAYS_ABOVE_SWITCHES] + model.switch_tray_names() + compute[NVL72_TRAYS_ABOVE_SWITCHES:]
    else:
        order = model.compute_tray_names()
    row_h, box_w, left = 24, 64, 70
    per_row = max(model.gpus_per_tray, model.chips_per_switch_tray)
    width = left + per_row * (box_w + 4) + 170
    body: list[str] = []
    y = 8
    for name in order:
        tray = trays.get(name, {"status": "missing", "reason": "not in the inventory"})
        switch = model.is_switch_tray(name)
        if switch:
            tray_index = int(name[2:])
            parts = [model.switch_chip_id(rack, model.chips_per_switch_tray * (tray_index - 1) + k)
                     for k in range(model.chips_per_switch_tray)]
            cells = [_chip_cell(part, own.get(part, []), links_by_chip.get(part, [])) for part in parts]
            background = "#e7f5ff"
        else:
            first = model.compute_tray_names().index(name) * model.gpus_per_tray
            parts = [model.gpu_id(rack, first + k) for k in range(model.gpus_per_tray)]
            cells = []
            for part in parts:
                gpu = gpus.get(part, {"verdict": "unobserved"})
                cells.append((part.rsplit("/", 1)[1], gpu["verdict"], f"{part}: {gpu['verdict']}"))
            background = "#f8f9fa"
        status = tray.get("status")
        outline = VERDICT_COLOURS["incomplete"] if status != "complete" else "#adb5bd"
        dash = 'stroke-dasharray="4 3"' if status != "complete" else ""
        body.append(f'<rect x="2" y="{y}" width="{width - 4}" height="{row_h - 2}" rx="3" fill="{background}" '
                    f'stroke="{outline}" stroke-width="1.5" {dash}><title>{escape(f"{model.tray_id(rack, name)}: {status}")}</title></rect>')
        body.append(_text(10, y + 15, tray_label(rack, name), 12, extra='font-weight="bold"'))
        for k, (label, verdict, title) in enumerate(cells):
            x = left + k * (box_w + 4)
            body.append(_rect(x, y + 3, box_w, row_h - 8, VERDICT_COLOURS[verdict], title, 'rx="2"'))
            body.append(_text(x + box_w / 2, y + 15, label, 10, "middle", "#fff" if verdict != "unobserved" else INK))
        note = "switch tray" if switch else ("compute tray" if model.is_nvl72 else "HGX baseboard")
        if status != "complete":
            note = f"{status}: {tray.get('reason') or ''}"[:40]
        body.append(_text(left + per_row * (box_w + 4) + 6, y + 15, note, 10, fill=MUTED))
        y += row_h
    if not model.is_nvl72:  # the baseboard's NVSwitch chips, below its GPUs
        for k in range(model.switch_chips):
            chip = model.switch_chip_id(rack, k)
            _, verdict, title = _chip_cell(chip, own.get(chip, []), links_by_chip.get(chip, []))
            x = left + k * (box_w + 4)
            body.append(_rect(x, y + 3, box_w, row_h - 8, VERDICT_COLOURS[verdict], title, 'rx="2"'))
            body.append(_text(x + box_w / 2, y + 15, chip.rsplit("/", 1)[1], 10, "middle", "#fff"))
        body.append(_text(10, y + 15, "nvswitch", 11, extra='font-weight="bold"'))
        y += row_h
    return _svg(width, y + 6, body, f"{rack}: trays, GPUs and switch chips by verdict")


HEATMAP_CELL_W = 18
HEATMAP_CELL_H = 9
HEATMAP_LEFT = 58
HEATMAP_TOP = 92


def heatmap(summary: dict[str, Any]) -> str:
    """Every link: one row per GPU (rack GPU index), one column per GPU port = switch chip."""
    model = model_named(summary["model"])
    rack = summary["rack"]
    links = {(link_index(model, link), link["port"]): link for link in summary["links"]}
    columns, rows = model.nvlink_ports, model.gpus
    width = HEATMAP_LEFT + columns * HEATMAP_CELL_W + 10
    height = HEATMAP_TOP + rows * HEATMAP_CELL_H + 10
    body: list[str] = []
    chip_of_port: dict[int, str | None] = {}
    for link in summary["links"]:
        chip_of_port.setdefault(link["port"], link["switch"].split("/", 1)[1] if model.is_nvl72 else None)
    for port in range(columns):
        x = HEATMAP_LEFT + port * HEATMAP_CELL_W + HEATMAP_CELL_W / 2
        label = f"{port} {chip_of_port.get(port) or ''}".strip()
        body.append(_text(x + 3, HEATMAP_TOP - 6, label, 9, extra=f'transform="rotate(-70 {x + 3} {HEATMAP_TOP - 6})"'))
    for row in range(rows):
        y = HEATMAP_TOP + row * HEATMAP_CELL_H
        gpu_id = model.gpu_id(rack, row)
        if row % model.gpus_per_tray == 0:
            tray = model.gpu_tray(row)
            middle = y + model.gpus_per_tray * HEATMAP_CELL_H / 2 + 3  # the label sits in the middle of its tray's rows
            body.append(_text(4, middle if model.is_nvl72 else y + 8, tray if model.is_nvl72 else gpu_id.rsplit("/", 1)[1], 9))
            if row:
                body.append(f'<line x1="{HEATMAP_LEFT - 2}" y1="{y}" x2="{width - 10}" y2="{y}" stroke="#fff" stroke-width="2"/>')
        elif not model.is_nvl72:
            body.append(_text(4, y + 8, gpu_id.rsplit("/", 1)[1], 9))
        for port in range(columns):
            link = links.get((row, port))
            verdict = link["verdict"] if link else "unobserved"
            title = f"{link['id']} → {link['switch']} port {link['switch_port']}: {verdict}" if link else f"{gpu_id} port {port}"
            if link and link.get("reasons"):
                title += " — " + "; ".join(link["reasons"])
            body.insert(0, _rect(HEATMAP_LEFT + port * HEATMAP_CELL_W, y, HEATMAP_CELL_W - 1, HEATMAP_CELL_H - 1,
                                 VERDICT_COLOURS[verdict], title, f'data-link="{escape(link["id"]) if link else ""}"'))
    body.append(_text(HEATMAP_LEFT, 12, "GPU port → switch chip (port p goes to chip p)" if model.is_nvl72 else "GPU port",
                      10, fill=MUTED))
    return _svg(width, height, body, f"{rack}: {rows} × {columns} NVLink heatmap")


def link_index(model: RackModel, link: dict[str, Any]) -> int:
    """The heatmap row of a link: its GPU's rack index."""
    gpu = link["gpu"]
    local = int(gpu.rsplit("gpu", 1)[1])
    if not model.is_nvl72:
        return local
    tray = int(gpu.split("/ct", 1)[1][:2])
    return (tray - 1) * model.gpus_per_tray + local


def tick_step(span: float, intervals: int = 5) -> float:
    """A round step (1, 2, 2.5 or 5 × 10^k) that cuts `span` into about `intervals` parts."""
    raw = span / intervals if span > 0 else 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)


def bar_chart(title: str, unit: str, bars: Sequence[tuple[str, float | None, str]], median: float | None = None,
              threshold: float | None = None) -> str:
    """bars: [(label, value or None, verdict)]; a line at the rack median and at the threshold,
    named in the right margin.

    The axis starts at zero, so a bar's height is its value: an axis cut above zero would make a
    GPU 5% slower look half as fast. The median and threshold lines show the small differences."""
    values = [v for _, v, _ in bars if v is not None]
    if not values:
        return ""
    # Bars share about 640 px: 8 px each for a rack of 72, wider for a server of 8.
    bar_w = max(6, min(36, 640 // max(len(bars), 1) - 2))
    gap, left, top, plot_h = max(2, bar_w // 4), 52, 22, 150
    plot_right = left + len(bars) * (bar_w + gap)
    width = max(plot_right + 130, 380)
    marks = [v for v in (threshold, median) if v is not None]
    low = min([0.0] + values + marks)  # 0, unless a value is below it
    step = tick_step(max(values + marks) * 1.02 - low)
    low = math.floor(low / step) * step
    high = low + step * max(1, math.ceil((max(values + marks) * 1.02 - low) / step))
    scale = plot_h / (high - low)

    def y_of(value: float) -> float:
        return top + plot_h - (value - low) * scale

    body = [_text(left, 14, f"{title} ({unit})", 11, extra='font-weight="bold"')]
    for k in range(round((high - low) / step) + 1):
        tick = low + k * step
        y = y_of(tick)
        body.append(f'<line x1="{left - 4}" y1="{y:.1f}" x2="{plot_right}" y2="{y:.1f}" stroke="#e9ecef"/>')
        body.append(_text(left - 6, y + 4, f"{tick:g}", 9, "end", MUTED))
    for k, (label, value, verdict) in enumerate(bars):
        x = left + k * (bar_w + gap)
        if value is None:
            body.append(_rect(x, top + plot_h - 4, bar_w, 4, VERDICT_COLOURS["unobserved"], f"{label}: not measured"))
            continue
        y, zero = y_of(value), y_of(0)
        body.append(_rect(x, round(min(y, zero), 2), bar_w, round(abs(zero - y), 2), VERDICT_COLOURS.get(verdict, VERDICT_COLOURS["pass"]),
                          f"{label}: {value:.1f} {unit} ({verdict})"))
        if len(bars) <= 16 or k % 4 == 0:
            body.append(_text(x + bar_w / 2, top + plot_h + 12, label.rsplit("/", 2)[-2] if len(bars) > 16 else label.rsplit("/", 1)[-1],
                              8, "middle", MUTED))
    label_y: list[float] = []  # the labels in the margin, kept a line apart when the lines are close
    for value, colour, name in sorted(((median, INK, "rack median"), (threshold, VERDICT_COLOURS["fail"], "threshold")),
                                      key=lambda mark: -(mark[0] or 0)):
        if value is None:
            continue
        y = y_of(value)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{plot_right}" y2="{y:.1f}" stroke="{colour}" '
                    f'stroke-dasharray="5 3"><title>{escape(f"{name}: {value:.1f} {unit}")}</title></line>')
        text_y = max(y + 3, label_y[-1] + 11) if label_y else y + 3
        label_y.append(text_y)
        body.append(_text(plot_right + 4, round(text_y, 1), f"{name} {value:.0f}", 9, "start", colour))
    return _svg(width, top + plot_h + 20, body, title)
