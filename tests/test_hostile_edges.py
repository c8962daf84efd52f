"""Issue 15's hostile inputs, each at its bound: just inside is read, just outside is refused in
one line (exit 2) naming the bound; a full disk, a locked ledger and a crash-cut journal end in
one line too, never a traceback; a password never printed."""

import errno
import os
import subprocess
import sys
import time

import pytest
import yaml

from opsctl.errors import InputError
from tests.conftest import assert_one_line_error


def _inventory(tmp_path, hosts, model="gb200-nvl72", **rack_vars):
    document = {"all": {"children": {"rackx": {"vars": {"opsctl_model": model, "opsctl_backend": "sim",
                                                        "opsctl_transport": "local", **rack_vars},
                                               "hosts": {h: None for h in hosts}}}}}
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


# --- flags ---------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["snapshot", "rack07", "-o", "x.json", "--window", "nan"],
    ["snapshot", "rack07", "-o", "x.json", "--window", "inf"],
    ["triage", "rack07", "--window", "604801"],  # a week and a second
    ["burnin", "rack07", "--duration", "nan"],
    ["burnin", "rack07", "--run-timeout", "-inf"],
    ["burnin", "rack07", "--connect-timeout", "nan"],
    ["accept", "rack07", "--duration", "1e308"],
    ["exporter", "--rack", "rack07", "--interval", "nan"],
    ["exporter", "--rack", "rack07", "--interval", "inf"],
    ["ledger", "stats", "--confidence", "nan"],
    ["ledger", "stats", "--infant-weeks", "1" + "0" * 400],
    ["snapshot", "rack07", "-o", "x.json", "--concurrency", "4097"],
    ["burnin", "rack07", "--concurrency", "1" + "0" * 400],
])
def test_a_number_flag_that_is_not_finite_or_in_range_is_refused(opsctl, argv):
    assert_one_line_error(opsctl(*argv), 2, f"Invalid value for '{argv[-2]}'")


def test_the_longest_window_is_a_week():
    from opsctl.input_checks import MAX_SECONDS, seconds

    flag = seconds()
    assert flag.convert("604800", None, None) == MAX_SECONDS == 7 * 86400
    with pytest.raises(Exception, match="not in the range"):
        flag.convert("604800.001", None, None)


# --- names, numbers and nesting in files ----------------------------------------------------------
def test_a_list_where_a_name_belongs_is_refused(opsctl, tmp_path):
    path = _inventory(tmp_path, ["rackx-ct01"], model=["x"])
    assert_one_line_error(opsctl("-i", path, "inventory", "list"), 2, "vars.opsctl_model: expected `str`, got `array`")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("faults:\n  - {kind: [link_down], link: ct01/gpu0/nvl01}\n")
    path = _inventory(tmp_path, ["rackx-ct01"], opsctl_scenario="scenario.yaml")
    assert_one_line_error(opsctl("-i", path, "sim", "faults", "rackx"), 2, "faults[0].kind: expected `str`, got `list`")
    criteria = tmp_path / "criteria.yaml"
    criteria.write_text("criteria: c\nversion: '1'\nduration_s: 60\nrack_relative:\n  rules:\n"
                        "    - {metric: [gemm_bf16_tflops], worse: lower, pct: 5}\n")
    assert_one_line_error(opsctl("accept", "rack07", "--criteria", criteria), 2, "rack_relative.rules[0].metric: expected `str`, got `array`")


def test_criteria_pct_nan_is_refused_rather_than_switching_the_rule_off(opsctl, tmp_path):
    criteria = tmp_path / "criteria.yaml"
    criteria.write_text("criteria: c\nversion: '1'\nduration_s: 60\nrack_relative:\n  rules:\n"
                        "    - {metric: gemm_bf16_tflops, worse: lower, pct: .nan}\n")
    assert_one_line_error(opsctl("accept", "rack07", "--criteria", criteria), 2, "rack_relative.rules[0].pct: expected `float` > 0.0")


