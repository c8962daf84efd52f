"""The handover report: one self-contained HTML file (inline CSS and SVG, nothing fetched) that
a vendor and an operator can both read, print and sign.

Drawn from the run's summary.json: the verdict and every failure with its reading, threshold
and source; the parts to repair with their runbooks; the rack, the link heatmap, per-GPU TFLOPS
and temperature; inventory and firmware (with where each GPU sits and each switch tray's
firmware, read from the trays' raw files: inventory.py); the criteria (version and sha256),
who ran it and when, and whether it was a trial; the raw files.

The page itself is a Jinja2 template, templates/report.html.j2 (autoescaped); the tables and
pictures it holds are drawn here, each value escaped where it is written.
"""

from __future__ import annotations

import hashlib
import os
import statistics
from collections.abc import Iterable, Sequence
from functools import lru_cache
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from opsctl.reports.domain_section import domain_html
from opsctl.reports.formatting import fails_when, primary_suspects, reading, shown_checks
from opsctl.reports.inventory import read_tray_inventory, rack_serials
from opsctl.reports.pictures import VERDICT_COLOURS, bar_chart, heatmap, rack_view
from opsctl.runbooks import RUNBOOK_DIR
from opsctl.runs.trial import trial_sentence

Summary = dict[str, Any]  # a run's summary.json


def _cell(value: object, digits: int = 1) -> str:
    if value is None:
        return '<td class="num muted">–</td>'
    if isinstance(value, float):
        return f'<td class="num">{value:,.{digits}f}</td>'
    return f"<td>{escape(str(value))}</td>"


def _verdict_chip(verdict: str, label: str | None = None) -> str:
    colour = VERDICT_COLOURS.get(verdict, VERDICT_COLOURS["unobserved"])
    return f'<span class="chip" style="background:{colour}"></span>{escape(verdict if label is None else label)}'


