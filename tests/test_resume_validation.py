"""`opsctl resume` releases a part's hold only once the ledger shows a complete burn-in or
acceptance of the rack since the node was drained for it that no longer fails it (issue 26: a
resume of the rack put a known-bad GPU back in production). The rule is judged here on a real
SQLite ledger; slurmctld itself is in tests/test_slurm_containment.py."""

from datetime import timedelta

import pytest

from opsctl.cli.commands.resume import validation_rule
from opsctl.ledger import open_ledger, record_burnin
from opsctl.ledger.drains import record_containment, validation_since
from opsctl.ledger.timestamps import parse_time, stored
from opsctl.slurm.containment import (DRAINED, HEALTH_ACTION, RESUMED, UNVALIDATED, Containment, Hold, NodeOutcome,
                                      reason_of, resume_parts)

DRAINED_AT = parse_time("2026-03-02T10:00:00Z")
LINK = Hold("rack07/ct05/gpu1/nvl07", "reset_gpu_nvlink")
CONNECTOR = Hold("rack07/ct12/j2", "reseat_compute_tray")


def when(seconds):
    return stored(DRAINED_AT + timedelta(seconds=seconds))


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    with open_ledger(url) as ledger:
        for node, hold in (("rack07-ct05", LINK), ("rack07-ct12", CONNECTOR)):
            outcome = NodeOutcome(node, DRAINED, "", "IDLE", "", reason_of([hold]), added=[hold])
            record_containment(Containment("drain", False, [outcome], []), "rack07", "ana", ledger, at=when(0))
    return url


def burnin(db, seconds, failing=(), verdict="fail"):
    with open_ledger(db) as ledger:
        record_burnin({"rack": "rack07", "kind": "burnin", "verdict": verdict, "finished": when(seconds),
                       "checks": [], "failing_parts": list(failing)}, ledger)


@pytest.mark.parametrize("seconds, kept", [(-1, True), (0, False), (1, False)])
def test_a_run_counts_only_if_it_finished_at_or_after_the_drain(db, seconds, kept):
    burnin(db, seconds, verdict="pass")
    why = validation_rule("rack07", db)("rack07-ct12", CONNECTOR)
    assert (why is not None) == kept
    if kept:
        assert why.startswith("no complete burn-in or acceptance of rack07 since rack07-ct12 was drained for it")


def test_a_run_since_that_still_fails_the_part_or_a_part_under_it_keeps_it(db):
    burnin(db, 60, failing=["rack07/ct05/gpu1/nvl07"])
    rule = validation_rule("rack07", db)
    assert rule("rack07-ct12", CONNECTOR) is None  # the same run names no fault of the connector
    assert "still fails rack07/ct05/gpu1/nvl07" in rule("rack07-ct05", LINK)
    with open_ledger(db, read_only=True) as ledger:  # a tray holding the failing link is not validated either
        run, why = validation_since(ledger, "rack07", "rack07/ct05", when(0), "the drain")
    assert run is None and why.endswith("still fails rack07/ct05/gpu1/nvl07")


def test_an_incomplete_run_validates_nothing(db):
    burnin(db, 60, verdict="incomplete")
    assert validation_rule("rack07", db)("rack07-ct12", CONNECTOR).startswith("no complete burn-in")


def test_the_latest_run_decides(db):
    burnin(db, 60, failing=["rack07/ct12/j2"])
    burnin(db, 120, verdict="pass")
    assert validation_rule("rack07", db)("rack07-ct12", CONNECTOR) is None


def test_a_hold_with_no_drain_on_record_or_a_health_hold_is_kept(db, tmp_path):
    burnin(db, 60, verdict="pass")
    rule = validation_rule("rack07", db)
    assert "no drain of it on this node is on record" in rule("rack07-ct09", Hold("rack07/ct09/gpu2", "replace_gpu"))
    assert "opsctl health rack07/ct17 --slurm" in rule("rack07-ct17", Hold("rack07/ct17", HEALTH_ACTION))
    missing = validation_rule("rack07", f"sqlite:///{tmp_path / 'none.sqlite'}")("rack07-ct12", CONNECTOR)
    assert missing.startswith("the ledger cannot be read (no ledger at")


def test_resume_parts_releases_the_validated_hold_and_keeps_the_other_on_the_same_node(monkeypatch):
    from opsctl.slurm import containment, scontrol

    reason = reason_of([CONNECTOR, LINK])
    monkeypatch.setattr(containment, "_states", lambda nodes, dry_run: (
        {n: scontrol.NodeState(n, "IDLE+DRAIN", reason, "", "") for n in nodes}, ""))

    def why_kept(node, hold):
        return "the burnin of 2026-03-02 still fails it" if hold == LINK else None

    result = resume_parts(["rack07"], ["rack07-ct12"], dry_run=True, why_kept=why_kept)
    [node] = result.nodes
    assert node.released == [CONNECTOR] and node.reason_after == reason_of([LINK])
    assert "not validated: rack07/ct05/gpu1/nvl07: the burnin of 2026-03-02 still fails it" in node.detail
    result = resume_parts(["rack07"], ["rack07-ct12"], dry_run=True, why_kept=lambda node, hold: "not yet")
    assert [n.outcome for n in result.nodes] == [UNVALIDATED] and result.commands == []
    result = resume_parts(["rack07"], ["rack07-ct12"], dry_run=True)
    assert [n.outcome for n in result.nodes] == [RESUMED]
