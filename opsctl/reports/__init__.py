"""The reports of a burn-in or acceptance run, all drawn from its summary: the terminal
summary (terminal.py), JUnit XML (junit.py) and the self-contained HTML handover report
(html_report.py, with the pictures of pictures.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opsctl.reports.html_report import render_html
from opsctl.reports.junit import render_junit
from opsctl.reports.terminal import print_summary

if TYPE_CHECKING:
    from opsctl.runs import RunDirectory

REPORT_FILES = ("report.html", "junit.xml")


def write_reports(run: RunDirectory, summary: dict[str, Any]) -> None:
    """Write report.html and junit.xml into the run directory (atomically, like every file of a run)."""
    run.write_text("junit.xml", render_junit(summary))
    run.write_text("report.html", render_html(summary, run.path))


__all__ = ["REPORT_FILES", "print_summary", "render_html", "render_junit", "write_reports"]
