"""Run directories: where a burn-in keeps each tray's raw result as it arrives, the journal of
what happened, the rack's summary and its reports — so a run can be resumed and nothing that
finished is lost."""

from opsctl.runs.run_directory import RunDirectory, default_runs_root

__all__ = ["RunDirectory", "default_runs_root"]
