"""The handover report's NVLink domain section: the prerequisites, the path NCCL took, and bus
bandwidth by size for each collective against its floor and the datasheet's ceiling."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import Any


def _row(cells: Sequence[object]) -> str:
    return "".join(f"<td>{escape(str(c))}</td>" if not isinstance(c, float) else f'<td class="num">{c:,.1f}</td>'
                   for c in cells)


def domain_html(summary: dict[str, Any], table: Callable[[list[str], list[str]], str]) -> str:
    """`table(headers, rows)` draws a table; '' when the run had no domain test."""
    domain = summary.get("domain")
    if not domain:
        return ""
    parts = [table(["prerequisite", "", "why not"],
                   [f"<td>{escape(p['name'])}</td><td>{'passed' if p['passed'] else 'FAILED'}</td>"
                    f"<td>{escape('; '.join(p['reasons']))}</td>" for p in domain["prerequisites"]])]
    if not domain.get("ran"):
        parts.append(f"<p><b>The collective was not run:</b> {escape('; '.join(domain['not_run_because']))}</p>")
        return "\n".join(parts)
    if not domain.get("results"):  # it started, but never finished: say why, not empty figures
        reasons = domain.get("not_finished_because") or ["no tray reported a result"]
        parts.append(f"<p><b>The collective was started but did not finish</b>, so nothing was measured: "
                     f"{escape('; '.join(reasons))}</p>")
        return "\n".join(parts)
    transport = domain.get("transport") or {}
    paths = ", ".join(f"{path} ({count} channels)" for path, count in (transport.get("paths") or {}).items()) or "not reported"
    parts.append(f"<p>{domain.get('gpus')} GPUs in one job ({escape(str(domain.get('dist_backend')))}); NCCL's path: "
                 f"{escape(paths)}{'; NVLS available' if transport.get('nvls') else ''}.</p>")
    for trays, words in ((domain.get("trays_not_joined"), "never joined"), (domain.get("trays_not_answering"), "did not answer")):
        if trays:
            parts.append(f"<p><b>Trays that {words}:</b> {escape(', '.join(trays))}</p>")
    if domain.get("slow_tray"):
        parts.append(f"<p><b>Slow tray (bisection):</b> {escape(domain['slow_tray'])}</p>")
    for operation, rows in (domain.get("results") or {}).items():
        parts.append(f"<p><b>{escape(operation)}</b></p>" + table(
            ["size", "time per call (µs)", "algbw (GB/s)", "busbw (GB/s)", "floor (GB/s)", "ceiling (GB/s)"],
            [_row([r["size"], float(r["seconds"] * 1e6), float(r["algbw_gbps"]), float(r["busbw_gbps"]),
                   float(r["floor_gbps"]) if r.get("floor_gbps") else "no public floor",
                   float(domain["ceiling_gbps"]) if domain.get("ceiling_gbps") else "–"]) for r in rows]))
    parts.append(f'<p class="muted">{escape(domain.get("floor_note") or "")}. Floor: {escape(str(domain.get("floor_source") or "no public floor"))}. '
                 f'Ceiling: {escape(str(domain.get("ceiling_source") or "no public ceiling"))}.</p>')
    return "\n".join(parts)
