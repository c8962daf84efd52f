"""The fan-out: one `python -m probes …` invocation on every tray of a rack at once, over ssh
or as local processes, with a concurrency limit and per-tray connect and run timeouts.

    from opsctl.fanout import run_on_trays, FanoutOptions
    results = run_on_trays(rack, ["snapshot", "--window", "10", "--json"],
                           options=FanoutOptions(concurrency=16, run_timeout_s=60))
    for r in results:            # TrayResult, in rack order
        r.tray, r.status, r.document, r.reason

See runner.py for the callbacks (`on_start`, `on_result`) and Ctrl-C.
"""

from opsctl.fanout.runner import COMPLETE, INCOMPLETE, FanoutOptions, TrayResult, run_on_trays

__all__ = ["COMPLETE", "INCOMPLETE", "FanoutOptions", "TrayResult", "run_on_trays"]
