"""The rack graph: component ids and counts, port p to chip p, the parts each link crosses."""

import csv

import pytest

from opsctl.errors import InputError
from opsctl.rack_models import model_named
from opsctl.topology import build_topology, default_cabling_map


def test_nvl72_counts_match_the_contract(rack07_topology):
    counts = rack07_topology.counts()
    assert counts["gpu"] == 72
    assert counts["compute_tray"] == 18
    assert counts["switch_tray"] == 9
    assert counts["switch_chip"] == 18
    assert counts["link"] == 1296
    assert counts["cartridge"] == 4
    assert counts["cable"] == 1296 * 4  # 5,184 copper cables in an NVL72 spine
    assert counts["connector"] == 18 * 4 + 9 * 4


def test_port_p_goes_to_chip_p_and_switch_port_is_the_rack_gpu_index(rack07_topology):
    for link in rack07_topology.links.values():
        assert link.chip_index == link.port
        assert link.switch_port == link.gpu_index
        tray, local = divmod(link.gpu_index, 4)
        assert link.gpu == f"rack07/ct{tray + 1:02d}/gpu{local}"
        switch_tray, chip_local = divmod(link.port, 2)
        assert link.switch == f"rack07/st{switch_tray + 1}/sw{chip_local}"


def test_component_ids_follow_the_contract(rack07_topology):
    components = rack07_topology.components
    assert components["rack07/ct03/gpu2"].kind == "gpu"
    assert components["rack07/st3/sw1"].kind == "switch_chip"
    assert components["rack07/st9"].kind == "switch_tray"
    assert components["rack07/ct18"].kind == "compute_tray"
    link = rack07_topology.link_for("rack07/ct03/gpu2", 5)
    assert link.id == "rack07/ct03/gpu2/nvl05"
    assert link.switch == "rack07/st3/sw1" and link.switch_port == 10


def test_every_part_lists_the_links_through_it(rack07_topology):
    components = rack07_topology.components
    assert len(components["rack07/ct03/gpu2"].links) == 18
    assert len(components["rack07/ct03"].links) == 72
    assert len(components["rack07/st3/sw0"].links) == 72
    assert len(components["rack07/st3"].links) == 144
    # Connectors and cartridges split the spine; every link crosses exactly one of each.
    for link in rack07_topology.links.values():
        kinds = [components[p].kind for p in link.path]
        assert kinds.count("connector") == 2 and kinds.count("cartridge") == 1 and kinds.count("cable") == 4
        for part in link.path:
            assert link.id in components[part].links
    cartridges = rack07_topology.of_kind("cartridge")
    assert sum(len(c.links) for c in cartridges) == 1296
    assert {len(c.links) for c in cartridges} == {360, 288}  # ct01–ct10 above, ct11–ct18 below


def test_a_compute_tray_connector_serves_two_gpus_half_their_ports(rack07_topology):
    links = rack07_topology.components["rack07/ct12/j2"].links
    gpus = {rack07_topology.links[link].gpu for link in links}
    ports = {rack07_topology.links[link].port for link in links}
    assert gpus == {"rack07/ct12/gpu2", "rack07/ct12/gpu3"}
    assert ports == set(range(9))


def test_holders_follow_the_graphs_contains_edges_nearest_first(rack07_topology):
    t = rack07_topology
    assert t.holders("rack07/ct12/gpu3") == ["rack07/ct12"]
    assert t.holders("rack07/ct12/j2") == ["rack07/ct12"]
    assert t.holders("rack07/st2/sw1") == ["rack07/st2"]
    cable = next(c.id for c in t.of_kind("cable"))
    assert t.holders(cable) == [cable.rsplit("/", 1)[0]]
    assert t.holders("rack07/ct12") == [] and t.holders("rack07/nowhere") == []


