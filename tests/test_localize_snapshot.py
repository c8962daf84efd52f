"""Reading the link-health snapshot: what is accepted, and every malformed file refused
with one line naming the file, the entry and the field (exit 2)."""

import json

import pytest

from opsctl.localize import localize
from tests.conftest import assert_one_line_error


def snapshot(rack="rack07", model="gb200-nvl72", **extra):
    """A whole GB200 rack read over a minute: every link up with in-spec BER noise and its NVLink 5
    counters (no data-link counter: Blackwell has none), except ct03/gpu2 port 5, which errors far
    past DCGM's limits."""
    links = []
    for tray in range(1, 19):
        for gpu in range(4):
            for port in range(18):
                links.append({"gpu": f"{rack}/ct{tray:02d}/gpu{gpu}", "port": port, "state": "up",
                              "symbol_errors": 0, "rcv_errors": 0, "link_down_events": 0,
                              "effective_ber": ((tray * 7 + gpu * 3 + port) % 5 + 1) * 1e-15})
    links[(2 * 4 + 2) * 18 + 5].update({"symbol_errors": 720, "rcv_errors": 360})
    gpus = [{"id": f"{rack}/ct{tray:02d}/gpu{gpu}", "reachable": True, "xids": []} for tray in range(1, 19) for gpu in range(4)]
    document = {"rack": rack, "model": model, "window_seconds": 60, "links": links, "gpus": gpus}
    document.update(extra)
    return document


