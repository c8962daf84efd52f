"""The simulator's one record per GPU model (probes/sim/sku_models.py SIM_SKUS) says what the
rulebook's file of that model (probes/references/<sku>.yaml) says: the judge tells a simulated
GPU's model by its name and PCI device id, and asks for the counters of its NVLink generation
and the host link it names, as on a real tray."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from opsctl.rack_models import MODELS
from probes.shipped_yaml import load_shipped_yaml
from probes.sim.sku_models import SIM_SKUS

REFERENCES = Path(__file__).resolve().parent.parent / "probes" / "references"
# At collection, on every worker: libyaml's loader (probes.shipped_yaml), not the pure-Python one.
SKUS = sorted(path.stem for path in REFERENCES.glob("*.yaml") if "sku" in load_shipped_yaml(path))


def test_every_model_with_a_reference_file_or_a_rack_is_simulated() -> None:
    assert SKUS and set(SKUS) == set(SIM_SKUS)
    assert {model.sku for model in MODELS.values()} <= set(SIM_SKUS)


@pytest.mark.parametrize("sku", SKUS)
def test_the_record_agrees_with_the_rulebook(sku: str) -> None:
    refs, record = yaml.safe_load((REFERENCES / f"{sku}.yaml").read_text()), SIM_SKUS[sku]
    assert any(record.name.startswith(name) for name in refs["names"])
    assert f"{record.pci_device_id:04x}" in refs["pci_device_ids"]
    assert record.nvlink_version == refs["nvlink_generation"]
    assert record.host_link == refs["host_link"]
    if "tdp" in refs:  # a datasheet's figure (none is cited for B200 and GB200 yet, docs/sources.md)
        assert record.tdp_w == refs["tdp"]["watts"]


@pytest.mark.parametrize("sku", SKUS)
def test_the_data_link_counters_are_reported_where_the_rulebook_says_the_generation_has_them(sku: str) -> None:
    # rules.yaml nvlink_not_reported: NVLink 5 has no data-link CRC, replay or recovery counter (NVML
    # change log, v560 to v565); the simulator's record of each model answers accordingly.
    rules = load_shipped_yaml(REFERENCES / "rules.yaml")
    record = SIM_SKUS[sku]
    missing = set(rules["nvlink_not_reported"].get(record.nvlink_version, []))
    assert record.nvlink_dl_counters == (not {"crc_errors", "replay_errors", "recovery_errors"} & missing)
    assert record.nvlink_dl_counters == (record.nvlink_version == 4)
