"""Fleets: Ansible runs the probes on every tray of many racks; opsctl plans the run and
judges what Ansible fetched, with the very code `opsctl burnin` uses on one rack.

    opsctl fleet plan RUN_DIR --racks …    (burnin.yml's first play)  -> plan.py
    ansible-playbook runs each tray's probe and fetches its JSON       -> ansible/
    opsctl report RUN_DIR                  (burnin.yml's last play)   -> report.py

A fleet run folder:

    RUN_DIR/
      fleet.json              what was planned: kind, racks, inventory, when, by whom
      rack07/                 one run directory per rack, as `opsctl burnin --out` makes it
        run.json, journal.jsonl, sim-spec.json (simulated racks)
        trays/ct03.json       the tray's probe JSON, fetched by Ansible
        ansible/ct03.json     how the probe ended on the tray (exit code, stderr), from Ansible
        summary.json, snapshot.json, report.html, junit.xml     written by `opsctl report`
      fleet-summary.json      every rack's verdict, written by `opsctl report`
"""
