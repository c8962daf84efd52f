"""Property-based: each input format opsctl reads — inventory, fault scenario, criteria,
snapshot, ledger import — with any field of a valid file replaced by a hostile value (a list, a
mapping, NaN, infinity, 10**400, a long string, …) is either read correctly or refused with
exit 2 and one line; never exit 3, a traceback or a hang.

Deterministic (derandomize): the same examples on every run, in CI too. The base documents are
bench/hostile_input.py's, so the bench and the tests attack the same files.
"""

import contextlib
import io
import json
from datetime import timedelta

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.hostile_input import CRITERIA, LEDGER_EXPORT, SCENARIO, SNAPSHOT, leaf_paths, replaced, sim_inventory
from opsctl.cli import run

SETTINGS = settings(max_examples=30, deadline=timedelta(seconds=60), derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

HOSTILE = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-2**70, max_value=2**70), st.just(10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.just("x" * 5000),
    st.lists(st.text(max_size=4), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


def mutated(document):
    """A document with one to three of its fields (found afresh each time) replaced by hostile values."""
    paths = list(leaf_paths(document))
    return st.lists(st.tuples(st.sampled_from(paths), HOSTILE), min_size=1, max_size=3).map(
        lambda changes: _apply(document, changes))


def _apply(document, changes):
    for path, value in changes:
        try:
            document = replaced(document, path, value)
        except (KeyError, IndexError, TypeError):  # an earlier change removed the way there
            pass
    return document


def cli(*argv):
    """opsctl in this process: (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = run([str(a) for a in argv])
    return code, err.getvalue()


def assert_read_or_refused(code, err, accepted=(0,)):
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2:
        assert len([line for line in err.splitlines() if line.strip()]) == 1, err
    else:
        assert code in accepted, (code, err)


def as_yaml(document):
    return yaml.safe_dump(document, sort_keys=False, width=10**9)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile")


@SETTINGS
@given(mutated(sim_inventory()))
@pytest.mark.slow
def test_inventory(folder, document):
    (folder / "inv.yaml").write_text(as_yaml(document))
    assert_read_or_refused(*cli("-i", folder / "inv.yaml", "inventory", "list"))


@SETTINGS
@given(mutated(SCENARIO))
def test_fault_scenario(folder, document):
    (folder / "inv.yaml").write_text(as_yaml(sim_inventory(scenario="scenario.yaml")))
    (folder / "scenario.yaml").write_text(as_yaml(document))
    assert_read_or_refused(*cli("-i", folder / "inv.yaml", "sim", "faults", "rackx"))


@SETTINGS
@given(mutated(CRITERIA))
@pytest.mark.slow
def test_criteria(folder, document):
    from opsctl.acceptance.criteria import load_criteria
    from opsctl.errors import InputError

    (folder / "criteria.yaml").write_text(as_yaml(document))
    try:
        criteria = load_criteria(folder / "criteria.yaml")
    except InputError as error:
        assert "\n" not in str(error)
        return
    # Read: every figure that judges a rack is a finite number in its range.
    assert 0 < criteria.duration_s < criteria.run_timeout_s < float("inf")
    for rule in criteria.rules:
        margin = rule.pct if rule.pct is not None else rule.delta
        assert 0 < margin < float("inf") and 0 < rule.robust_sigmas < float("inf")


@SETTINGS
@given(mutated(SNAPSHOT))
@pytest.mark.slow
def test_snapshot(folder, document):
    (folder / "snap.json").write_text(json.dumps(document))
    # A snapshot that reads is localized: faulty (1), healthy (0), or too little seen to say (3).
    assert_read_or_refused(*cli("localize", folder / "snap.json", "--json"), accepted=(0, 1, 3))


@SETTINGS
@given(mutated(LEDGER_EXPORT))
def test_ledger_import(folder, document):
    (folder / "export.json").write_text(json.dumps(document))
    (folder / "l.sqlite").unlink(missing_ok=True)
    assert_read_or_refused(*cli("ledger", "import", folder / "export.json", "--db", f"sqlite:///{folder}/l.sqlite"))