def write(tmp_path, document, name="snap.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


def test_a_small_snapshot_names_its_bad_link(opsctl, tmp_path):
    result = opsctl("localize", write(tmp_path, snapshot()), "--json")
    assert result.code == 1
    rack = result.json()["racks"][0]
    first = rack["suspects"][0]
    # One failing link read at one end: the rulebook's verdict, not the size of its counts, is the
    # evidence, so about a tenth of the belief stays with the parts around it (its connector…).
    assert first["component"] == "rack07/ct03/gpu2/nvl05" and first["kind"] == "link" and first["score"] > 0.85
    assert rack["observed"]["links"] == 1296 and rack["status"] == "faulty"
    assert [s["component"] for s in rack["suspects"] if "alternative_to" not in s] == ["rack07/ct03/gpu2/nvl05"]
    assert first["evidence"][0] == "rack07/ct03/gpu2/nvl05: symbol errors 720, receive errors 360, BER 3e-15 at the GPU end, in 60 s"


def test_with_few_links_read_the_localizer_does_not_pretend_to_know(opsctl, tmp_path, rack07_topology):
    """Read one bad link and nothing else: every part on its path fits equally, so no part may
    claim a high score (missing readings are not healthy ones)."""
    sparse = snapshot()
    sparse["links"] = [link for link in sparse["links"] if link["gpu"] == "rack07/ct03/gpu2" and link["port"] == 5]
    rack = opsctl("localize", write(tmp_path, sparse), "--json").json()["racks"][0]
    assert rack["suspects"] and rack["suspects"][0]["score"] < 0.9
    on_its_path = {c.id for c in rack07_topology.components.values() if "rack07/ct03/gpu2/nvl05" in c.links}
    assert {s["component"] for s in rack["suspects"]} <= on_its_path


def test_ids_may_leave_out_the_rack_and_a_file_may_hold_a_fleet(opsctl, tmp_path):
    relative = snapshot()
    for link in relative["links"]:
        link["gpu"] = link["gpu"].removeprefix("rack07/")
    fleet = [relative, snapshot(rack="rack08")]
    result = opsctl("localize", write(tmp_path, fleet), "--json")
    assert result.code == 1
    assert [r["rack"] for r in result.json()["racks"]] == ["rack07", "rack08"]
    assert result.json()["racks"][1]["suspects"][0]["component"] == "rack08/ct03/gpu2/nvl05"


def test_a_switch_side_entry_with_no_reading_is_observed_but_no_evidence():
    plain = snapshot()
    mixed = snapshot()
    mixed["links"].append({"side": "switch", "gpu": "rack07/ct01/gpu0", "port": 0})  # read, but no reading: no evidence
    without = localize([plain])["racks"][0]
    with_it = localize([mixed])["racks"][0]
    assert [s["component"] for s in without["suspects"]] == [s["component"] for s in with_it["suspects"]]
    assert without["suspects"][0]["score"] == pytest.approx(with_it["suspects"][0]["score"], abs=1e-9)
    assert with_it["observed"]["switch_side_links"] == 1 and without["observed"]["switch_side_links"] == 0


@pytest.mark.parametrize("change, fragment", [
    ({"model": "gb300-nvl144"}, "model: invalid enum value 'gb300-nvl144'"),
    ({"rack": "rack 07"}, "rack: expected `str` matching regex '^[A-Za-z0-9_.-]+$'"),
    ({"window_seconds": 0}, "window_seconds: expected `float` > 0.0"),
    ({"window_seconds": "600"}, "window_seconds: expected `float`, got `str`"),
    ({"window_seconds": 604800.5}, "window_seconds: expected `float` <= 604800.0"),
    ({"window_seconds": 1e308}, "window_seconds: expected `float` <= 604800.0"),
    ({"links": {"gpu": "x"}}, "links: expected `array`, got `object`"),
    ({"links": [{"gpu": "rack07/ct19/gpu0", "port": 1}]}, "links[0]: rack07/ct19/gpu0 is not a GPU of gb200-nvl72"),
    ({"links": [{"gpu": "rack07/ct01/gpu0", "port": 18}]}, "links[0]: rack07/ct01/gpu0 has no NVLink port 18"),
    ({"links": [{"gpu": "rack07/ct01/gpu0", "port": "5"}]}, "links[0].port: expected `int | null`, got `str`"),
    ({"links": [{"gpu": "rack07/ct01/gpu0", "port": 5, "crc_errors": -3}]}, "links[0].crc_errors: expected `int` >= 0"),
    ({"links": [{"gpu": "rack07/ct01/gpu0", "port": 5, "state": "flapping"}]}, "links[0].state: invalid enum value 'flapping'"),
    ({"links": [{"gpu": "rack07/ct01/gpu0", "port": 5}, {"gpu": "rack07/ct01/gpu0", "port": 5}]},
     "links[1]: rack07/ct01/gpu0/nvl05 (gpu side) is listed twice"),
    ({"links": [{"side": "left", "gpu": "rack07/ct01/gpu0", "port": 5}]}, "links[0].side: invalid enum value 'left'"),
    ({"links": [{"side": "switch", "switch": "rack07/st3/sw1", "switch_port": 99}]}, "has no NVLink switch_port 99"),
    ({"gpus": [{"id": "rack07/ct01/gpu9"}]}, "gpus[0]: rack07/ct01/gpu9 is not a GPU of gb200-nvl72"),
    ({"gpus": [{"id": "rack08/ct01/gpu0"}]}, "gpus[0]: rack08/ct01/gpu0 is a GPU of rack rack08, but this snapshot is of rack rack07"),
    ({"links": [{"side": "switch", "link": "rack08/ct01/gpu0/nvl05"}]}, "is a link of rack rack08, but this snapshot is of rack rack07"),
    ({"gpus": [{"id": "rack07/ct01/gpu0", "xids": ["149"]}]}, "gpus[0].xids[0]: expected `int | object`, got `str`"),
    ({"gpus": [{"id": "rack07/ct01/gpu0", "xids": [{"xid": 149, "time": "noon"}]}]}, "gpus[0].xids[0].time: expected unix seconds or an ISO 8601 time"),
    ({"gpus": [{"id": "rack07/ct01/gpu0", "reachable": "yes"}]}, "gpus[0].reachable: expected `bool`, got `str`"),
    ({"trays": [{"tray": "ct40", "status": "unreachable"}]}, "trays[0]: 'ct40' is not a tray of gb200-nvl72"),
    ({"links": [{"gpu": "rack07/ct01/gpu0"}]}, "links[0]: port missing"),
    ({"links": [{"gpu": "rack07/ct01/gpu0", "port": 5, "crc": 3}]}, "links[0]: object contains unknown field `crc`"),
    ({"gpus": [{"id": "rack07/ct01/gpu0", "xids": [{"xid": 2**32}]}]}, "gpus[0].xids[0].xid: expected `int` <= 4294967295"),
])
def test_a_malformed_snapshot_is_one_line_and_exit_2(opsctl, tmp_path, change, fragment):
    result = opsctl("localize", write(tmp_path, snapshot(**change)), "--json")
    line = assert_one_line_error(result, 2, fragment)
    assert "snap.json" in line and result.out == ""


@pytest.mark.parametrize("text, fragment", [
    ("{\"rack\": ", "not valid JSON: Expecting value"),
    ("rack: [rack07\n", "not valid YAML"),
    ("[]", "holds no snapshot"),
    ("[1, 2]", "snap.json[0]: expected a snapshot"),
    ("just words", "expected a snapshot"),
])
def test_files_that_are_not_snapshots(opsctl, tmp_path, text, fragment):
    assert_one_line_error(opsctl("localize", write(tmp_path, text)), 2, fragment)


def test_missing_file_and_a_rack_twice(opsctl, tmp_path):
    assert_one_line_error(opsctl("localize", tmp_path / "nope.json"), 2, "nope.json: no such file")
    path = write(tmp_path, snapshot())
    assert_one_line_error(opsctl("localize", path, path), 2, "rack rack07 is also in")


def test_a_rack_the_inventory_knows_must_match_its_model(opsctl, tmp_path):
    # rack07 is a GB200 NVL72 in the built-in inventory.
    wrong = snapshot(model="hgx-h100", links=[], gpus=[])
    assert_one_line_error(opsctl("localize", write(tmp_path, wrong)), 2, "rack rack07 is a gb200-nvl72 in the inventory")


def test_bad_input_from_a_real_process_prints_no_traceback(opsctl_process, tmp_path):
    result = opsctl_process("localize", write(tmp_path, snapshot(model="gb300-nvl144")))
    assert_one_line_error(result, 2, "model: invalid enum value 'gb300-nvl144'")


@pytest.mark.slow
def test_many_files_are_shared_among_processes_with_the_same_answers(opsctl, tmp_path):
    from opsctl.localize import PARALLEL_FROM_FILES, localize_files

    paths = [write(tmp_path, snapshot(rack=f"r{i:02d}"), f"r{i:02d}.json") for i in range(PARALLEL_FROM_FILES + 2)]
    together = localize_files(paths, workers=2)
    alone = localize_files(paths, workers=1)
    assert [r["rack"] for r in together["racks"]] == [f"r{i:02d}" for i in range(len(paths))]
    assert together == alone
    result = opsctl("localize", *paths, "--json")
    assert result.code == 1 and len(result.json()["racks"]) == len(paths)
    # A bad file among them is still one clear line naming it, whichever process read it.
    write(tmp_path, snapshot(rack="r05", model="gb300-nvl144"), "r05.json")
    assert_one_line_error(opsctl("localize", *paths), 2, "r05.json: model: invalid enum value 'gb300-nvl144'")
    write(tmp_path, snapshot(rack="r03"), "r05.json")
    assert_one_line_error(opsctl("localize", *paths), 2, "rack r03 is also in")
