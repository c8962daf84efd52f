"""The burn-in's verdict on the terminal: the verdict; the parts to repair; every failing GPU,
link and tray; one line per failed check with its reading, threshold and a numbered source;
where the reports are."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table

from opsctl.reports.formatting import fails_when, primary_suspects, reading, shown_checks
from opsctl.reports.pictures import VERDICT_COLOURS

if TYPE_CHECKING:
    from rich.console import Console

STYLE = {"PASS": "bold green", "FAIL": "bold red", "INCOMPLETE": "bold magenta"}


def print_summary(console: Console, summary: dict[str, Any]) -> None:
    verdict = summary["verdict"]
    trays = summary["trays"]
    reported = sum(1 for t in trays if t["status"] == "complete")
    kind = "acceptance" if summary["kind"] == "accept" else "burn-in"
    criteria = summary["criteria"]
    console.print()
    console.print(f"[{STYLE[verdict]}]{summary['rack']} {kind}: {verdict}[/] (exit {summary['exit_code']}) — "
                  f"{reported}/{len(trays)} trays reported, {summary['duration_s']:g} s of load each; "
                  f"criteria {criteria['name']} {criteria['version']}")
    for note in summary.get("notes") or []:
        console.print(f"  note: {note}", soft_wrap=True)
    suspects = primary_suspects(summary)
    if suspects:
        console.print(f"[bold]parts to repair[/] ({summary['localizer']}):")
        for s in suspects:
            links = f"; links {', '.join(s['links'])}" if s["links"] else ""
            console.print(f"  {s['component']} ({s['kind'].replace('_', ' ')}, score {s['score']:.2f}): {s['action']} — about "
                          f"{s['mttr_hours']:g} h, {s['gpus_idled']} GPUs idled; runbook {s['runbook']}{links}", soft_wrap=True)
        print_repair_plan(console, summary.get("repair_plan"))
    failing = summary["failing"]
    for key, label in (("gpus", "failing GPUs"), ("links", "failing links"), ("other", "other failing components"),
                       ("trays", "trays that did not report")):
        if failing.get(key):
            console.print(f"[bold]{label}[/] ({len(failing[key])}): {', '.join(failing[key])}", soft_wrap=True)
    if not suspects and (failing.get("links") or failing.get("gpus")):
        console.print(f"parts: {summary.get('localizer')}")
    shown = shown_checks(summary)
    if shown:
        sources: dict[str, int] = {}
        table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
        table.add_column("component", no_wrap=True)
        table.add_column("check", no_wrap=True)
        table.add_column("reading", no_wrap=True, max_width=24, overflow="ellipsis")
        table.add_column("fails when", no_wrap=True, max_width=24, overflow="ellipsis")
        table.add_column("src", no_wrap=True)
        previous = None
        for c in shown:
            number = sources.setdefault(c["source"], len(sources) + 1)
            colour = VERDICT_COLOURS[c["verdict"]]
            component = c["component"] if c["component"] != previous else ""
            previous = c["component"]
            table.add_row(component, f"[{colour}]{c['check']}[/]", reading(c), fails_when(c), f"[{number}]")
        console.print(table)
        console.print("threshold sources:")
        for source, number in sources.items():
            console.print(f"  [{number}] {source}", highlight=False, markup=False)
    console.print(f"reports: {summary['run']}/report.html (handover), junit.xml, summary.json; "
                  f"raw tray results in {summary['run']}/trays/", soft_wrap=True)


def print_repair_plan(console: Console, plan: dict[str, Any] | None) -> None:
    """The rack's repairs together: the GPUs they take out at once against the hot spares."""
    if plan and plan["gpus_out"]:
        style = "yellow" if plan["gpus_lost_to_training"] else "green"
        console.print(f"  [{style}]together[/]: {plan['advice']}", soft_wrap=True)