def test_json_has_the_contract_shape(rack07_topology):
    document = rack07_topology.to_json()
    assert document["rack"] == "rack07" and document["model"] == "gb200-nvl72"
    kinds = {c["kind"] for c in document["components"]}
    assert {"gpu", "compute_tray", "switch_chip", "switch_tray", "link", "connector", "cartridge", "cable"} <= kinds
    link = next(link for link in document["links"] if link["id"] == "rack07/ct03/gpu2/nvl05")
    assert link == {**link, "gpu": "rack07/ct03/gpu2", "port": 5, "switch": "rack07/st3/sw1", "switch_port": 10}
    chip = next(c for c in document["components"] if c["id"] == "rack07/st3/sw1")
    assert len(chip["links"]) == 72 and "rack07/ct03/gpu2/nvl05" in chip["links"]


def test_hgx_has_eight_gpus_four_nvswitches(hgx_topology):
    counts = hgx_topology.counts()
    assert counts == {"gpu": 8, "switch_chip": 4, "baseboard": 1, "link": 144}
    per_switch = sorted(len(c.links) for c in hgx_topology.of_kind("switch_chip"))
    assert per_switch == [32, 32, 40, 40]  # 5 + 4 + 4 + 5 links a GPU
    assert hgx_topology.components["hgx01/gpu7"].kind == "gpu"
    assert hgx_topology.components["hgx01/nvs3"].kind == "switch_chip"
    h200 = build_topology("hgx02", model_named("hgx-h200"))
    assert h200.counts() == counts


def _write_map(tmp_path, rows, columns=None):
    path = tmp_path / "map.csv"
    columns = columns or list(rows[0])
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _default_rows(model):
    with open(default_cabling_map(model), newline="") as f:
        return list(csv.DictReader(f))


def test_an_operator_map_with_other_connectors_is_loaded(tmp_path):
    model = model_named("gb200-nvl72")
    rows = _default_rows(model)
    for row in rows:  # a vendor map that puts all of a GPU's ports on one connector
        row["tray_connector"] = f"j{row['gpu']}"
    topology = build_topology("rackX", model, _write_map(tmp_path, rows))
    assert {topology.links[link].gpu for link in topology.components["rackX/ct04/j3"].links} == {"rackX/ct04/gpu3"}


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda rows: rows.pop(), "1295 links"),
        (lambda rows: rows.__setitem__(1, dict(rows[0])), "listed twice"),
        (lambda rows: rows[0].__setitem__("switch_chip", "3"), "port p goes to chip p"),
        (lambda rows: rows[0].__setitem__("port", "x"), "whole number"),
        (lambda rows: rows[0].__setitem__("tray", "ct99"), "not a compute tray"),
        (lambda rows: rows[0].__setitem__("cartridge", "cart 1"), "not a valid name"),
    ],
)
def test_a_broken_map_is_refused_with_the_reason(tmp_path, mutate, message):
    model = model_named("gb200-nvl72")
    rows = _default_rows(model)
    mutate(rows)
    with pytest.raises(InputError, match=message):
        build_topology("rackX", model, _write_map(tmp_path, rows, list(_default_rows(model)[0])))


def test_a_map_missing_a_column_is_refused(tmp_path):
    model = model_named("hgx-h100")
    rows = [{k: v for k, v in row.items() if k != "switch_port"} for row in _default_rows(model)]
    with pytest.raises(InputError, match="missing column"):
        build_topology("h", model, _write_map(tmp_path, rows))


def test_the_shipped_maps_are_what_the_generator_writes():
    import importlib.util
    from pathlib import Path

    tool = Path(__file__).resolve().parent.parent / "tools" / "make_cabling_maps.py"
    spec = importlib.util.spec_from_file_location("make_cabling_maps", tool)
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    for model_name, rows in (("gb200-nvl72", generator.nvl72_rows()), ("hgx-h100", generator.hgx_rows())):
        shipped = _default_rows(model_named(model_name))
        assert shipped == [{k: str(v) for k, v in row.items()} for row in rows]
