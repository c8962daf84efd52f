"""The ledger on both of its databases (a SQLite file and a real PostgreSQL server): recording,
repairs, the statistics' arithmetic, migrations, transactions and concurrent writers."""

import json
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing

import pytest

from opsctl.errors import InputError
from opsctl.ledger import (close_repair, fleet_statistics, open_ledger, open_repair, record_burnin, record_triage,
                           reliability_inputs)
from opsctl.ledger.intervals import poisson_interval
from opsctl.ledger.migrations import LATEST
from tests.conftest import REPO, assert_one_line_error

ACCEPTED = {"rack": "rack07", "kind": "accept", "verdict": "pass", "finished": "2026-01-01T00:00:00Z", "checks": []}


def triage(part, kind="gpu"):
    return {"racks": [{"rack": "rack07", "healthy": False,
                       "suspects": [{"component": part, "kind": kind, "score": 0.9, "links": []}]}]}


def small_history(ledger):
    """Ten days of rack07: two failures, two repairs; every figure below is worked by hand."""
    record_burnin(ACCEPTED, ledger)
    record_triage(triage("rack07/ct03/gpu1"), ledger, at="2026-01-03T00:00Z")
    open_repair("rack07/ct03/gpu1", ledger, action="reset_gpu", by="ana", at="2026-01-03T01:00Z")
    close_repair("rack07/ct03/gpu1", ledger, by="ana", at="2026-01-03T02:00Z")
    record_triage(triage("rack07/ct05/j1", "connector"), ledger, at="2026-01-06T00:00Z")
    open_repair("rack07/ct05", ledger, action="replace_compute_tray", by="bo", at="2026-01-06T01:00Z")
    close_repair("rack07/ct05", ledger, by="bo", at="2026-01-06T04:00Z", back_in_service="2026-01-06T06:00Z",
                 replaced="tray SN42", rma_ids=["RMA-1"])


@pytest.mark.slow
def test_statistics_are_worked_by_hand(ledger_db):
    with open_ledger(ledger_db) as ledger:
        small_history(ledger)
        stats = fleet_statistics(ledger, until="2026-01-11", infant_weeks=1)
    # 10 days × 72 GPUs, less 1 GPU × 2 h (the reset) and 4 GPUs × 6 h (the tray, failure to back in service).
    exposure = 720 - 2 / 24 - 4 * 6 / 24
    assert stats["exposure"]["gpu_days"] == round(exposure, 1)
    assert stats["failures"] == {"total": 2, "by_kind": {"compute_tray": 1, "gpu": 1}}  # the tray, as repaired
    overall = stats["mtbi"]["overall"]
    low, high = poisson_interval(2)
    assert overall["mtbi_gpu_days"] == round(exposure / 2, 1)
    assert overall["interval"] == [round(exposure / high, 1), round(exposure / low, 1)]
    mttr = stats["mttr"]["by_action"]
    assert mttr["reset_gpu"]["median_hours"] == 2.0 and mttr["reset_gpu"]["gpus_idled_mean"] == 1
    assert mttr["replace_compute_tray"]["median_hours"] == 6.0 and mttr["replace_compute_tray"]["gpus_idled_mean"] == 4
    assert mttr["reset_gpu"]["published_source"].endswith("opsctl estimate (NVIDIA Xid catalog: immediate action RESET_GPU, e.g. XID 95, 119, 120, 140, 155)")
    infant = stats["infant_mortality"]
    assert (infant["early"]["failures"], infant["later"]["failures"]) == (2, 0)
    assert infant["early"]["gpu_days"] == round(7 * 72 - 2 / 24 - 1.0, 1) and infant["later"]["gpu_days"] == 216.0
    assert stats["burnin"]["racks"] == 1 and stats["burnin"]["racks_failed_first_run"] == 0


