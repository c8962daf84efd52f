"""`opsctl tco run --from-ledger`: the fleet's measured MTBI and repairs price the run, and the
output says they did."""

from opsctl.ledger import close_repair, open_ledger, open_repair, record_burnin, record_triage
from tests.conftest import REPO, assert_one_line_error
from tests.test_ledger import ACCEPTED, triage

SCENARIO = REPO / "scenarios" / "llama4-16k-gb200-mtbi2000-spares-charged.yaml"


def history(url, repair_hours):
    """rack07 in service; two failures in ten days, each repaired in `repair_hours` with the rack drained."""
    with open_ledger(url) as ledger:
        record_burnin(ACCEPTED, ledger)
        for day in (3, 7):
            record_triage(triage("rack07/st3/sw1", "switch_chip"), ledger, at=f"2026-01-0{day}T00:00Z")
            open_repair("rack07/st3", ledger, action="replace_switch_tray", by="ana", at=f"2026-01-0{day}T00:30Z")
            close_repair("rack07/st3", ledger, by="ana", at=f"2026-01-0{day}T{repair_hours:02d}:00Z")


def test_measured_reliability_replaces_the_published_figures(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    history(url, repair_hours=3)
    published = opsctl("tco", "run", SCENARIO, "--json").json()
    measured = opsctl("tco", "run", SCENARIO, "--from-ledger", "--db", url, "--json")
    assert measured.code == 0, measured.err
    document = measured.json()
    taken = document["reliability_from"]["measured"]
    assert taken["blast_radius_gpus"] == 72 and taken["repair_hours"] == 3.0
    assert document["reliability"]["mtbi_gpu_days"] == taken["mtbi_gpu_days"] != published["reliability"]["mtbi_gpu_days"]
    assert "measured by the opsctl ledger" in document["reliability_from"]["source"]
    table = opsctl("tco", "run", SCENARIO, "--from-ledger", "--db", url)
    assert "reliability measured by the opsctl ledger" in " ".join(table.out.split())


def test_slower_repairs_in_the_ledger_cost_more_per_token(opsctl, tmp_path):
    prices = []
    for hours in (2, 9):
        url = f"sqlite:///{tmp_path / f'ledger{hours}.sqlite'}"
        history(url, repair_hours=hours)
        prices.append(opsctl("tco", "run", SCENARIO, "--from-ledger", "--db", url, "--json").json()["effective_cost_per_million_tokens"])
    assert prices[1] > prices[0]


def test_from_ledger_needs_a_ledger_with_a_rack_in_service(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    # A ledger that is not there is not made up empty: reading it is an input error.
    assert_one_line_error(opsctl("tco", "run", SCENARIO, "--from-ledger", "--db", url), 2, "no ledger at")
    assert not (tmp_path / "empty.sqlite").exists()
    open_ledger(url).close()  # a ledger with nothing in it
    assert_one_line_error(opsctl("tco", "run", SCENARIO, "--from-ledger", "--db", url), 2, "no rack in service")
    assert_one_line_error(opsctl("tco", "run", SCENARIO, "--since", "2026-01-01"), 2, "go with --from-ledger")
    plain = REPO / "scenarios" / next(p.name for p in (REPO / "scenarios").glob("gpt3*h100*fp8*dec2024*hyperscaler*"))
    history(f"sqlite:///{tmp_path / 'one.sqlite'}", repair_hours=3)
    assert_one_line_error(opsctl("tco", "run", plain, "--from-ledger", "--db", f"sqlite:///{tmp_path / 'one.sqlite'}"),
                          2, "needs a reliability block")
