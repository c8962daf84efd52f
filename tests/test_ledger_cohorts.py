"""The fleet's record by cohort and age, on generated fleets whose true rates and shapes are known
(bench/cohort_fleets.py): the intervals cover at their level, the cohort test holds its
false-positive rate and names the worse batch, the Weibull shape is recovered; and the commands
that print, plot and export them, on SQLite and PostgreSQL."""

import json
import math
import subprocess
import sys

import pytest

from bench.cohort_fleets import batch_fleet, export_document, weibull_fleet
from opsctl.cli import run
from opsctl.ledger.ages import kaplan_meier, units, weibull_fit
from opsctl.ledger.cohorts import Snapshot, cohort_statistics
from opsctl.ledger.intervals import poisson_interval
from opsctl.ledger.rate_tests import compare_rates, holm
from opsctl.mttr import load_mttr_model

FLEETS = 400


def _tolerance(p, n, sigmas=3.0):
    """How far a share of n independent trials may stray from p by chance (3 binomial standard errors)."""
    return sigmas * math.sqrt(p * (1 - p) / n)


def test_the_exact_poisson_interval_covers_the_true_rate_at_its_level():
    """400 generated fleets at one known rate: the 95 % interval on the measured failure rate holds
    the true one in at least 95 % of them, less the binomial tolerance (exact intervals are conservative)."""
    import numpy as np

    rng = np.random.default_rng(7)
    gpu_days = 72 * 12 * 180.0  # twelve NVL72 racks for half a year
    true_rate = 1 / 2000.0  # per GPU-day
    covered = 0
    for count in rng.poisson(true_rate * gpu_days, FLEETS):
        low, high = poisson_interval(int(count), 0.95)
        covered += low / gpu_days <= true_rate <= high / gpu_days
    assert covered / FLEETS >= 0.95 - _tolerance(0.95, FLEETS)


def test_the_ledger_interval_on_a_generated_fleet_covers_the_true_mtbi():
    """Through the ledger's own statistics (exposure from handovers, failures from incidents): the
    fleet's MTBI interval holds the generated MTBI in about 95 % of 60 generated fleets."""
    mttr = load_mttr_model()
    fleets, covered = 60, 0
    for seed in range(fleets):
        tables, until = batch_fleet({"B1": 2000.0}, racks_per_batch=4, days=120, seed=seed)
        stats = cohort_statistics(Snapshot(tables, "generated"), "batch", until=until, mttr_model=mttr)
        low, high = stats["fleet"]["mtbi"]["interval"]
        covered += low <= 2000.0 <= (high or math.inf)
    assert covered / fleets >= 0.95 - _tolerance(0.95, fleets)


def test_the_cohort_test_holds_its_false_positive_rate_on_equal_batches():
    """Three batches failing at one rate: the test calls them different in at most 5 % of 400
    fleets (plus the binomial tolerance) — Holm over exact tests holds the family-wise error."""
    import numpy as np

    rng = np.random.default_rng(11)
    exposure = {"B1": 60_000.0, "B2": 40_000.0, "B3": 80_000.0}
    rate = 1 / 1500.0
    false_alarms = 0
    for _ in range(FLEETS):
        counts = {name: (int(rng.poisson(rate * e)), e) for name, e in exposure.items()}
        false_alarms += compare_rates(counts, 0.95)["beyond_chance"]
    assert false_alarms / FLEETS <= 0.05 + _tolerance(0.05, FLEETS)


def test_the_cohort_test_names_the_worse_batch():
    """One batch at three times the others' rate is named worse (and only it) in nearly every fleet."""
    import numpy as np

    rng = np.random.default_rng(12)
    exposure = {"B1": 50_000.0, "B2": 50_000.0, "B3": 50_000.0}
    rates = {"B1": 1 / 3000.0, "B2": 1 / 3000.0, "B3": 1 / 1000.0}
    named = 0
    for _ in range(200):
        counts = {name: (int(rng.poisson(rates[name] * e)), e) for name, e in exposure.items()}
        result = compare_rates(counts, 0.95)
        named += result["worse"] == ["B3"]
    assert named / 200 >= 0.9


def test_two_cohorts_use_the_conditional_binomial_test():
    result = compare_rates({"A": (30, 10_000.0), "B": (10, 10_000.0)}, 0.95)
    assert result["worse"] == ["A"] and result["cohorts"]["A"]["against"] == "B"
    from scipy.stats import binomtest

    assert result["cohorts"]["A"]["p_value"] == pytest.approx(binomtest(30, 40, 0.5).pvalue, abs=1e-6)
    low, high = result["cohorts"]["A"]["interval"]
    assert low < 3.0 < high
    assert holm({"a": 0.01, "b": 0.04, "c": 0.03}) == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06})


