"""The handover report: one self-contained HTML file (inline CSS and SVG, nothing fetched) that
a vendor and an operator can both read, print and sign.

Drawn from the run's summary.json: the verdict and every failure with its reading, threshold
and source; the parts to repair with their runbooks; the rack, the link heatmap, per-GPU TFLOPS
and temperature; inventory and firmware (with where each GPU sits and each switch tray's
firmware, read from the trays' raw files: inventory.py); the criteria (version and sha256),
who ran it and when, and whether it was a trial; the raw files.
"""

import hashlib
import os
import statistics
from html import escape
from pathlib import Path
from urllib.parse import quote

from opsctl.acceptance.trial import trial_sentence
from opsctl.reports.domain_section import domain_html
from opsctl.reports.formatting import fails_when, primary_suspects, reading, shown_checks
from opsctl.reports.inventory import read_tray_inventory, rack_serials
from opsctl.reports.pictures import VERDICT_COLOURS, bar_chart, heatmap, rack_view
from opsctl.runbooks import RUNBOOK_DIR

CSS = """
body { font-family: "DejaVu Sans", Arial, sans-serif; color: #212529; margin: 24px auto; max-width: 1180px; padding: 0 16px; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 18px; border-bottom: 1px solid #dee2e6; padding-bottom: 4px; margin-top: 32px; }
.muted { color: #868e96; } p.muted, ul.muted { font-size: 13px; } .mono { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
.verdict { display: inline-block; padding: 6px 16px; border-radius: 4px; color: #fff; font-weight: bold; font-size: 20px; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
table.fixed { table-layout: fixed; width: 100%; } table.fixed td { overflow-wrap: anywhere; }
th, td { border: 1px solid #dee2e6; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f1f3f5; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.chip { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: middle; }
.pictures { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.legend span { margin-right: 14px; font-size: 12px; }
.sign td { height: 36px; min-width: 220px; }
.trial { border: 2px solid #f08c00; background: #fff4e6; padding: 8px 12px; font-weight: bold; }
details summary { cursor: pointer; }
@media print { h2 { break-after: avoid; } svg { break-inside: avoid; } }
"""


def _cell(value, digits=1):
    if value is None:
        return '<td class="num muted">–</td>'
    if isinstance(value, float):
        return f'<td class="num">{value:,.{digits}f}</td>'
    return f"<td>{escape(str(value))}</td>"


def _verdict_chip(verdict, label=None):
    colour = VERDICT_COLOURS.get(verdict, VERDICT_COLOURS["unobserved"])
    return f'<span class="chip" style="background:{colour}"></span>{escape(verdict if label is None else label)}'


def _table(headers, rows, widths=None):
    """A table; `widths` (percent per column) fixes its layout so long text wraps."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    layout = ""
    if widths:
        layout = ' class="fixed"><colgroup>' + "".join(f'<col style="width:{w}%">' for w in widths) + "</colgroup"
    return f"<table{layout}><tr>{head}</tr>{''.join(f'<tr>{row}</tr>' for row in rows)}</table>"


def _legend():
    return '<div class="legend">' + "".join(f"<span>{_verdict_chip(v)}</span>" for v in VERDICT_COLOURS) + "</div>"


def _failures(summary):
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


def _named(summary):
    failing = summary["failing"]
    items = []
    for kind, label in (("gpus", "GPUs"), ("links", "links"), ("other", "other components"), ("trays", "trays not reported")):
        if failing.get(kind):
            items.append(f"<li><b>{len(failing[kind])} {label}:</b> <span class=mono>{escape(', '.join(failing[kind]))}</span></li>")
    if not items:
        items.append("<li>nothing failed</li>")
    return f"<ul>{''.join(items)}</ul>"


def runbook_link(path, run_path):
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


def _hours(value):
    return f"{value:g}" if isinstance(value, (int, float)) else "–"


def _score(value):
    return f"{value:.2f}" if isinstance(value, (int, float)) else "–"


EVIDENCE_SHOWN = 3  # a GPU's failed checks beyond these are in "Every failed check"


def _why(suspect):
    """What points at a part: the failing links through it, else its evidence (a GPU's own failed checks)."""
    if suspect.get("links"):
        return escape(", ".join(suspect["links"]))
    evidence = [str(line) for line in suspect.get("evidence") or []]
    more = len(evidence) - EVIDENCE_SHOWN
    return escape("; ".join(evidence[:EVIDENCE_SHOWN]) + (f"; and {more} more (Every failed check)" if more > 0 else ""))


def _suspects(summary, run_path):
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


def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _gpu_list(ids, summary):
    """rack07/ct03/gpu0…gpu3, rack07/ct15/gpu0 -> 'ct03 (all 4), ct15/gpu0': a whole tray by its name."""
    per_tray = {}
    for gpu in summary["gpus"]:
        per_tray.setdefault(gpu["id"].rsplit("/", 1)[0], set()).add(gpu["id"])
    by_tray = {}
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


def _sentence(text):
    return escape(text[0].upper() + text[1:] + ("" if text.endswith(".") else "."))


def _repair_plan(summary):
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


def _gpu_charts(summary):
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


def _values(values):
    """One value, or several joined (parts of one tray that disagree), or '–' for none."""
    return _cell(", ".join(map(str, values)) if values else None)


def _rack_serial(summary, inventory):
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


def _tray_inventory(summary, inventory):
    drivers = {}
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


def _inventory(summary, run_path):
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


def _trays(summary):
    rows = [f"<td class=mono>{escape(t['id'])}</td><td>{escape(t.get('host') or '–')}</td>"
            f"<td>{_verdict_chip('pass' if t['status'] == 'complete' else 'incomplete', t['status'])}</td>"
            f"{_cell(t.get('exit_code'))}{_cell(t.get('seconds'))}<td>{escape(t.get('reason') or '')}</td>"
            f"<td class=mono>{_file_link(t.get('file'))}</td>" for t in summary["trays"]]
    return _table(["tray", "host", "status", "probe exit", "seconds", "reason", "raw result"], rows)


def _file_link(name):
    return f'<a href="{escape(name)}">{escape(name)}</a>' if name else "–"


def _files(summary, run_path):
    rows = []
    for name in summary.get("files") or []:
        path = Path(run_path) / name
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "–"
        size = path.stat().st_size if path.is_file() else None
        rows.append(f"<td class=mono>{_file_link(name)}</td>{_cell(size)}<td class=mono>{digest}</td>")
    return _table(["file (relative to the run folder)", "bytes", "sha256"], rows)


def _criteria(summary):
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
    if trial_sentence(summary):
        note = f'<p class="trial">{escape(trial_sentence(summary))}</p>'
    elif summary["kind"] != "accept" and summary["duration_s"] != c["duration_s"]:
        note = (f"<p><b>Note:</b> this run loaded each tray for {summary['duration_s']:g} s, not the "
                f"{c['duration_s']:g} s the criteria ask for: it is a burn-in, not an acceptance by these criteria.</p>")
    return "<table>" + "".join(f"<tr>{r}</tr>" for r in rows) + "</table>" + note


def render_html(summary, run_path):
    verdict = summary["verdict"]
    colour = {"PASS": VERDICT_COLOURS["pass"], "FAIL": VERDICT_COLOURS["fail"]}.get(verdict, VERDICT_COLOURS["incomplete"])
    trial = trial_sentence(summary)
    title = ("Trial acceptance report" if trial else "Acceptance report") if summary["kind"] == "accept" else "Burn-in report"
    notes = "".join(f"<li>{escape(n)}</li>" for n in summary.get("notes") or [])
    link_counts = {}
    for link in summary["links"]:
        link_counts[link["verdict"]] = link_counts.get(link["verdict"], 0) + 1
    counts = ", ".join(f"{n} {v}" for v, n in sorted(link_counts.items()))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}: {escape(summary['rack'])} {escape(verdict)}</title>