@pytest.mark.slow
def test_since_and_rack_narrow_the_window(ledger_db):
    with open_ledger(ledger_db) as ledger:
        small_history(ledger)
        later = fleet_statistics(ledger, since="2026-01-05", until="2026-01-11", racks=["rack07"])
        assert later["failures"]["total"] == 1 and later["exposure"]["gpu_days"] == round(6 * 72 - 1.0, 1)
        with pytest.raises(InputError, match="not in the ledger: hgx01"):
            fleet_statistics(ledger, racks=["hgx01"])


def test_reliability_inputs_feed_the_tco(ledger_db):
    with open_ledger(ledger_db) as ledger:
        with pytest.raises(InputError, match="no rack in service"):
            reliability_inputs(ledger)
        small_history(ledger)
        measured = reliability_inputs(ledger, until="2026-01-11")
    exposure = 720 - 2 / 24 - 1.0
    assert measured.scenario == {"mtbi_gpu_days": round(exposure / 2, 1), "repair_hours": 4.0, "blast_radius_gpus": 2.5}
    assert "measured by the opsctl ledger" in measured.source and "2 failures" in measured.source
    assert measured.detail["mttr_by_action"]["replace_compute_tray"]["median_hours"] == 6.0


def test_recording_twice_adds_nothing_and_acceptance_hands_over(ledger_db):
    with open_ledger(ledger_db) as ledger:
        failed = {"rack": "rack07", "verdict": "fail", "finished": "2025-12-28",
                  "trays": [{"tray": "ct03", "checks": [{"check": "gemm.bf16", "component": "gpu2", "verdict": "fail"}]}],
                  "checks": [{"check": "nvlink", "component": "rack07/ct04/gpu0/nvl05", "verdict": "fail"},
                             {"check": "gemm", "component": "rack07/ct04/gpu1", "verdict": "pass"}]}
        first = record_burnin(failed, ledger)[0]
        assert first["new"] and first["handover_at"] is None
        assert sorted((p["part"], p["kind"]) for p in first["failing_parts"]) == [
            ("rack07/ct03/gpu2", "gpu"), ("rack07/ct04/gpu0/nvl05", "link")]  # a probe's tray-relative id completed
        assert not record_burnin(failed, ledger)[0]["new"]
        assert record_burnin(ACCEPTED, ledger)[0]["handover_at"] == "2026-01-01T00:00:00Z"
        record_triage(triage("rack07/st3/sw1", "switch_chip"), ledger, at="2026-01-02")
        record_triage(triage("rack07/st3/sw1", "switch_chip"), ledger, at="2026-01-02")
        healthy = record_triage({"racks": [{"rack": "rack07", "healthy": True, "suspects": []}]}, ledger, at="2026-01-02")
        assert healthy[0]["incident"] is None
        assert len(ledger.records("runs")) == 2 and len(ledger.records("triages")) == 2
        incidents = ledger.records("incidents")
        assert [(i["part"], i["kind"], i["origin"]) for i in incidents] == [("rack07/st3/sw1", "switch_chip", "triage")]
        assert ledger.records("triages", "healthy = :healthy", {"healthy": 0})[0]["chosen_action"] == "replace_switch_tray"


def test_a_repair_claims_the_triaged_incident_or_opens_one(ledger_db):
    with open_ledger(ledger_db) as ledger:
        record_burnin(ACCEPTED, ledger)
        record_triage(triage("rack07/ct05/j1", "connector"), ledger, at="2026-01-03")
        tray = open_repair("rack07/ct05", ledger, by="bo", at="2026-01-03T02:00Z")
        assert tray["action"] == "replace_compute_tray" and tray["gpus_idled"] == 4  # the model's default for a tray
        assert tray["incident_key"] == ledger.records("incidents")[0]["key"]
        switch = open_repair("rack07/st2", ledger, action="reseat_switch_tray", by="bo", at="2026-01-04")
        assert switch["gpus_idled"] == 72 and switch["incident_key"] != tray["incident_key"]
        assert [i["origin"] for i in ledger.records("incidents")] == ["triage", "repair"]
        with pytest.raises(InputError, match="already has an open repair"):
            open_repair("rack07/ct05", ledger, by="bo", at="2026-01-03T03:00Z")
        with pytest.raises(InputError, match="before the repair was opened"):
            close_repair("rack07/st2", ledger, by="bo", at="2026-01-03")
        closed = close_repair("rack07/st2", ledger, by="cy", at="2026-01-04T05:00Z", rma_ids=["A", "B"])
        assert closed["rma_ids"] == ["A", "B"] and closed["back_in_service_at"] == "2026-01-04T05:00:00Z"
        with pytest.raises(InputError, match="no open repair of rack07/st2"):
            close_repair("rack07/st2", ledger, by="cy")