def _table(headers: Sequence[str], rows: Iterable[str], widths: Sequence[int] | None = None) -> str:
    """A table; `widths` (percent per column) fixes its layout so long text wraps."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    layout = ""
    if widths:
        layout = ' class="fixed"><colgroup>' + "".join(f'<col style="width:{w}%">' for w in widths) + "</colgroup"
    return f"<table{layout}><tr>{head}</tr>{''.join(f'<tr>{row}</tr>' for row in rows)}</table>"


def _legend() -> str:
    return '<div class="legend">' + "".join(f"<span>{_verdict_chip(v)}</span>" for v in VERDICT_COLOURS) + "</div>"


def _failures(summary: Summary) -> str:
    shown = shown_checks(summary)
    if not shown:
        return "<p>No check failed and every tray reported.</p>"
    rows, previous = [], None
    for c in shown:
        component = escape(c["component"]) if c["component"] != previous else ""
        previous = c["component"]
        rows.append(f"<td class=mono>{component}</td><td>{_verdict_chip(c['verdict'])}</td>"
                    f"<td class=mono>{escape(c['check'])}</td><td>{escape(c['reason'])}</td>"
                    f"<td class=num>{escape(reading(c))}</td><td class=num>{escape(fails_when(c))}</td>"
                    f"<td class=muted>{escape(c['source'])} <i>(judged by {escape(c['judged_by'])})</i></td>")
    return _table(["component", "verdict", "check", "reason", "reading", "fails when", "threshold source"], rows,
                  widths=(14, 6, 15, 20, 10, 8, 27))


def _named(summary: Summary) -> str:
    failing = summary["failing"]
    items = []
    for kind, label in (("gpus", "GPUs"), ("links", "links"), ("other", "other components"), ("trays", "trays not reported")):
        if failing.get(kind):
            items.append(f"<li><b>{len(failing[kind])} {label}:</b> <span class=mono>{escape(', '.join(failing[kind]))}</span></li>")
    if not items:
        items.append("<li>nothing failed</li>")
    return f"<ul>{''.join(items)}</ul>"


def runbook_link(path: str | None, run_path: str | Path) -> str:
    """A suspect's runbook (runbooks/link.md) as a link that works from the run folder, where
    report.html lies: relative to it, when this checkout's runbooks/ holds the file; else the
    path alone (a wheel installed without the repository has no runbooks/ to point at)."""
    if not path:
        return "–"
    target = RUNBOOK_DIR.parent / path
    if not (path.startswith("runbooks/") and ".." not in Path(path).parts and target.is_file()):
        return f"<span class=mono>{escape(path)}</span>"
    href = Path(os.path.relpath(target, Path(run_path).resolve())).as_posix()
    return f'<a class=mono href="{escape(quote(href))}" title="{escape(str(target))}">{escape(path)}</a>'


def _hours(value: object) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else "–"


def _score(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "–"


EVIDENCE_SHOWN = 3  # a GPU's failed checks beyond these are in "Every failed check"


def _why(suspect: dict[str, Any]) -> str:
    """What points at a part: the failing links through it, else its evidence (a GPU's own failed checks)."""
    if suspect.get("links"):
        return escape(", ".join(suspect["links"]))
    evidence = [str(line) for line in suspect.get("evidence") or []]
    more = len(evidence) - EVIDENCE_SHOWN
    return escape("; ".join(evidence[:EVIDENCE_SHOWN]) + (f"; and {more} more (Every failed check)" if more > 0 else ""))


def _suspects(summary: Summary, run_path: str | Path) -> str:
    suspects = primary_suspects(summary)
    if not suspects:
        failing = summary["failing"]
        return f"<p class=muted>{escape(summary.get('localizer') or '')}</p>" if failing["gpus"] or failing["links"] else ""
    rows = [f"<td class=mono>{escape(s['component'])}</td><td>{escape(s.get('kind') or '')}</td>"
            f"<td class=num>{_score(s.get('score'))}</td>"
            f"<td>{escape(s.get('action') or '')}</td><td class=num>{_hours(s.get('mttr_hours'))}</td>"
            f"<td class=num>{escape(str(s.get('gpus_idled', '')))}</td><td class=mono>{_why(s)}</td>"
            f"<td>{runbook_link(s.get('runbook'), run_path)}</td>" for s in suspects]
    runners_up = [s for s in summary.get("suspects") or [] if s.get("alternative_to")]
    alternatives = "".join(f"<li><span class=mono>{escape(s['component'])}</span> ({escape(s.get('kind') or '')}, "
                           f"{_score(s.get('score'))}) instead of <span class=mono>{escape(s['alternative_to'])}</span></li>"
                           for s in runners_up)
    return (_table(["part", "kind", "score", "repair", "MTTR h", "GPUs idled", "failing links or evidence", "runbook"],
                   rows, widths=(14, 8, 5, 23, 5, 5, 26, 14))
            + f"<p class=muted>Found by {escape(summary.get('localizer') or '')}."
            + (f" Less likely alternatives:</p><ul class=muted>{alternatives}</ul>" if alternatives else "</p>"))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _gpu_list(ids: Iterable[object], summary: Summary) -> str:
    """rack07/ct03/gpu0…gpu3, rack07/ct15/gpu0 -> 'ct03 (all 4), ct15/gpu0': a whole tray by its name."""
    per_tray: dict[str, set[str]] = {}
    for gpu in summary["gpus"]:
        per_tray.setdefault(gpu["id"].rsplit("/", 1)[0], set()).add(gpu["id"])
    by_tray: dict[str, list[str]] = {}
    for gpu_id in ids:
        by_tray.setdefault(str(gpu_id).rsplit("/", 1)[0], []).append(str(gpu_id))
    rack = summary["rack"] + "/"
    shown = []
    for tray, gpus in by_tray.items():
        if set(gpus) == per_tray.get(tray) and len(gpus) > 1:
            shown.append(f"{tray.removeprefix(rack)} (all {len(gpus)})")
        else:
            shown += [gpu.removeprefix(rack) for gpu in gpus]
    return ", ".join(shown)


def _sentence(text: str) -> str:
    return escape(text[0].upper() + text[1:] + ("" if text.endswith(".") else "."))


def _repair_plan(summary: Summary) -> str:
    """What all the rack's repairs take out together against its hot spares (summary["repair_plan"],
    when the summary has one): one short paragraph; nothing when it has none."""
    plan = summary.get("repair_plan")
    if not isinstance(plan, dict) or not isinstance(plan.get("gpus_out"), int):
        return ""
    text = f"<b>All repairs together take {_plural(plan['gpus_out'], 'GPU')} out at once</b>"
    if plan.get("gpu_ids"):
        text += f" (<span class=mono>{escape(_gpu_list(plan['gpu_ids'], summary))}</span>)"
    text += "."
    facts = [f"{label}: {plan[key]}" for key, label in (("spare_gpus", "hot spares"), ("train_gpus", "GPUs a training job needs"),
                                                          ("gpus_lost_to_training", "GPUs lost to training meanwhile"))
             if plan.get(key) is not None]
    if facts:
        text += " " + _sentence("; ".join(facts))
    if str(plan.get("advice") or "").strip():
        text += " " + _sentence(str(plan["advice"]).strip())
    if plan.get("source"):
        text += f' <span class="muted">Source: {escape(str(plan["source"]))}.</span>'
    return f'<p id="repair-plan">{text}</p>'


def _gpu_charts(summary: Summary) -> str:
    checks = {(c["component"], c["check"]): c for c in summary["checks"] if c["check"].startswith("rack.")}
    charts = []
    for metric, title, unit in (("gemm_bf16_tflops", "bf16 GEMM per GPU", "TFLOPS"),
                                ("gemm_fp8_tflops", "fp8 GEMM per GPU", "TFLOPS"),
                                ("temperature_c", "temperature under load per GPU", "°C")):
        bars, threshold = [], None
        for gpu in summary["gpus"]:
            check = checks.get((gpu["id"], f"rack.{metric}"))
            bars.append((gpu["id"], gpu.get(metric), check["verdict"] if check else gpu["verdict"]))
            if check:
                threshold = check["threshold"]
        values = [v for _, v, _ in bars if v is not None]
        median = statistics.median(values) if values else None
        chart = bar_chart(title, unit, bars, median, threshold)
        if chart:
            charts.append(chart)
    return "".join(f"<div>{c}</div>" for c in charts)


def _values(values: Sequence[object] | None) -> str:
    """One value, or several joined (parts of one tray that disagree), or '–' for none."""
    return _cell(", ".join(map(str, values)) if values else None)


def _rack_serial(summary: Summary, inventory: dict[str, Any]) -> str:
    serials = rack_serials(inventory)
    if not serials:
        return (f"<p>Rack <b>{escape(summary['rack'])}</b>: no chassis serial reported (NVML platform info is "
                "read on GB200 trays; other GPUs do not report it).</p>")
    if len(serials) == 1:
        return (f"<p>Rack <b>{escape(summary['rack'])}</b>, chassis serial <b class=mono>{escape(str(serials[0]))}</b> "
                "(NVML platform info, as every GPU that reports it says).</p>")
    return (f"<p><b>Rack {escape(summary['rack'])}: its GPUs report {len(serials)} chassis serials</b> "
            f"(<span class=mono>{escape(', '.join(map(str, serials)))}</span>): a tray of another chassis is in this rack; "
            "see the trays below.</p>")


def _tray_inventory(summary: Summary, inventory: dict[str, Any]) -> str:
    drivers: dict[str, set[str]] = {}
    for gpu in summary["gpus"]:
        if gpu.get("driver"):
            drivers.setdefault(gpu["tray"], set()).add(gpu["driver"])
    rows = []
    for tray in summary["trays"]:
        found = inventory["trays"].get(tray["tray"]) or {}
        rows.append(f"<td class=mono>{escape(tray['id'])}</td><td>{'switch' if tray.get('switch') else 'compute'}</td>"
                    f"<td>{escape(tray.get('host') or '–')}</td>"
                    + "".join(_values(found.get(k)) for k in ("chassis_serial", "slot", "tray_index"))
                    + _values(sorted(drivers.get(tray["tray"], ())))
                    + _values(found.get("firmware")))
    return _table(["tray", "kind", "host", "chassis serial", "slot", "tray index", "driver", "switch firmware"], rows)


def _inventory(summary: Summary, run_path: str | Path) -> str:
    inventory = read_tray_inventory(summary, run_path)
    rows = []
    for gpu in summary["gpus"]:
        platform = inventory["gpus"].get(gpu["id"]) or {}
        rows.append(f"<td class=mono>{escape(gpu['id'])}</td><td>{_verdict_chip(gpu['verdict'])}</td>"
                    + "".join(_cell(gpu.get(k)) for k in ("name", "serial", "uuid", "pci_bus_id"))
                    + _cell(platform.get("module_id"))
                    + "".join(_cell(gpu.get(k)) for k in ("vbios", "inforom", "driver"))
                    + "".join(_cell(gpu.get(k)) for k in ("gemm_bf16_tflops", "gemm_fp8_tflops", "membw_gbps",
                                                          "sm_clock_mhz", "temperature_c", "power_w"))
                    + f"<td>{escape(', '.join(map(str, gpu.get('xids') or [])))}</td>")
    return (_rack_serial(summary, inventory) + _tray_inventory(summary, inventory)
            + _table(["GPU", "verdict", "name", "serial", "uuid", "PCI", "module", "VBIOS", "InfoROM", "driver", "bf16 TFLOPS",
                      "fp8 TFLOPS", "mem GB/s", "SM MHz", "max °C", "W", "XIDs"], rows)
            + "<p class=muted>Chassis serial, slot, tray index and module: NVML platform info "
              "(nvmlDeviceGetPlatformInfo) of each GPU, as its tray's raw file records it; switch firmware: what each "
              "switch tray's chips report with their ports (sw0, sw1).</p>")


def _trays(summary: Summary) -> str:
    rows = [f"<td class=mono>{escape(t['id'])}</td><td>{escape(t.get('host') or '–')}</td>"
            f"<td>{_verdict_chip('pass' if t['status'] == 'complete' else 'incomplete', t['status'])}</td>"
            f"{_cell(t.get('exit_code'))}{_cell(t.get('seconds'))}<td>{escape(t.get('reason') or '')}</td>"
            f"<td class=mono>{_file_link(t.get('file'))}</td>" for t in summary["trays"]]
    return _table(["tray", "host", "status", "probe exit", "seconds", "reason", "raw result"], rows)


def _file_link(name: str | None) -> str:
    return f'<a href="{escape(name)}">{escape(name)}</a>' if name else "–"


def _files(summary: Summary, run_path: str | Path) -> str:
    rows = []
    for name in summary.get("files") or []:
        path = Path(run_path) / name
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "–"
        size = path.stat().st_size if path.is_file() else None
        rows.append(f"<td class=mono>{_file_link(name)}</td>{_cell(size)}<td class=mono>{digest}</td>")
    return _table(["file (relative to the run folder)", "bytes", "sha256"], rows)


def _criteria(summary: Summary) -> str:
    c = summary["criteria"]
    rows = [f"<th>{escape(k)}</th><td class=mono>{escape(str(v))}</td>" for k, v in (
        ("criteria", c["name"]), ("version", c["version"]), ("sha256", c["sha256"]), ("file", c["file"]),
        ("probes", ", ".join(c["probes"])), ("load per tray (criteria)", f"{c['duration_s']:g} s"),
        ("load per tray (this run)", f"{summary['duration_s']:g} s"), ("warnings fail", c["warnings_fail"]))]
    relative = c.get("rack_relative") or {}
    for rule in relative.get("rules") or []:
        margin = f"{rule['pct']:g}%" if rule.get("pct") is not None else f"{rule['delta']:g}"
        rows.append(f"<th>rack-relative rule</th><td class=mono>{escape(rule['metric'])}: {escape(rule['verdict'])} when "
                    f"{escape(rule['worse'])} than the rack median by more than {escape(margin)} and "
                    f"{rule['robust_sigmas']:g} robust σ</td>")
    if relative.get("source"):
        rows.append(f"<th>why these margins</th><td>{escape(relative['source'])}</td>")
    note = ""
    trial = trial_sentence(summary)
    if trial:
        note = f'<p class="trial">{escape(trial)}</p>'
    elif summary["kind"] != "accept" and summary["duration_s"] != c["duration_s"]:
        note = (f"<p><b>Note:</b> this run loaded each tray for {summary['duration_s']:g} s, not the "
                f"{c['duration_s']:g} s the criteria ask for: it is a burn-in, not an acceptance by these criteria.</p>")
    return "<table>" + "".join(f"<tr>{r}</tr>" for r in rows) + "</table>" + note


@lru_cache(maxsize=1)
def _template() -> Any:
    """The page's template (templates/report.html.j2), autoescaped. jinja2 is imported here, not at
    the top: the CLI imports this module for every command, and only a report draws the page."""
    import jinja2

    environment = jinja2.Environment(loader=jinja2.PackageLoader("opsctl.reports", "templates"), autoescape=True,
                                     undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    environment.filters["g"] = lambda value: f"{value:g}"
    return environment.get_template("report.html.j2")


def render_html(summary: Summary, run_path: str | Path) -> str:
    """The report page of a run's summary.json; `run_path` is the run folder (for links and raw files)."""
    from markupsafe import Markup  # jinja2's own dependency: the parts below are HTML already

    verdict = summary["verdict"]
    colour = {"PASS": VERDICT_COLOURS["pass"], "FAIL": VERDICT_COLOURS["fail"]}.get(verdict, VERDICT_COLOURS["incomplete"])
    trial = trial_sentence(summary)
    title = ("Trial acceptance report" if trial else "Acceptance report") if summary["kind"] == "accept" else "Burn-in report"
    link_counts: dict[str, int] = {}
    for link in summary["links"]:
        link_counts[link["verdict"]] = link_counts.get(link["verdict"], 0) + 1
    sections = {  # drawn here as HTML (tables, SVG pictures), every value in them escaped where it is written
        "suspects": _suspects(summary, run_path), "repair_plan": _repair_plan(summary), "named": _named(summary),
        "legend": _legend(), "rack": rack_view(summary), "heatmap": heatmap(summary), "gpu_charts": _gpu_charts(summary),
        "domain": domain_html(summary, _table), "failures": _failures(summary), "inventory": _inventory(summary, run_path),
        "trays": _trays(summary), "criteria": _criteria(summary), "files": _files(summary, run_path),
    }
    return str(_template().render(
        summary=summary, title=title, verdict=verdict, colour=colour, trial=trial, notes=summary.get("notes") or [],
        link_counts=", ".join(f"{n} {v}" for v, n in sorted(link_counts.items())),
        sections={name: Markup(html) for name, html in sections.items()}))
