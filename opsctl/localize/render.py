"""Localization results for people: what is broken, how sure we are, what to do, how long it
takes and what it idles — in that order, for someone reading it at 3 a.m."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table

if TYPE_CHECKING:
    from rich.console import Console, JustifyMethod

STATUS_LINE = {
    "healthy": "[green]healthy[/green]: every link and GPU read, nothing points at a fault",
    "incomplete": "[yellow]incomplete[/yellow]: no fault in what was read, but not everything was read",
    "faulty": "[red]faulty[/red]",
}
SUMMARY_COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("suspect", "left"), ("score", "right"), ("bad links", "right"), ("repair", "left"), ("MTTR h", "right"),
    ("idles", "right"), ("runbook", "left"))
# On a narrow terminal (80 columns) these wrap, so the ids and figures are never cut.
WRAPPING = ("repair", "runbook", "idles")
TRIAGE_COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("#", "right"), ("fault", "left"), ("score", "right"), ("repair", "left"), ("hours", "right"), ("idles", "right"))


def render_summary(result: dict[str, Any], out: Console) -> None:
    """One rack in a few lines: the status and a table of suspects (opsctl localize)."""
    faults = [s for s in result["suspects"] if "alternative_to" not in s]
    head = STATUS_LINE[result["status"]]
    if faults:
        head += f": {len(faults)} fault(s)"
    out.print(f"[bold]{result['rack']}[/bold] ({result['model']}) {head}")
    if result["suspects"]:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
        for column, justify in SUMMARY_COLUMNS:
            table.add_column(column, justify=justify, no_wrap=column not in WRAPPING, overflow="fold")
        for s in under_their_suspect(result["suspects"]):
            name = s["component"] if "alternative_to" not in s else f"  or {s['component']}"
            style = None if "alternative_to" not in s else "dim"
            table.add_row(name, f"{s['score']:.2f}", f"{len(s['links'])}/{s['links_through']}", s.get("repair", "-"),
                          f"{s.get('mttr_hours', 0):g}", str(s.get("gpus_idled", "-")), s["runbook"] or "-", style=style)
        out.print(table)
    _render_unread(result, out)


def under_their_suspect(suspects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The suspects in their order, each alternative right under the part it would replace (the
    JSON lists them after every fault: printed so, "or …" read as the last fault's)."""
    ordered = []
    for s in suspects:
        if "alternative_to" not in s:
            ordered += [s, *(a for a in suspects if a.get("alternative_to") == s["component"])]
    shown = {id(s) for s in ordered}
    return ordered + [s for s in suspects if id(s) not in shown]  # an alternative to no listed fault stays last


def render_triage(result: dict[str, Any], out: Console) -> None:
    """One rack for the on-call engineer: the faults at a glance, then each with its evidence,
    repair, time, blast radius and runbook, the XIDs explained and what was not read
    (opsctl triage)."""
    faults = [s for s in result["suspects"] if "alternative_to" not in s]
    alternatives = [s for s in result["suspects"] if "alternative_to" in s]
    observed = result["observed"]
    out.print(f"[bold]{result['rack']}[/bold] ({result['model']}) — {STATUS_LINE[result['status']]}"
              + (f": {len(faults)} fault(s) found" if faults else ""))
    out.print(f"read {observed['links']}/{observed['links_total']} links and {observed['gpus_answered']}/"
              f"{observed['gpus_total']} GPUs over {result['window_seconds']:g} s")
    if faults:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
        for column, justify in TRIAGE_COLUMNS:
            table.add_column(column, justify=justify, no_wrap=column not in WRAPPING, overflow="fold")
        for number, s in enumerate(faults, start=1):
            idles = f"{s.get('gpus_idled', '-')} GPU" + ("" if s.get("gpus_lost_to_training", 0) == 0 else
                                                        f" ({s['gpus_lost_to_training']} beyond spares)")
            table.add_row(str(number), f"{s['component']} ({s['kind'].replace('_', ' ')})", f"{s['score']:.2f}",
                          s.get("repair", "-"), f"{s.get('mttr_hours', 0):g}", idles)
        out.print(table)
    plan = result.get("repair_plan")
    if faults and plan:
        style = "yellow" if plan["gpus_lost_to_training"] else "green"
        out.print(f"[{style}]together[/{style}]: {plan['advice']}")
    for number, s in enumerate(faults, start=1):
        bad = f", {len(s['links'])} of its {s['links_through']} links bad" if s["links_through"] > 1 and s["links"] else ""
        out.print(f"[bold]{number}. {s['component']}[/bold] ({s['kind'].replace('_', ' ')}{bad}) — score {s['score']:.2f}")
        for line in s["evidence"]:
            out.print(f"   seen:  {line}")
        if "action" in s:
            steps = ", ".join(f"{k[:-2]} {v:g}" for k, v in s["mttr_steps"].items() if v)
            lost = s["gpus_lost_to_training"]
            spare = "alone, the spares cover it" if lost == 0 else f"{lost} beyond the spares"
            out.print(f"   do:    {s['action']}")
            out.print(f"   time:  {s['mttr_hours']:g} h ({steps})")
            out.print(f"   idles: {s['gpus_idled']} GPU(s), {s['out_of_service'].replace('_', ' ')} out of service; {spare}")
        out.print(f"   runbook: {s['runbook'] or 'none'}")
        others = [a for a in alternatives if a["alternative_to"] == s["component"]]
        if others:
            out.print("   [dim]less likely: " + ", ".join(f"{a['component']} ({a['score']:.2f})" for a in others) + "[/dim]")
        out.print()
    nvlink_gpus = result["xids"]["nvlink_xid_gpus"]
    if nvlink_gpus:
        out.print(f"NVLink XIDs logged on: {', '.join(nvlink_gpus)} (each points at its own GPU's links)")
    _render_unread(result, out)
    if faults:
        out.print(f"[dim]score: the posterior share of a fault's explanation; a fault is declared above "
                  f"{faults[0]['judgement']['threshold']:g} (opsctl/localize). After the repair: opsctl triage "
                  f"{result['rack']}[/dim]")


def _render_unread(result: dict[str, Any], out: Console) -> None:
    if result["unread_trays"]:
        out.print(f"[yellow]not read[/yellow]: {', '.join(result['unread_trays'])} — their links and GPUs were "
                  "not judged (neither healthy nor faulty)")
