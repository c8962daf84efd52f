"""Rack burn-in: run the tray probe on every tray (opsctl.fanout), keep each result in a run
folder (opsctl.runs), judge the rack (judge.py: each GPU against its SKU and its rack, links
over the rack, trays that did not report, parts via the localizer) and write the reports
(opsctl.reports). session.py ties them together for `opsctl burnin` and `opsctl accept`."""