@pytest.mark.parametrize("part, message", [
    ("rack07/ct19", "no such component in rack07"),
    ("rack99/ct01", "rack rack99 is neither in the ledger nor in the inventory"),
    ("rack07/ct01; drop table", "no such component in rack07"),
    ("rack 07/ct01", "not a component id"),
])
def test_parts_are_checked_against_the_topology(tmp_path, part, message):
    with open_ledger(f"sqlite:///{tmp_path / 'l.sqlite'}") as ledger:
        with pytest.raises(InputError, match=message):
            open_repair(part, ledger, action="reset_gpu", by="x")
        assert ledger.records("repairs") == [] and ledger.records("incidents") == []


def test_schema_is_versioned_and_a_newer_ledger_is_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    open_ledger(f"sqlite:///{path}").close()
    open_ledger(f"sqlite:///{path}").close()  # reopening applies nothing twice
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT version FROM schema_migrations").fetchall() == [(v,) for v in range(1, LATEST + 1)]
    connection.execute("INSERT INTO schema_migrations VALUES (?, 'from the future', '2030-01-01T00:00:00Z')", (LATEST + 1,))
    connection.commit()
    connection.close()
    with pytest.raises(InputError, match=f"schema version {LATEST + 1}, newer than this opsctl knows"):
        open_ledger(f"sqlite:///{path}")


def test_a_failure_inside_a_write_keeps_nothing_of_it(ledger_db):
    with open_ledger(ledger_db) as ledger:
        record_burnin(ACCEPTED, ledger)
        two_racks = {"racks": [{"rack": "rack07", "healthy": False, "suspects": [{"component": "rack07/ct01/gpu0"}]},
                               {"rack": "rack07", "healthy": False, "suspects": [{"component": "rack07/ct99"}]}]}
        with pytest.raises(InputError, match="rack07/ct99"):
            record_triage(two_racks, ledger, at="2026-01-02")
        assert ledger.records("triages") == [] and ledger.records("incidents") == []
        assert len(ledger.records("runs")) == 1  # what was recorded before stays