def test_snapshot_counters_too_large_for_nvml_or_a_list_for_a_gpu_are_refused(opsctl, tmp_path):
    base = '{"rack": "rack07", "model": "gb200-nvl72", "window_seconds": 60, "links": [%s]}'
    cases = [('{"gpu": "rack07/ct01/gpu0", "port": 5, "crc_errors": %d}' % 2**64, "crc_errors: expected a count ≥ 0 and at most 2^64 − 1"),
             ('{"gpu": "rack07/ct01/gpu0", "port": 5, "crc_errors": 1%s}' % ("0" * 400), "crc_errors: expected a count ≥ 0 and at most 2^64 − 1"),
             ('{"gpu": ["x"], "port": 5}', "links[0].gpu: expected `str | null`, got `array`")]
    for link, message in cases:
        (tmp_path / "snap.json").write_text(base % link)
        assert_one_line_error(opsctl("localize", tmp_path / "snap.json"), 2, message)
    (tmp_path / "snap.json").write_text(base % '{"gpu": "rack07/ct01/gpu0", "port": 5, "crc_errors": %d}' % (2**64 - 1))
    assert opsctl("localize", tmp_path / "snap.json").code in (0, 1, 3)  # the largest NVML counter reads


@pytest.mark.slow
def test_json_nested_100000_deep_is_refused_by_every_json_reader(opsctl, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert_one_line_error(opsctl("localize", path), 2, "nested too deeply")
    assert_one_line_error(opsctl("ledger", "import", path, "--db", f"sqlite:///{tmp_path}/l.sqlite"), 2, "nested too deeply")
    assert_one_line_error(opsctl("-i", path, "inventory", "list"), 2, "nested too deeply")


def test_nesting_is_checked_at_the_limit():
    from opsctl.input_checks import MAX_DEPTH, check_depth

    inside = outside = "x"
    for _ in range(MAX_DEPTH):
        inside = [inside]
    outside = [inside]
    assert check_depth(inside, "f") is inside
    with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH} levels"):
        check_depth(outside, "f")
    shared = ["x"] * 10
    for _ in range(30):  # a billion laughs: 10**30 leaves, one object per level
        shared = [shared] * 10
    assert check_depth(shared, "f") is shared


# --- bounds --------------------------------------------------------------------------------
def test_a_host_name_is_at_most_a_dns_name_long(opsctl, tmp_path):
    assert opsctl("-i", _inventory(tmp_path, ["x" * 248 + "-ct01"]), "inventory", "list").code == 0  # 253
    assert_one_line_error(opsctl("-i", _inventory(tmp_path, ["x" * 249 + "-ct01"]), "inventory", "list"), 2,
                          "longer than 253 characters")


def test_a_host_range_is_counted_before_it_is_expanded(opsctl, tmp_path):
    path = _inventory(tmp_path, ["rackx-ct[01:18]", "rackx-st[1:9]"])
    assert opsctl("-i", path, "inventory", "list").code == 0  # 27 trays: a whole NVL72
    path = _inventory(tmp_path, ["rackx-ct[00:27]"])  # 28 hosts: one more than the model's trays
    assert_one_line_error(opsctl("-i", path, "inventory", "list"), 2, "names 28 hosts; a gb200-nvl72 rack has 27 tray(s)")
    started = time.monotonic()
    path = _inventory(tmp_path, ["r[0:999][0:999][0:999]-ct01"])
    assert_one_line_error(opsctl("-i", path, "inventory", "list"), 2, "names 1,000,000,000 hosts")
    path = _inventory(tmp_path, ["rack99-ct[1:100000000]"])
    assert_one_line_error(opsctl("-i", path, "inventory", "list"), 2, "names 100,000,000 hosts")
    assert time.monotonic() - started < 30  # refused, not built (a billion names would take hours)


@pytest.mark.parametrize("fault, message", [
    ("{kind: xid, gpu: ct01/gpu0, xid: 48, repeat_s: 0.999}", r"faults\[0\].repeat_s: expected `float` >= 1.0"),
    ("{kind: link_flap, link: ct01/gpu0/nvl01, period_s: 0.000001, down_s: 0.0000001}", r"faults\[0\].period_s: expected `float` >= 1.0"),
    ("{kind: xid, gpu: ct01/gpu0, xid: 48, repeat_s: 1, count: 10001}", r"faults\[0\].count: expected `int` <= 10000"),
])
def test_a_scenario_cannot_flood_the_simulator(fault, message):
    from opsctl.simulation.scenario import scenario_from_text

    with pytest.raises(InputError, match=message):
        scenario_from_text(f"faults:\n  - {fault}\n")


def test_the_flood_bounds_themselves_are_accepted():
    from opsctl.simulation.scenario import scenario_from_text

    scenario = scenario_from_text("faults:\n  - {kind: xid, gpu: ct01/gpu0, xid: 48, repeat_s: 1, count: 10000}\n"
                                  "  - {kind: link_flap, link: ct01/gpu0/nvl01, period_s: 1, down_s: 0.5}\n")
    assert [f.kind for f in scenario.faults] == ["xid", "link_flap"]


