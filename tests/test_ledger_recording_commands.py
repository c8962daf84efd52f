"""burnin, accept, triage and report record what they found in the fleet's ledger, unless told
not to; a ledger that cannot be written costs a warning, never the verdict."""

import json
import os
from pathlib import Path

import pytest

from opsctl.ledger import open_ledger


def test_tests_never_write_to_the_users_own_state():
    state = Path(os.environ["XDG_STATE_HOME"])
    assert state != Path.home() / ".local" / "state" and "opsctl-test-state-" in state.name
    assert "OPSCTL_DB" not in os.environ


def runs(url):
    with open_ledger(url) as ledger, ledger.read() as tx:
        return [dict(row) for row in tx.rows("SELECT rack, kind, verdict FROM runs ORDER BY recorded_at")]


@pytest.mark.slow
def test_a_burnin_is_recorded_in_the_ledger(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    result = opsctl("burnin", "hgx01", "--duration", "1", "--out", tmp_path / "run", "--db", url, "--json")
    assert result.code == 0, result.err
    assert f"recorded in the ledger {url}" in result.err
    assert json.loads(result.out)["verdict"] == "PASS"  # stdout stays one JSON document
    assert runs(url) == [{"rack": "hgx01", "kind": "burnin", "verdict": "pass"}]


@pytest.mark.slow
def test_no_ledger_records_nothing_and_a_broken_ledger_keeps_the_verdict(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    quiet = opsctl("burnin", "hgx01", "--duration", "1", "--out", tmp_path / "a", "--db", url, "--no-ledger")
    assert quiet.code == 0 and "ledger" not in quiet.err
    assert not (tmp_path / "ledger.sqlite").exists()
    (tmp_path / "a-file").write_text("not a folder")
    unwritable = f"sqlite:///{tmp_path / 'a-file' / 'ledger.sqlite'}"  # a well-formed URL, unwritable at the end
    broken = opsctl("burnin", "hgx01", "--duration", "1", "--out", tmp_path / "b", "--db", unwritable)
    assert broken.code == 0  # the burn-in passed; the ledger's trouble does not change that
    warning = [line for line in broken.err.splitlines() if "warning" in line]
    assert len(warning) == 1 and "not recorded in the ledger" in warning[0] and "Not a directory" in warning[0]
    assert f"opsctl ledger record-burnin {tmp_path / 'b'}" in warning[0]


def test_a_ledger_url_of_an_unsupported_scheme_is_a_bad_flag_before_any_work(opsctl, tmp_path):
    from tests.conftest import assert_one_line_error

    result = opsctl("burnin", "hgx01", "--duration", "1", "--out", tmp_path / "run", "--db", "mysql://nowhere/x")
    assert_one_line_error(result, 2, "--db", "unsupported scheme 'mysql'")
    assert not (tmp_path / "run").exists()  # refused before the burn-in started
    assert_one_line_error(opsctl("ledger", "stats", "--db", "sqlite:///"), 2, "names no file")


@pytest.mark.slow
def test_a_triage_is_recorded_with_its_first_suspect_as_an_incident(opsctl, tmp_path):
    inventory = tmp_path / "inventory.yaml"
    (tmp_path / "lab.yaml").write_text("seed: 3\nfaults:\n  - {kind: link_errors, gpu: gpu5, port: 3, replay_per_s: 5}\n")
    inventory.write_text("all:\n  children:\n    lab:\n      vars: {opsctl_model: hgx-h100, opsctl_transport: local,"
                         " opsctl_backend: sim, opsctl_scenario: lab.yaml}\n      hosts: {lab-node: }\n")
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    result = opsctl("--inventory", inventory, "triage", "lab", "--window", "2", "--db", url, "--json")
    assert result.code == 1, result.err
    assert "recorded in the ledger" in result.err
    with open_ledger(url) as ledger, ledger.read() as tx:
        triages = [dict(row) for row in tx.rows("SELECT rack, at FROM triages")]
        incidents = [dict(row) for row in tx.rows("SELECT part FROM incidents")]
    taken = json.loads(result.out)["taken"]  # when the counters were read, not when it was recorded
    assert triages == [{"rack": "lab", "at": taken}], (triages, taken)
    assert incidents == [{"part": json.loads(result.out)["suspects"][0]["component"]}]


@pytest.mark.slow
def test_opsctl_report_records_every_rack_it_judged(opsctl, tmp_path):
    from tests.test_report_cli import _journal, record, write_fleet

    inventory = write_fleet(tmp_path)
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    assert opsctl("--inventory", inventory, "burnin", "hgxb", "--duration", "1", "--out", tmp_path / "b", "--no-ledger").code == 1
    planned = opsctl("--inventory", inventory, "fleet", "plan", tmp_path / "fleet", "--racks", "hgxb", "--duration", "1", "--json")
    entry = planned.json()["trays"]["hgxb-node"]
    ran = [e for e in _journal(tmp_path / "b") if e["event"] == "tray_finished"][0]
    Path(entry["result"]).write_bytes((tmp_path / "b" / "trays" / "hgxb.json").read_bytes())
    record(entry, rc=ran["exit_code"], stderr="", delta="0:00:03.500000")
    report = opsctl("report", tmp_path / "fleet", "--db", url, "--json")
    assert report.code == 1 and "recorded in the ledger" in report.err
    assert runs(url) == [{"rack": "hgxb", "kind": "burnin", "verdict": "fail"}]