@pytest.mark.slow  # fits over many generated fleets: seconds
def test_the_weibull_shape_is_recovered_and_its_interval_covers():
    """Fleets of 200 racks whose first failure comes at Weibull ages of shape 0.6 (infant mortality)
    or 1.8 (wear-out), later racks censored sooner: the fitted shape is within four standard errors
    of the truth (the shape's asymptotic standard error, shape × √6/π / √failures), its profile
    interval holds the truth in about 95 % of 20 fleets, and the verdict says which it is."""
    fleets = 20
    for shape, verdict in ((0.6, "infant_mortality"), (1.8, "wear_out")):
        covered = 0
        for seed in range(fleets):
            tables, until = weibull_fleet(shape, 300.0, racks=200, seed=seed)
            found = units(tables, "backplane", until=until)
            fit = weibull_fit([u.age_days for u in found], [u.failed for u in found])
            assert 60 < fit["failures"] < fit["racks"]  # censored racks are in it
            standard_error = shape * math.sqrt(6) / math.pi / math.sqrt(fit["failures"])
            assert abs(fit["shape"] - shape) < 4 * standard_error, (seed, fit)
            low, high = fit["shape_interval"]
            covered += low <= shape <= high
            if seed < 5:
                assert fit["verdict"] == verdict
        assert covered / fleets >= 0.95 - _tolerance(0.95, fleets)


def test_the_weibull_fit_agrees_with_its_profile_and_needs_two_failures():
    fit = weibull_fit([1.0, 2.0, 3.0, 5.0, 8.0, 4.0, 6.0, 10.0, 10.0], [True] * 5 + [False] * 4)
    assert fit["fitted"] and fit["shape_interval"][0] < fit["shape"] < fit["shape_interval"][1]
    assert weibull_fit([3.0, 4.0], [True, False])["fitted"] is False
    km = kaplan_meier([1.0, 2.0, 3.0, 4.0], [True, False, True, False])
    assert [p["survival"] for p in km["points"]] == pytest.approx([0.75, 0.375])


@pytest.fixture(scope="module")
def fleets(tmp_path_factory):
    """Two generated fleets as ledger exports: one batch of three failing three times as often, and equal batches."""
    folder = tmp_path_factory.mktemp("cohort-fleets")
    worse, until = batch_fleet({"B1": 3000.0, "B2": 3000.0, "B3": 1000.0}, racks_per_batch=4, seed=1, repair_hours=4.0,
                               kinds=("gpu", "cartridge", "switch_tray"), acceptance_failure=0.3)
    equal, _ = batch_fleet({"B1": 2000.0, "B2": 2000.0, "B3": 2000.0}, racks_per_batch=4, seed=3, repair_hours=4.0)
    (folder / "worse.json").write_text(json.dumps(export_document(worse)))
    (folder / "equal.json").write_text(json.dumps(export_document(equal)))
    return folder, until


def _imported(ledger_url, path):
    assert run(["ledger", "import", str(path), "--db", ledger_url]) == 0