def test_default_ledger_lives_in_the_state_dir(tmp_path, monkeypatch, opsctl):
    monkeypatch.delenv("OPSCTL_DB", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    result = opsctl("ledger", "rack", "rack07", "--handover", "2026-01-01", "--json")
    assert result.code == 0 and result.json()["handover_at"] == "2026-01-01T00:00:00Z"
    assert (tmp_path / "state" / "opsctl" / "ledger.sqlite").is_file()


def test_bad_urls_and_unreachable_servers(opsctl, tmp_path):
    assert_one_line_error(opsctl("ledger", "stats", "--db", "mysql://x/y"), 2, "unsupported scheme 'mysql'")
    # Nothing listens there: the ledger is unreachable, so the work is incomplete (exit 3), not a pass.
    url = f"postgresql://nobody:secret@/x?host={tmp_path}&connect_timeout=2"
    line = assert_one_line_error(opsctl("ledger", "stats", "--db", url), 3, "cannot reach the ledger database")
    assert "secret" not in line


def _triage_files(directory, name, count):
    paths = []
    for n in range(count):
        path = directory / f"{name}-{n:03d}.json"
        document = triage(f"rack07/ct{n % 18 + 1:02d}/gpu{n % 4}")
        document["time"] = f"2026-02-{1 + n % 28:02d}T{n % 24:02d}:{ord(name[-1]) % 60:02d}:00Z"
        path.write_text(json.dumps(document))
        paths.append(path)
    return paths


@pytest.mark.slow
def test_two_writers_at_once_lose_nothing(ledger_db, tmp_path):
    """Two processes record 40 triages each into one ledger (new: both also migrate it). They
    name the same 36 GPUs, none repaired: every triage lands, and each GPU's fault is one incident
    that began at its earliest triage, whichever writer got there first."""
    runs = [subprocess.Popen([sys.executable, "-m", "opsctl", "ledger", "record-triage", "--db", ledger_db, "--json",
                              *_triage_files(tmp_path, name, 40)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
            for name in ("writer-a", "writer-b")]
    for run in runs:
        out, err = run.communicate(timeout=240)
        assert run.returncode == 0, err
        assert sum(r["new"] for r in json.loads(out)["recorded"]) == 40
    with open_ledger(ledger_db) as ledger:
        triages, incidents = ledger.records("triages"), ledger.records("incidents")
    assert len(triages) == 80 and len(incidents) == 36
    first_seen = {}
    for row in triages:
        first_seen[row["chosen_part"]] = min(row["at"], first_seen.get(row["chosen_part"], row["at"]))
    assert {i["part"]: i["occurred_at"] for i in incidents} == first_seen


def _writing(path):
    """True while another process holds the SQLite ledger's write lock and has written pages of
    its open transaction into the WAL (the page cache spills), none of them committed yet."""
    wal = path.parent / f"{path.name}-wal"
    if not wal.exists() or wal.stat().st_size == 0:
        return False
    connection = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:  # "database is locked": a writer is inside its transaction
        return "locked" in str(error)
    else:
        connection.execute("ROLLBACK")
        return False
    finally:
        connection.close()


@pytest.mark.slow
def test_a_killed_import_loses_nothing_recorded_before(opsctl, tmp_path):
    """An import is SIGKILLed in the middle of its one transaction, while it writes: none of it
    remains, what was recorded before is whole, and the ledger opens and computes as before."""
    path = tmp_path / "l.sqlite"
    url = f"sqlite:///{path}"
    with open_ledger(url) as ledger:
        small_history(ledger)
        before = ledger.everything()
    # Big enough to take tens of seconds (it is killed a few seconds in): the kill lands mid-write.
    big = {"incidents": [{"part": f"rack07/ct{n % 18 + 1:02d}/gpu{n % 4}", "occurred_at": f"2026-03-01T00:00:{n % 60:02d}Z",
                          "note": f"bulk {n}"} for n in range(150_000)]}
    (tmp_path / "big.json").write_text(json.dumps(big))
    process = subprocess.Popen([sys.executable, "-m", "opsctl", "ledger", "import", "--db", url, tmp_path / "big.json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    deadline = time.monotonic() + 120
    try:
        while not _writing(path):
            assert process.poll() is None, f"the import ended before it was killed: {process.communicate()}"
            assert time.monotonic() < deadline, "the import never started writing"
            time.sleep(0.05)
        with closing(sqlite3.connect(path)) as reader:  # a reader sees only what was committed: none of it yet
            assert reader.execute("SELECT COUNT(*) FROM incidents WHERE note LIKE 'bulk %'").fetchone() == (0,)
    finally:
        process.kill()  # SIGKILL: no cleanup, as a crash or a power cut of the process
        process.communicate()
    assert process.returncode == -signal.SIGKILL  # it died by the signal, not by finishing
    with open_ledger(url) as ledger:
        after = ledger.everything()
    assert after == before  # not one bulk incident; everything recorded before, as it was
    with closing(sqlite3.connect(path)) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    stats = opsctl("ledger", "stats", "--db", url, "--until", "2026-01-11", "--json")
    assert stats.code == 0, stats.err
    assert stats.json()["failures"]["total"] == 2
