"""The README's install brings no PyTorch: acceptance of a fault-free simulated server and rack
still passes, with its NVLink domain collective run and reported, and no process of the run —
opsctl, the tray probes, the collective's ranks — ever imports torch.

torch is made unimportable by a package of that name first on PYTHONPATH, which writes its
importer's pid to a file and raises ImportError: the file staying absent proves nothing tried."""

import os
import sys

import pytest


def torch_blocked_env(tmp_path):
    shadow = tmp_path / "no-torch" / "torch"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "import os\n"
        "with open(os.environ['TORCH_IMPORT_MARK'], 'a') as mark:\n"
        "    mark.write(f'{os.getpid()}\\n')\n"
        "raise ImportError('torch is unimportable in this test')\n")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    mark = tmp_path / "torch-imported-by"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shadow.parent), repo, os.environ.get("PYTHONPATH", "")]),
               TORCH_IMPORT_MARK=str(mark))
    env.pop("OPSCTL_INVENTORY", None)
    return env, mark


def test_the_blocked_torch_really_is_unimportable(tmp_path):
    import subprocess

    env, mark = torch_blocked_env(tmp_path)
    proc = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "unimportable" in proc.stderr and mark.exists()


@pytest.mark.slow
def test_a_healthy_hgx_is_accepted_with_its_collective_and_no_torch(opsctl_process, tmp_path):
    env, mark = torch_blocked_env(tmp_path)
    result = opsctl_process("accept", "hgx01", "--duration", "2", "--json", "--no-ledger", "--out", tmp_path / "run", env=env)
    assert result.code == 0, result.err
    summary = result.json()
    assert summary["verdict"] == "PASS"
    domain = summary["domain"]
    assert domain["ran"] and domain["gpus"] == 8
    assert set(domain["results"]) == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}
    passed = {c["check"] for c in summary["checks"] if c["verdict"] == "pass"}
    assert "collective.verified" in passed and "collective.all_reduce.busbw.256M" in passed
    assert not mark.exists(), f"torch was imported by pid(s) {mark.read_text().split()}"


@pytest.mark.slow
def test_a_healthy_gb200_rack_is_accepted_with_its_72_gpu_collective_and_no_torch(opsctl_process, tmp_path):
    """Its own acceptance (about a minute): the shared rack07 run has faults, and what is proved
    here is that a fault-free NVL72 passes — every GPU in one job — with torch unimportable."""
    env, mark = torch_blocked_env(tmp_path)
    (tmp_path / "healthy.yaml").write_text("scenario: healthy\nseed: 3\nrack: rack12\nfaults: []\n")
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("all:\n  children:\n    rack12:\n      vars:\n        opsctl_model: gb200-nvl72\n"
                     "        opsctl_transport: local\n        opsctl_backend: sim\n        opsctl_scenario: healthy.yaml\n"
                     "      hosts:\n        rack12-ct[01:18]:\n        rack12-st[1:9]:\n")
    result = opsctl_process("--inventory", fleet, "accept", "rack12", "--duration", "2", "--json", "--no-ledger",
                            "--out", tmp_path / "run", env=env, timeout=900)
    assert result.code == 0, result.err
    summary = result.json()
    domain = summary["domain"]
    assert summary["verdict"] == "PASS" and domain["ran"] and domain["gpus"] == 72
    assert set(domain["results"]) == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}
    assert not mark.exists(), f"torch was imported by pid(s) {mark.read_text().split()}"


def test_a_collective_that_did_not_finish_says_so_and_why_never_none():
    """Every tray answered with an error and no result: the check and the handover page say it
    did not finish and why — no "None" where a person reads."""
    from opsctl.burnin.nvlink_domain import judge_domain
    from opsctl.inventory import load_inventory
    from opsctl.reports.domain_section import domain_html

    rack = load_inventory(None).rack("rack07")
    failed = {"status": "incomplete", "errors": ["rank 0: RuntimeError: the store went away"], "checks": []}
    document = {"ran": True, "trays": ["ct01", "ct02"],
                "collective": {t: {"status": "incomplete", "reason": None, "document": failed} for t in ("ct01", "ct02")}}
    checks, section, _ = judge_domain(rack, {}, {}, document)
    complete = next(c for c in checks if c.check == "collective.complete")
    assert complete.verdict == "incomplete" and complete.value == "did not finish" and "store went away" in complete.reason
    page = domain_html({"domain": section}, lambda headers, rows: "<table>" + "".join(rows) + "</table>")
    assert "did not finish" in page and "store went away" in page and "None" not in page