def test_a_csv_field_over_the_limit_or_an_open_quote_is_one_line(opsctl, tmp_path):
    db = f"sqlite:///{tmp_path}/l.sqlite"
    header = "rack,model,gpus,handover_at\n"
    (tmp_path / "racks.csv").write_text(header + "rack07,gb200-nvl72,72," + "x" * 131_073 + "\n")
    assert_one_line_error(opsctl("ledger", "import", tmp_path / "racks.csv", "--db", db), 2, "line 2: not valid CSV", "131072")
    (tmp_path / "racks.csv").write_text(header + 'rack07,"gb200-nvl72,72,2026-01-01\nrack08,gb200-nvl72,72,2026-01-01\n')
    assert_one_line_error(opsctl("ledger", "import", tmp_path / "racks.csv", "--db", db), 2,
                          "line 2: not valid CSV: a quote opened on this line is never closed")
    (tmp_path / "racks.csv").write_text(header + f"rack07,gb200-nvl72,{'9' * 5000},2026-01-01\n")
    assert_one_line_error(opsctl("ledger", "import", tmp_path / "racks.csv", "--db", db), 2, "field gpus: not a whole number")


# --- ledger dates --------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["ledger", "incident", "rack07/ct03", "--at", "0026-11-30"],
    ["repair", "open", "rack07/ct03/gpu1", "--action", "reset_gpu", "--at", "0001-01-01"],
    ["ledger", "rack", "rack07", "--handover", "0999-01-01"],
    ["ledger", "incident", "rack07/ct03", "--at", "1999-12-31T23:59:59Z"],
    ["ledger", "incident", "rack07/ct03", "--at", "2101-01-01"],
])
def test_a_year_outside_2000_to_2100_never_enters_the_ledger(opsctl, tmp_path, argv):
    db = tmp_path / "l.sqlite"
    assert_one_line_error(opsctl(*argv, "--db", f"sqlite:///{db}"), 2, "not between the years 2000 and 2100")
    assert not db.exists()


@pytest.mark.slow
def test_the_first_and_last_years_are_accepted(opsctl, tmp_path):
    db = f"sqlite:///{tmp_path}/l.sqlite"
    assert opsctl("ledger", "rack", "rack07", "--handover", "2000-01-01", "--db", db).code == 0
    assert opsctl("ledger", "incident", "rack07/ct03", "--at", "2100-12-31T23:59:59Z", "--db", db).code == 0
    assert opsctl("ledger", "stats", "--db", db).code == 0


def test_an_import_with_handover_in_year_1_is_refused(opsctl, tmp_path):
    (tmp_path / "export.json").write_text('{"format": "opsctl-ledger/1", "racks": [{"rack": "rack07", "handover_at": "0001-01-01"}]}')
    assert_one_line_error(opsctl("ledger", "import", tmp_path / "export.json", "--db", f"sqlite:///{tmp_path}/l.sqlite"),
                          2, "field handover_at", "2000 and 2100")


# --- what is not input but must still be one line ------------------------------------------
def test_sim_spec_to_proc_is_one_line(opsctl):
    assert_one_line_error(opsctl("sim", "spec", "rack07", "-o", "/proc/x"), 2, "/proc/x: cannot write here")


def test_a_malformed_known_hosts_line_is_named(opsctl, tmp_path):
    (tmp_path / "known_hosts").write_text("# ours\n127.0.0.1 ssh-ed25519 AAAA!!!notbase64\n")
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump({"all": {"children": {"hgxk": {
        "vars": {"opsctl_model": "hgx-h100", "opsctl_transport": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                 "opsctl_known_hosts": "known_hosts"}, "hosts": {"hgxk-node": None}}}}}))
    assert_one_line_error(opsctl("-i", path, "snapshot", "hgxk", "-o", tmp_path / "s.json", "--window", "1"), 2,
                          f"{tmp_path / 'known_hosts'} line 2: not a valid host key")


def test_a_full_disk_names_the_folder_and_is_incomplete(monkeypatch, tmp_path):
    from opsctl.runs import atomic_file
    from opsctl.runs.atomic_file import DiskFullError, write_json_atomic
    from opsctl.runs.journal import Journal

    def full(*_):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    (tmp_path / "run" / "summary.json").parent.mkdir()
    (tmp_path / "run" / "summary.json").write_text('{"old": true}')
    monkeypatch.setattr(atomic_file.os, "fsync", full)
    with pytest.raises(DiskFullError, match=f"{tmp_path / 'run'}: no space left .* writing summary.json") as raised:
        write_json_atomic(tmp_path / "run" / "summary.json", {"new": True})
    assert raised.value.exit_code == 3
    assert (tmp_path / "run" / "summary.json").read_text() == '{"old": true}'  # kept whole
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["summary.json"]  # no temporary left
    monkeypatch.undo()
    monkeypatch.setattr("opsctl.runs.journal.os.write", full)
    with pytest.raises(DiskFullError, match=f"{tmp_path / 'run'}: no space left .* writing journal.jsonl"):
        Journal(tmp_path / "run" / "journal.jsonl").record("tray_finished", tray="ct01")


