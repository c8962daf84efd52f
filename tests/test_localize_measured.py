"""A link or tray that failed a measurement of its own (a snapshot entry's `failed_checks`:
a link's traffic, the NVLink domain bisection's slow tray) is evidence beside the counters:
the localizer names the smallest part behind every failing link — a switch chip for its 72
slow links, a link for one — and a slow tray that no part inside it explains."""

import random

import pytest

from opsctl.errors import InputError
from opsctl.localize import localize_snapshot

SLOW = [{"check": "nvlink.link_traffic", "value": 11.1, "reason": "port 4 carried 11.1 GB/s, the GPU's median link 22.2 GB/s"}]
BISECTION = [{"check": "collective.bisection", "value": 690.0, "reason": "the all-reduce by halves narrowed to it"}]


def snapshot(topology, slow=(), errors=(), trays=None):
    """Every link read clean at both ends, but `slow` (a failed traffic check, clean counters)
    and `errors` (a receive error at the GPU end: NVLink 5, no data-link counter on Blackwell);
    trays: {tray: failed checks}."""
    links = []
    for link_id, link in sorted(topology.links.items()):
        entry = {"gpu": link.gpu, "port": link.port, "state": "up", "symbol_errors": 0,
                 "rcv_errors": 1 if link_id in errors else 0}
        if link_id in slow:
            entry["failed_checks"] = SLOW
        links += [entry, {"link": link_id, "side": "switch", "state": "up", "symbol_errors": 0, "rcv_errors": 0}]
    document = {"rack": topology.rack, "model": topology.model.name, "window_seconds": 60, "links": links, "gpus": []}
    if trays:
        document["trays"] = [{"tray": tray, "status": "complete", "failed_checks": checks} for tray, checks in trays.items()]
    return document


def faults(topology, **kwargs):
    result = localize_snapshot(snapshot(topology, **kwargs), topology)
    return {s["component"]: s for s in result["suspects"] if "alternative_to" not in s}


def chip_links(topology, chip="rack07/st3/sw0"):
    return sorted(topology.components[chip].links)


def test_every_link_of_a_switch_chip_slow_names_the_chip(rack07_topology):
    found = faults(rack07_topology, slow=chip_links(rack07_topology))
    assert list(found) == ["rack07/st3/sw0"]
    chip = found["rack07/st3/sw0"]
    assert chip["kind"] == "switch_chip" and len(chip["links"]) == 72 and chip["repair"] == "replace_switch_tray"
    assert "failed nvlink.link_traffic (port 4 carried" in chip["evidence"][0] and "clean at the GPU end" in chip["evidence"][0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nearly_all_of_a_chips_links_slow_still_names_the_chip(rack07_topology, seed):
    slow = random.Random(seed).sample(chip_links(rack07_topology), 66)  # 6 of its 72 links carry their bytes
    assert list(faults(rack07_topology, slow=slow)) == ["rack07/st3/sw0"]


def test_one_slow_link_names_the_link_not_its_chip(rack07_topology):
    found = faults(rack07_topology, slow=["rack07/ct01/gpu0/nvl04"])
    assert list(found) == ["rack07/ct01/gpu0/nvl04"] and found["rack07/ct01/gpu0/nvl04"]["kind"] == "link"


def test_two_slow_links_on_different_chips_are_two_links(rack07_topology):
    slow = ["rack07/ct01/gpu0/nvl04", "rack07/ct10/gpu2/nvl13"]  # st3/sw0 and st7/sw1: no part but the rack in common
    assert set(faults(rack07_topology, slow=slow)) == set(slow)


def test_slow_links_name_the_part_their_counters_would(rack07_topology):
    """Three links of one compute-tray connector, or a switch connector's 40: the same part,
    whether the links fail their traffic check or their counters."""
    three = ["rack07/ct12/gpu2/nvl02", "rack07/ct12/gpu3/nvl00", "rack07/ct12/gpu3/nvl04"]
    forty = sorted(rack07_topology.components["rack07/st3/j0"].links)
    for links, part in ((three, "rack07/ct12/j2"), (forty, "rack07/st3/j0")):
        assert list(faults(rack07_topology, slow=links)) == [part]
        assert list(faults(rack07_topology, errors=links)) == [part]


def test_a_slow_tray_nothing_inside_explains_is_named_with_its_repair(rack07_topology):
    found = faults(rack07_topology, trays={"ct05": BISECTION})
    tray = found["rack07/ct05"]
    assert list(found) == ["rack07/ct05"] and tray["kind"] == "compute_tray" and tray["score"] == 1.0
    assert tray["evidence"] == ["failed collective.bisection: the all-reduce by halves narrowed to it"]
    assert tray["action"] and tray["mttr_hours"] > 0 and tray["runbook"] == "runbooks/compute-tray.md"
    assert "no part inside it explains" in tray["judgement"]["judged"]


def test_a_slow_link_inside_the_slow_tray_explains_it_one_elsewhere_does_not(rack07_topology):
    inside = faults(rack07_topology, slow=["rack07/ct05/gpu1/nvl03"], trays={"ct05": BISECTION})
    assert list(inside) == ["rack07/ct05/gpu1/nvl03"]
    elsewhere = faults(rack07_topology, slow=["rack07/ct06/gpu1/nvl03"], trays={"ct05": BISECTION})
    assert set(elsewhere) == {"rack07/ct06/gpu1/nvl03", "rack07/ct05"}


def test_a_bad_link_through_a_switch_tray_does_not_explain_its_firmware(rack07_topology):
    """A switch tray flashed with other firmware is its own fault, beside a faulty link that runs
    through it (only a slow bisection half is a part inside's doing)."""
    firmware = [{"check": "switch_tray.firmware", "value": "35.2014.1100", "reason": "flashed with another firmware"}]
    [link] = [link_id for link_id, link in sorted(rack07_topology.links.items()) if link.switch.startswith("rack07/st3/")][:1]
    found = faults(rack07_topology, slow=[link], trays={"st3": firmware})
    assert set(found) == {link, "rack07/st3"} and found["rack07/st3"]["repair"] == "update_switch_firmware"


@pytest.mark.parametrize("where", ["links", "trays"])
def test_malformed_failed_checks_are_refused(rack07_topology, where):
    document = snapshot(rack07_topology, slow=["rack07/ct01/gpu0/nvl04"], trays={"ct05": BISECTION})
    entry = next(e for e in document[where] if "failed_checks" in e)
    entry["failed_checks"] = ["slow"]
    with pytest.raises(InputError, match=rf"{where}\[\d+\]\.failed_checks\[0\]: expected `object`, got `str`$"):
        localize_snapshot(document, rack07_topology)
