"""Every fault kind, part kind, XID workflow and alert maps to a runbook that exists, and each
runbook's front matter agrees with the repair model."""

from pathlib import Path

import pytest
import yaml

from opsctl.errors import InputError
from opsctl.localize.evidence import GPU_XIDS
from opsctl.mttr import load_mttr_model
from opsctl.rack_models import MODELS
from opsctl.runbooks import RUNBOOK_DIR, load_runbooks, parse_runbook, runbook_for
from opsctl.simulation.scenario import FAULT_KINDS
from opsctl.topology import build_topology
from probes.xids import catalog as xid_catalog
from probes.xids import rulings
from tests.conftest import PRIVATE_SOURCES

REPO = Path(__file__).resolve().parent.parent
RULES_DIR = REPO / "exporters" / "rules"
XID_WORKFLOWS = [74, 79, 48, 63, 64, 94, 95, 140, 119, 120, 144, 145, 146, 147, 148, 149, 150, 154]
RUNBOOK_FILES = ["link", "gpu", "compute-tray", "connector", "cartridge", "switch-chip", "switch-tray", "baseboard",
                 "xid-74-nvlink", "xid-79-fell-off-bus", "xid-memory", "xid-gsp", "xid-nvlink5", "xid-149-link-down",
                 "xid-154-recovery-action", "thermal-throttle", "power-brake", "fabric-degraded", "silent-data-corruption",
                 "slow-gpu", "gpu-missing", "exporter-down", "hbm-memory-test", "gpu-configuration", "host-link",
                 "nvlink-domain", "switch-firmware"]


def exists(path):
    return path is not None and (REPO / path).is_file()


def test_the_runbooks_others_link_to_are_all_there():
    assert sorted(r.path for r in load_runbooks()) == sorted(f"runbooks/{name}.md" for name in RUNBOOK_FILES)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_part_kind_of_every_rack_model_has_a_runbook(model):
    kinds = set(build_topology("r1", MODELS[model]).counts())
    for kind in kinds:
        assert exists(runbook_for(kind=kind)), kind


def test_every_simulated_fault_kind_has_a_runbook():
    for kind in FAULT_KINDS:
        assert exists(runbook_for(kind=kind)), kind


def test_every_xid_workflow_and_every_xid_the_localizer_blames_has_a_runbook():
    # As the localizer asks: a GPU suspect with its telling XIDs (opsctl/localize/result.py).
    for xid in sorted(set(XID_WORKFLOWS) | set(GPU_XIDS)):
        assert exists(runbook_for(kind="gpu", xids=[xid])), xid
    assert runbook_for(kind="gpu", xids=[145]) == "runbooks/xid-nvlink5.md"
    assert runbook_for(kind="gpu", xids=[149]) == "runbooks/xid-149-link-down.md"
    assert runbook_for(kind="gpu", xids=[140]) == "runbooks/xid-memory.md"
    assert runbook_for(kind="gpu", xids=[999]) == "runbooks/gpu.md"  # not in the catalog


def test_the_catalogs_runbook_map_and_the_runbooks_front_matter_agree():
    catalog = xid_catalog()
    mapped = catalog["runbooks"]
    listed = {}
    for runbook in load_runbooks():
        for xid in runbook.xids:
            assert xid not in listed, f"XID {xid} in {listed.get(xid)} and {runbook.path}"
            listed[xid] = runbook.path
    # Each code the catalog maps to a runbook is in that runbook's front matter ...
    assert {code: listed.get(code) for code in mapped} == {code: f"runbooks/{name}" for code, name in mapped.items()}
    # ... and a runbook lists only catalog codes that go to it (unmapped codes go to the default).
    for xid, path in listed.items():
        assert xid in catalog["xids"], f"{path} lists XID {xid}, which the catalog does not"
        assert path == f"runbooks/{mapped.get(xid, catalog['default_runbook'])}", xid
    # And every catalog code reaches its runbook the way the localizer asks for it.
    for code, ruling in rulings().items():
        assert runbook_for(kind="gpu", xids=[code]) == f"runbooks/{ruling.runbook}", code




def test_runbooks_cite_public_sources_and_no_echo_xid():
    for path in sorted(RUNBOOK_DIR.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        assert [name for name in PRIVATE_SOURCES if name in text] == [], path.name
        # NVIDIA documents no XID that other GPUs log because one link failed.
        assert "echo" not in text.lower() and "downstream" not in text.lower(), path.name


def alert_rules():
    rules = []
    for path in sorted(RULES_DIR.glob("*.yml")):
        for group in (yaml.safe_load(path.read_text()) or {}).get("groups", []):
            rules += [(path.name, rule) for rule in group.get("rules", []) if "alert" in rule]
    return rules


@pytest.mark.skipif(not RULES_DIR.is_dir(), reason="no alert rules in exporters/rules yet")
def test_every_alert_links_a_runbook_that_exists_and_lists_the_alert():
    rules = alert_rules()
    assert rules, "exporters/rules holds no alert rules"
    for source, rule in rules:
        url = rule.get("annotations", {}).get("runbook_url")
        assert exists(url), f"{source}: {rule['alert']} links {url!r}"
        # The runbook says which alerts send people to it, so the link can be checked both ways.
        assert runbook_for(alert=rule["alert"]) == url, f"{source}: {rule['alert']} is not in {url}'s front matter"


def test_front_matter_agrees_with_the_repair_model():
    mttr = load_mttr_model()
    for runbook in load_runbooks():
        assert runbook.title and runbook.sources, runbook.path
        if runbook.action in mttr.actions:
            assert runbook.expected_hours == pytest.approx(mttr.actions[runbook.action].mttr_hours), runbook.path
        else:  # not a repair of a part (cooling, power, the exporter): the hours are an estimate that says so
            assert any("estimate" in source for source in runbook.sources), runbook.path


def test_each_runbook_walks_through_confirm_contain_repair_validate():
    for path in sorted(RUNBOOK_DIR.glob("*.md")):
        if path.name == "README.md":
            continue
        body = path.read_text()
        for step in ("## 1. Confirm", "## 2. Contain", "## 3. Repair", "## 4. Validate"):
            assert step in body, f"{path.name}: {step}"
        assert "opsctl " in body, path.name


@pytest.mark.parametrize("text, message", [
    ("# no front matter\n", "starts with YAML front matter"),
    ("---\ntitle: x\n", "not closed"),
    ("---\ntitle: x\n---\nbody\n", "missing action, alerts, expected_hours, kinds, sources, xids"),
    ("---\ntitle: x\nkinds: []\nxids: [abc]\nalerts: []\naction: a\nexpected_hours: 1\nsources: []\n---\nbody\n", "xids must be XID numbers"),
    ("---\ntitle: x\nkinds: []\nxids: []\nalerts: []\naction: a\nexpected_hours: 1\nsources: []\nowner: me\n---\nbody\n", "unknown key(s) owner"),
    ("---\ntitle: x\nkinds: []\nxids: []\nalerts: []\naction: a\nexpected_hours: 1\nsources: []\n---\n\n", "has no body"),
])
def test_a_malformed_runbook_is_refused(text, message):
    with pytest.raises(InputError) as error:
        parse_runbook(text, "runbooks/bad.md")
    assert message in str(error.value)