def test_stats_by_batch_names_the_worse_batch_with_intervals(fleets, ledger_db, capsys, tmp_path):
    folder, until = fleets
    _imported(ledger_db, folder / "worse.json")
    capsys.readouterr()
    assert run(["ledger", "stats", "--by", "batch", "--until", until, "--db", ledger_db, "--json",
                "--plot", str(tmp_path / "cohorts.png")]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["comparison"]["worse"] == ["B3"]
    assert "batch B3 fails more often" in stats["verdict"]
    for cohort in stats["cohorts"].values():
        low, high = cohort["mtbi"]["interval"]
        assert low < cohort["mtbi"]["mtbi_gpu_days"] < high
        assert cohort["rma_ids"] and cohort["acceptance"]["racks_judged"] == 4
        assert cohort["time_to_restore"]["median_hours"] > 0
    assert (tmp_path / "cohorts.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert run(["ledger", "stats", "--by", "batch", "--until", until, "--db", ledger_db]) == 0
    out = capsys.readouterr().out
    assert "verdict: batch B3 fails more often than the rest" in out


def test_stats_by_batch_on_equal_batches_names_none(fleets, tmp_path, capsys):
    folder, until = fleets
    db = f"sqlite:///{tmp_path / 'equal.sqlite'}"
    _imported(db, folder / "equal.json")
    capsys.readouterr()
    assert run(["ledger", "stats", "--by", "batch", "--until", until, "--db", db, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["comparison"]["tested"] and not stats["comparison"]["beyond_chance"]
    assert stats["verdict"].startswith("no batch fails more or less often")


def test_age_prints_and_plots_the_curve_and_the_weibull_shape(fleets, tmp_path, capsys):
    folder, until = fleets
    db = f"sqlite:///{tmp_path / 'worse.sqlite'}"
    _imported(db, folder / "worse.json")
    capsys.readouterr()
    picture = tmp_path / "age.png"
    assert run(["ledger", "age", "--until", until, "--db", db, "--by", "batch", "--plot", str(picture)]) == 0
    out = capsys.readouterr().out
    assert "backplane" in out and "Weibull" in out and "Kaplan" in out
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert run(["ledger", "age", "--until", until, "--db", db, "--kind", "backplane", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    curve = stats["curves"][0]
    assert curve["group"] == "backplane" and curve["kinds"] == ["cable", "cartridge", "connector", "switch_tray"]
    assert curve["weibull"]["fitted"] and curve["kaplan_meier"]["points"]


def test_the_ledger_as_dataframes_and_parquet(fleets, ledger_db, tmp_path, capsys):
    """The frames read either backend through the ledger's store; Parquet holds the same rows."""
    import pandas as pd

    from opsctl.ledger.frames import read_frames

    folder, _ = fleets
    _imported(ledger_db, folder / "worse.json")
    frames = read_frames(ledger_db)
    assert len(frames.racks) == 12 and set(frames.racks["batch"]) == {"B1", "B2", "B3"}
    assert str(frames.incidents["occurred_at"].dtype).startswith("datetime64") and (frames.incidents["age_days"] > 0).all()
    assert frames.incidents.groupby("batch").size()["B3"] > frames.incidents.groupby("batch").size()["B1"]
    assert frames.repairs["restore_hours"].notna().all()
    capsys.readouterr()
    assert run(["ledger", "export", "--format", "parquet", "-o", str(tmp_path / "pq"), "--db", ledger_db]) == 0
    back = pd.read_parquet(tmp_path / "pq" / "incidents.parquet")
    assert len(back) == len(frames.incidents) and list(back["batch"]) == list(frames.incidents["batch"])
    assert run(["ledger", "table", "repairs", "-o", str(tmp_path / "repairs.csv"), "--db", ledger_db]) == 0
    assert len(pd.read_csv(tmp_path / "repairs.csv")) == len(frames.repairs)


def test_parquet_without_pyarrow_says_what_to_install(fleets, tmp_path):
    folder, _ = fleets
    db = f"sqlite:///{tmp_path / 'l.sqlite'}"
    _imported(db, folder / "equal.json")
    code = ("import sys; sys.modules['pyarrow'] = None\n"
            "import importlib.util; real = importlib.util.find_spec\n"
            "importlib.util.find_spec = lambda n, *a: None if n == 'pyarrow' else real(n, *a)\n"
            "from opsctl.cli import run; sys.exit(run(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, "ledger", "export", "--format", "parquet", "-o", str(tmp_path / "pq"),
                           "--db", db], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "pip install 'opsctl[parquet]'" in done.stderr


def test_help_and_health_do_not_import_pandas():
    code = ("import sys\nfrom opsctl.cli import run\nrun(sys.argv[1:])\n"
            "print('PANDAS' if 'pandas' in sys.modules else 'NO-PANDAS')")
    for argv in (["--help"], ["health", "rack07/ct03"], ["ledger", "--help"]):
        done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
        assert done.stdout.strip().endswith("NO-PANDAS"), (argv, done.stdout[-300:], done.stderr[-300:])


def test_racks_take_their_cohort_from_the_inventory(tmp_path):
    """opsctl_vendor, opsctl_batch, opsctl_firmware are read from the inventory when the ledger first
    hears of the rack, kept after; `ledger rack --batch` sets one by hand; any other variable by name."""
    from opsctl.ledger import open_ledger, set_rack
    from opsctl.ledger.cohorts import cohorts_of
    from opsctl.ledger.parts import Parts
    from opsctl.inventory import load_inventory

    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        "all:\n  children:\n    rack07:\n      vars: {opsctl_model: gb200-nvl72, opsctl_backend: sim, opsctl_transport: local,"
        " opsctl_vendor: odm-a, opsctl_batch: 2026-03, opsctl_firmware: '1.2.3', site: dc-east}\n"
        "      hosts:\n        rack07-ct01: {}\n")
    loaded = load_inventory(inventory)
    with open_ledger(f"sqlite:///{tmp_path / 'l.sqlite'}") as ledger:
        row = set_rack("rack07", ledger, parts=Parts(loaded))
        assert (row["vendor"], row["batch"], row["firmware"]) == ("odm-a", "2026-03", "1.2.3")
        row = set_rack("rack07", ledger, parts=Parts(loaded), cohort={"batch": "2026-04"})
        assert row["batch"] == "2026-04"
        assert cohorts_of([row], "site", loaded) == {"rack07": "dc-east"}
        assert cohorts_of([row], "opsctl_vendor", loaded) == {"rack07": "odm-a"}


def test_tco_from_ledger_prices_one_cohort(fleets, tmp_path, capsys):
    folder, until = fleets
    db = f"sqlite:///{tmp_path / 'l.sqlite'}"
    _imported(db, folder / "worse.json")
    scenario = "scenarios/llama4-16k-gb200-mtbi2000-spares-charged.yaml"
    capsys.readouterr()
    priced = {}
    for batch in ("B1", "B3"):
        code = run(["tco", "run", scenario, "--from-ledger", "--cohort", f"batch={batch}", "--until", until,
                    "--db", db, "--json", "--draws", "200"])
        assert code == 0
        document = json.loads(capsys.readouterr().out)
        assert document["reliability_from"]["cohort"]["value"] == batch
        assert all(r.startswith(batch.lower()) for r in document["reliability_from"]["cohort"]["racks"])
        priced[batch] = document["goodput"]
    assert priced["B3"] < priced["B1"]  # the worse batch loses more of the run to failures
    assert run(["tco", "run", scenario, "--from-ledger", "--cohort", "batch=B9", "--db", db]) == 2