<style>{CSS}</style></head><body>
<h1>{escape(title)}: {escape(summary['rack'])}</h1>
<p class="muted">{escape(summary['description'])}</p>
<p><span class="verdict" id="verdict" style="background:{colour}">{escape(verdict)}</span>
&nbsp; exit code {summary['exit_code']}{' — interrupted' if summary.get('interrupted') else ''}</p>
{f'<p class="trial" id="trial">{escape(trial)}</p>' if trial else ''}
<table>
<tr><th>judged</th><td>{escape(summary['judged'])} by {escape(summary['by'])}</td></tr>
<tr><th>run started</th><td>{escape(str(summary.get('created')))} by {escape(str(summary.get('started_by')))}</td></tr>
<tr><th>criteria</th><td>{escape(summary['criteria']['name'])} version {escape(summary['criteria']['version'])}
 <span class="mono">sha256 {escape(summary['criteria']['sha256'])}</span></td></tr>
<tr><th>load per tray</th><td>{summary['duration_s']:g} s (the criteria ask for {summary['criteria']['duration_s']:g} s)</td></tr>
<tr><th>trays</th><td>{escape(summary['transport'])} transport, {escape(summary['backend'])} backend; inventory
 <span class="mono">{escape(summary['inventory'])}</span></td></tr>
<tr><th>run folder</th><td class="mono">{escape(summary['run'])}</td></tr>
</table>
{f'<ul>{notes}</ul>' if notes else ''}

<h2>What to repair</h2>
{_suspects(summary, run_path)}
{_repair_plan(summary)}
{_named(summary)}

<h2>The rack</h2>
{_legend()}
<div class="pictures">
<div id="rack">{rack_view(summary)}</div>
<div id="heatmap"><b>NVLink links ({len(summary['links'])}: {escape(counts)})</b><br>{heatmap(summary)}</div>
</div>

<h2>GPUs against the rack</h2>
<div class="pictures">{_gpu_charts(summary)}</div>

{'<h2>The NVLink domain</h2>' if summary.get('domain') else ''}
{domain_html(summary, _table)}

<h2>Every failed check</h2>
{_failures(summary)}

<h2>Inventory and firmware</h2>
{_inventory(summary, run_path)}

<h2>Trays</h2>
{_trays(summary)}

<h2>Criteria</h2>
{_criteria(summary)}

<h2>Raw files</h2>
{_files(summary, run_path)}

<h2>Sign-off</h2>
{'<p class="trial">A trial acceptance: signing it records the trial run, not an acceptance by the criteria.</p>' if trial else ''}
<table class="sign"><tr><th></th><th>name</th><th>signature</th><th>date</th></tr>
<tr><th>vendor</th><td></td><td></td><td></td></tr><tr><th>operator</th><td></td><td></td><td></td></tr></table>
<p class="muted">opsctl {escape(summary.get('opsctl_version', ''))} · {escape(summary['format'])}</p>
</body></html>
"""
