"""Bad input to the ledger is one line on stderr and exit 2, leaves nothing behind, and is never
recorded as something it is not: unwritable outputs, a mistyped --db, an empty import, a
document of the wrong kind. And a burn-in's fault is counted once, not once per symptom."""

import json
from pathlib import Path

import pytest

from opsctl.cli import run
from tests.conftest import assert_one_line_error


@pytest.fixture(scope="module")
def rack07_run(tmp_path_factory):
    """A real burn-in of the built-in rack07 (its seeded faults: a bad connector, a bad link, bad
    GPUs), short (accept runs the criteria's 15 minutes; the summary is the same document, and
    record-burnin --kind accept records it as the acceptance): its summary.json, run.json and
    snapshot.json are real documents of each kind."""
    base = tmp_path_factory.mktemp("rack07")
    assert run(["burnin", "rack07", "--duration", "2", "--out", str(base / "run"), "--no-ledger", "--json"]) == 1
    return base / "run"


@pytest.fixture
def ledger(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    assert opsctl("ledger", "rack", "rack07", "--db", url).code == 0
    return url


def test_an_unwritable_export_path_is_one_line_and_exit_2(opsctl, tmp_path, ledger):
    (tmp_path / "file.json").write_text("{}")
    under_a_file = tmp_path / "file.json" / "x"
    assert_one_line_error(opsctl("ledger", "export", "--format", "csv", "-o", under_a_file, "--db", ledger), 2,
                          str(under_a_file), "Not a directory")
    assert_one_line_error(opsctl("ledger", "export", "-o", under_a_file, "--db", ledger), 2, str(under_a_file))
    assert_one_line_error(opsctl("ledger", "export", "-o", tmp_path, "--db", ledger), 2, "Is a directory")
    assert (tmp_path / "file.json").read_text() == "{}"
    assert opsctl("ledger", "export", "-o", tmp_path / "out.json", "--db", ledger).code == 0
    assert json.loads((tmp_path / "out.json").read_text())["racks"][0]["rack"] == "rack07"


READERS = [("ledger", "stats"), ("ledger", "export"), ("repair", "list"), ("ledger", "stats", "--json")]


@pytest.mark.parametrize("command", READERS)
def test_a_reading_command_never_creates_a_ledger(opsctl, tmp_path, command):
    for missing in (tmp_path / "nonexist-dir" / "x.sqlite", tmp_path / "x.sqlite"):
        result = opsctl(*command, "--db", missing)
        assert_one_line_error(result, 2, f"no ledger at {missing}", "check --db")
        assert not missing.exists() and not missing.parent.joinpath("x.sqlite-wal").exists()
    assert not (tmp_path / "nonexist-dir").exists()


def test_tco_from_ledger_never_creates_a_ledger(opsctl, tmp_path):
    scenario = next((Path(__file__).parent.parent / "scenarios").glob("*.yaml"))
    missing = tmp_path / "empty.sqlite"
    assert_one_line_error(opsctl("tco", "run", scenario, "--from-ledger", "--db", f"sqlite:///{missing}"), 2,
                          f"no ledger at {missing}")
    assert not missing.exists()


def test_a_file_that_holds_no_ledger_is_not_read_as_an_empty_one(opsctl, tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    assert_one_line_error(opsctl("ledger", "stats", "--db", empty), 2, f"no ledger at {empty}")
    assert empty.read_bytes() == b""  # not turned into a ledger by a read


@pytest.mark.slow
def test_writers_create_the_file_but_not_a_mistyped_folder(opsctl, tmp_path, monkeypatch):
    missing_folder = tmp_path / "nonexist-dir" / "x.sqlite"
    assert_one_line_error(opsctl("ledger", "rack", "rack07", "--db", missing_folder), 2,
                          f"no folder {missing_folder.parent}", "check --db")
    assert not missing_folder.parent.exists()
    assert opsctl("ledger", "rack", "rack07", "--db", tmp_path / "new.sqlite").code == 0
    assert opsctl("ledger", "stats", "--db", tmp_path / "new.sqlite").code == 0
    # The default ledger in the state dir is the one writers may create, folders and all.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert_one_line_error(opsctl("ledger", "stats"), 2, "no ledger at")
    assert not (tmp_path / "state").exists()
    assert opsctl("ledger", "rack", "rack07").code == 0
    assert (tmp_path / "state" / "opsctl" / "ledger.sqlite").is_file()


def test_an_unopenable_ledger_names_the_path_meant_and_why(opsctl, tmp_path):
    line = assert_one_line_error(opsctl("ledger", "rack", "rack07", "--db", "sqlite:////proc/x.sqlite"), 2,
                                 "cannot create the ledger /proc/x.sqlite:")
    assert "//proc" not in line
    assert_one_line_error(opsctl("ledger", "stats", "--db", "sqlite:////proc/x.sqlite"), 2, "no ledger at /proc/x.sqlite")
    (tmp_path / "a-file").write_text("x")
    assert_one_line_error(opsctl("repair", "open", "rack07/ct03", "--db", f"sqlite:///{tmp_path / 'a-file' / 'l.sqlite'}"),
                          2, f"{tmp_path / 'a-file' / 'l.sqlite'}: Not a directory")
    (tmp_path / "junk.sqlite").write_text("not a database at all, just text" * 40)
    assert_one_line_error(opsctl("ledger", "stats", "--db", tmp_path / "junk.sqlite"), 2, "junk.sqlite")


def test_an_import_of_nothing_says_what_it_expected(opsctl, tmp_path, ledger):
    (tmp_path / "emptydir").mkdir()
    assert_one_line_error(opsctl("ledger", "import", tmp_path / "emptydir", "--db", ledger), 2,
                          str(tmp_path / "emptydir"), "racks.csv")
    (tmp_path / "empty.json").write_text("{}")
    assert_one_line_error(opsctl("ledger", "import", tmp_path / "empty.json", "--db", ledger), 2,
                          str(tmp_path / "empty.json"), "no tables", "opsctl-ledger/1")
    # Nor does a refused import create a ledger.
    fresh = tmp_path / "fresh.sqlite"
    assert_one_line_error(opsctl("ledger", "import", tmp_path / "empty.json", "--db", fresh), 2, "no tables")
    assert not fresh.exists()


@pytest.mark.slow
def test_an_import_says_how_many_records_of_each_kind(opsctl, tmp_path, ledger, rack07_run):
    assert opsctl("ledger", "record-burnin", rack07_run, "--db", ledger).code == 0
    assert opsctl("ledger", "export", "--format", "csv", "-o", tmp_path / "csv", "--db", ledger).code == 0
    other = f"sqlite:///{tmp_path / 'other.sqlite'}"
    result = opsctl("ledger", "import", tmp_path / "csv", "--db", other)
    assert result.code == 0, result.err
    assert "imported 2 record(s)" in result.out and "racks 1 added" in result.out and "runs 1 added" in result.out
    again = opsctl("ledger", "import", tmp_path / "csv", "--db", other)
    assert "imported 0 record(s), 2 already in the ledger" in again.out


@pytest.mark.slow
def test_a_document_of_the_wrong_kind_is_refused(opsctl, tmp_path, rack07_run):
    db = tmp_path / "ledger.sqlite"
    snapshot = rack07_run / "snapshot.json"
    line = assert_one_line_error(opsctl("ledger", "record-triage", snapshot, "--db", db), 2,
                                 str(snapshot), "link-health snapshot", "expected a triage result")
    assert "recorded" not in line
    assert not db.exists()  # refused before any ledger was opened
    assert_one_line_error(opsctl("ledger", "record-triage", rack07_run / "summary.json", "--db", db), 2,
                          "a burn-in summary (opsctl-burnin/1)", "record-burnin")
    assert_one_line_error(opsctl("ledger", "record-burnin", snapshot, "--db", db), 2,
                          "link-health snapshot", "expected a burn-in or acceptance summary")
    localized = opsctl("localize", snapshot, "--json")
    (tmp_path / "triage.json").write_text(localized.out)
    for doc in (localized.json(), localized.json()["racks"][0]):
        (tmp_path / "triage.json").write_text(json.dumps(doc))
        assert_one_line_error(opsctl("ledger", "record-burnin", tmp_path / "triage.json", "--db", db), 2,
                              "a triage result", "not a burn-in summary", "record-triage")
    (tmp_path / "run.json").write_text((rack07_run / "run.json").read_text())
    assert_one_line_error(opsctl("ledger", "record-burnin", tmp_path / "run.json", "--db", db), 2, "opsctl-run/1")
    assert not db.exists()
    # The right documents are recorded.
    assert opsctl("ledger", "record-triage", tmp_path / "triage.json", "--db", db).code == 0
    assert opsctl("ledger", "record-burnin", rack07_run, "--db", db).code == 0


@pytest.mark.slow
def test_a_burnin_fault_is_counted_once_not_once_per_symptom(opsctl, tmp_path, rack07_run):
    summary = json.loads((rack07_run / "summary.json").read_text())
    declared = [s for s in summary["suspects"] if not s.get("alternative_to")]
    wide = [s for s in declared if len(s["links"]) > 1]
    assert wide, "rack07's seeded scenario has a part (a connector) behind several failing links"
    db = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    result = opsctl("ledger", "record-burnin", rack07_run, "--kind", "accept", "--db", db, "--json")
    assert result.code == 0, result.err
    failing = result.json()["recorded"][0]["failing_parts"]
    by_part = {p["part"]: p for p in failing}
    for suspect in wide:
        assert "explained_by" not in by_part[suspect["component"]]
        for link in suspect["links"]:
            assert by_part[link]["explained_by"] == suspect["component"]
    # Each fault once: the suspects, plus the failing GPUs and links no suspect explains.
    explained = {link for s in declared for link in s["links"] if link != s["component"]}
    expected = {s["component"] for s in declared} | (set(summary["failing_parts"]) - explained)
    stats = opsctl("ledger", "stats", "--db", db, "--json").json()["burnin"]
    assert sum(stats["failing_parts_by_kind"].values()) == len(expected)
    assert stats["failing_parts_explained"] == len(explained & set(summary["failing_parts"]))
    kinds = {}
    for part in expected:
        kinds[by_part[part]["kind"]] = kinds.get(by_part[part]["kind"], 0) + 1
    assert stats["failing_parts_by_kind"] == dict(sorted(kinds.items()))
    text = opsctl("ledger", "stats", "--db", db).out
    assert f"connector {kinds['connector']}" in text and f"link {kinds.get('link', 0)}" in " ".join(text.split())
    # An export carried into another ledger keeps the attribution.
    assert opsctl("ledger", "export", "-o", tmp_path / "all.json", "--db", db).code == 0
    other = f"sqlite:///{tmp_path / 'other.sqlite'}"
    assert opsctl("ledger", "import", tmp_path / "all.json", "--db", other).code == 0
    assert opsctl("ledger", "stats", "--db", other, "--json").json()["burnin"]["failing_parts_by_kind"] == stats["failing_parts_by_kind"]


def test_a_read_only_open_needs_a_ledger_on_either_backend(ledger_db):
    from opsctl.errors import InputError
    from opsctl.ledger import open_ledger

    with pytest.raises(InputError, match="no ledger at"):
        open_ledger(ledger_db, read_only=True)
    with open_ledger(ledger_db) as ledger:  # a writer creates it
        ledger.records("racks")
    with open_ledger(ledger_db, read_only=True) as ledger:
        assert ledger.records("racks") == []