def test_a_journal_line_cut_by_a_crash_does_not_swallow_the_next_event(tmp_path):
    from opsctl.runs.journal import Journal

    journal = Journal(tmp_path / "journal.jsonl")
    journal.record("tray_finished", tray="ct01", status="complete")
    with open(journal.path, "a") as file:
        file.write('{"time": "2026-11-30T10:00:00Z", "event": "tray_fini')  # killed mid-write
    journal.record("tray_finished", tray="ct02", status="complete")
    assert sorted(journal.last_outcomes()) == ["ct01", "ct02"]


@pytest.mark.slow
def test_a_ledger_locked_too_long_says_who_holds_it_and_to_retry(opsctl, monkeypatch, tmp_path):
    from opsctl.ledger import database

    db = tmp_path / "l.sqlite"
    assert opsctl("ledger", "rack", "rack07", "--handover", "2026-01-01", "--db", f"sqlite:///{db}").code == 0
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time\n"
                               "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                               "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(60)", str(db)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 1000)  # the 30 s of a real run, shortened
        line = assert_one_line_error(opsctl("ledger", "incident", "rack07/ct03", "--db", f"sqlite:///{db}"), 3,
                                     f"the ledger {db} has been locked by pid {holder.pid}", "retry")
        assert "for over 1 s" in line
    finally:
        holder.kill()
        holder.wait()


# --- secrets -------------------------------------------------------------------------------
@pytest.mark.parametrize("url, shown, bare", [
    ("postgresql://u:pw@h/db?password=S3cr3t", "postgresql://u:***@h/db?password=***", "postgresql://u@h/db"),
    ("postgresql://u@h/db?sslmode=require&password=S3cr3t&x=1", "postgresql://u@h/db?sslmode=require&password=***&x=1",
     "postgresql://u@h/db?sslmode=require&x=1"),
    ("host=h password='S3 cr3t' dbname=l", "host=h password=*** dbname=l", "host=h dbname=l"),
    ("postgresql://u:p@ssS3cr3t@h/db", "postgresql://u:***@h/db", "postgresql://u@h/db"),
    ("sqlite:///var/l.sqlite", "sqlite:///var/l.sqlite", "sqlite:///var/l.sqlite"),
])
def test_every_form_of_password_is_masked(url, shown, bare):
    from opsctl.ledger.database import redacted, without_password

    assert redacted(url) == shown
    assert without_password(url) == bare


def test_an_unreachable_ledger_prints_no_password_and_a_malformed_url_is_bad_input(opsctl):
    result = opsctl("ledger", "stats", "--db", "postgresql://u:S3cr3t@127.0.0.1:1/db?password=S3cr3t")
    assert_one_line_error(result, 3, "cannot reach the ledger database postgresql://u:***@127.0.0.1:1/db?password=***")
    assert "S3cr3t" not in result.err + result.out
    result = opsctl("ledger", "stats", "--db", "postgresql://u:S3cr3t@[::1/db")
    assert_one_line_error(result, 2, "is malformed")
    assert "S3cr3t" not in result.err
    assert_one_line_error(opsctl("ledger", "stats", "--db", "postgresql://u@h:notaport/db"), 2, "port 'notaport' is not a number")
    # libpq ends a password at its first '@', and would print the rest as the host name
    result = opsctl("ledger", "stats", "--db", "postgresql://u:p@ssS3cr3t@127.0.0.1:1/db")
    assert_one_line_error(result, 2, "must be written %40")
    assert "S3cr3t" not in result.err


def test_the_record_it_later_hint_names_the_same_ledger_without_its_password(opsctl, tmp_path):
    from opsctl.cli.ledger_options import db_flag

    assert db_flag("postgresql://ops:S3cr3t@db1/ledger") == " --db postgresql://ops@db1/ledger (the password from PGPASSWORD or ~/.pgpass)"
    assert db_flag(f"sqlite:///{tmp_path}/my ledger.sqlite") == f" --db 'sqlite:///{tmp_path}/my ledger.sqlite'"
    assert db_flag(None) == ""
