"""The check registries are the one place families are listed: the tray judge's checks of a GPU are
exactly its families' (probes/gpu_check_families.py), in their order, each family judging a GPU
entry that has its section; a family added to a registry appears in the verdict with nothing else
changed; the rack judge calls every rack family (opsctl/burnin/rack_check_families.py); and no
family imports the judge that calls it, so the import graph under the judges has no cycle."""

import ast
from pathlib import Path

import pytest

from opsctl.acceptance.criteria import load_criteria
from opsctl.burnin import rack_check_families
from opsctl.burnin.checks import Check as RackCheck
from opsctl.burnin.rack_evidence import RackFindings
from opsctl.burnin.rack_judge import TrayOutcome, judge_rack
from opsctl.inventory import Rack
from opsctl.rack_models import model_named
from probes import gpu_check_families
from probes.check_record import GpuContext, check
from probes.sku_references import load_references
from probes.tray_judge import judge_gpu, judge_switch_tray

ROOT = Path(__file__).resolve().parents[1]
GB200 = load_references(sku="gb200")


def every_section():
    """A GB200 GPU entry with a section for every family: each family has something to judge."""
    return {
        "index": 2, "name": "NVIDIA GB200",
        "failures": [{"probe": "membw", "error": "CUDA error: an illegal memory access"}],
        "gemm": {"bf16": {"n": 1024, "checks": 8, "mismatches": 0, "corrupted_results": 0, "max_rel_error": 1e-4,
                          "tolerance": 1e-2, "tflops_windows": [2000.0] * 8, "tflops_median": 2000.0,
                          "tflops_min": 2000.0, "drop_pct": 0.0, "seconds": 8.0}},
        "under_load": {"clocks_event_reasons": [], "temperature_c_max": 60, "sm_clock_mhz_median": 1900,
                       "thermal_margin_c_min": 25, "memory_temperature_c_max": 70, "samples": 8},
        "membw": {"gbps": 7000.0},
        "nvlink": {"peer_errors": {"3": "no NVLink path"}},
        "counters": {"window_s": 30.0, "links": [], "xids": []},
        "recorded_xids": {"events": []},
        "configuration": {"ecc_mode": "enabled", "mig_mode": "disabled", "unread": {}},
        "host_link": {"generation": 5, "max_generation": 5, "width": 16, "max_width": 16, "unread": {}},
        "host_copy": {"h2d_gbps": 55.0, "d2h_gbps": 55.0},
        "hbm": {"patterns": {}},
        "sustained_power": {"load_s": 60.0, "power_w_mean": None, "default_power_limit_w": None, "violation_s": {},
                            "unread": {"nvmlDeviceGetTotalEnergyConsumption": "not supported"}},
        "pulse": {"steps": [], "cycles_run": 0, "cycles_planned": 4, "finished": False},
        "before": {"inforom_valid": True},
    }


def family_name(family):
    return f"{family.__module__}.{family.__qualname__}"


def test_the_tray_judge_gives_exactly_its_registry_families_checks_in_their_order():
    gpu, context = every_section(), GpuContext(component="gpu2", peer_medians={})
    by_family = [(family_name(family), family(gpu, GB200, context)) for family in gpu_check_families.GPU_CHECK_FAMILIES]
    assert [name for name, found in by_family if not found] == []  # each judges the section it has
    assert judge_gpu(gpu, GB200, {}) == [c for _, found in by_family for c in found]


def test_a_family_added_to_the_registry_is_in_the_verdict(monkeypatch):
    def fake_family(gpu, refs, context):
        return [check("fake.family", context.component, "fail", 1, 0, "things", ">", "a test", "added in one line")]

    before = judge_gpu(every_section(), GB200, {})
    monkeypatch.setattr(gpu_check_families, "GPU_CHECK_FAMILIES", (*gpu_check_families.GPU_CHECK_FAMILIES, fake_family))
    after = judge_gpu(every_section(), GB200, {})
    assert after[:-1] == before and after[-1]["check"] == "fake.family" and after[-1]["component"] == "gpu2"

    monkeypatch.setattr(gpu_check_families, "SWITCH_CHECK_FAMILIES",
                        (lambda links, window_s, refs: [check("fake.switch", "sw0", "pass", 0, 0, "", ">", "a test", "")],))
    assert [c["check"] for c in judge_switch_tray([], 10.0, GB200)] == ["fake.switch"]


def test_every_module_with_a_family_entry_point_is_listed():
    """A module that defines the GPU entry point (or the rack's) is in its registry: none is
    judged on the side, and none listed is missing."""
    def defining(folder, entry):
        found = set()
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text())
            if any(isinstance(node, ast.FunctionDef) and node.name == entry for node in tree.body):
                found.add(".".join(path.relative_to(ROOT).with_suffix("").parts))
        return found

    assert defining("probes", "gpu_checks") == {f.__module__ for f in gpu_check_families.GPU_CHECK_FAMILIES}
    assert defining("opsctl/burnin", "rack_checks") == {f.__module__ for f in rack_check_families.RACK_CHECK_FAMILIES}
    assert len(set(map(family_name, gpu_check_families.GPU_CHECK_FAMILIES))) == len(gpu_check_families.GPU_CHECK_FAMILIES)


def test_the_rack_judge_calls_every_rack_family_in_order_and_keeps_what_it_adds(monkeypatch):
    model = model_named("gb200-nvl72")
    rack = Rack("rack07", model, "local", "sim", None, None, None, (), ROOT / "inventory.yaml")
    from opsctl.topology import build_topology

    called = []

    def spy(family):
        def call(evidence):
            called.append(family_name(family))
            return family(evidence)
        return call

    def fake_family(evidence):
        return RackFindings([RackCheck("fake.rack", evidence.rack.name, "fail", 1, 0, "things", ">", "a test", "added")],
                            ["fake family: a note"])

    registry = rack_check_families.RACK_CHECK_FAMILIES
    monkeypatch.setattr(rack_check_families, "RACK_CHECK_FAMILIES", (*map(spy, registry), fake_family))
    outcomes = {tray: TrayOutcome(tray, "not run", reason="a test") for tray in model.tray_names()}
    judgment = judge_rack(rack, build_topology("rack07", model), {}, outcomes, load_criteria(), {"ran": False})
    assert called == [family_name(f) for f in registry]
    assert judgment.checks[-1].check == "fake.rack" and judgment.verdict == "FAIL"
    assert "fake family: a note" in judgment.notes and judgment.domain is not None  # the domain family's section


def imports_of(path, package, typing=True):
    """The modules of `package` a file imports anywhere in it, function bodies included (and the
    `if TYPE_CHECKING:` ones unless `typing` is false): what the import graph has to be free of."""
    found = set()

    def visit(node):
        if not typing and isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == package)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == package:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)  # `from probes import gemm`
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found - {package}  # the package's __init__, which imports nothing


def module_files(package):
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
            for p in sorted((ROOT / package).rglob("*.py"))}


def import_graph(package, typing=True):
    modules = module_files(package)
    return {name: imports_of(path, package, typing) & set(modules) - {name} for name, path in modules.items()}


def reachable(graph, start):
    seen, todo = set(), list(graph[start])
    while todo:
        step = todo.pop()
        if step not in seen:
            seen.add(step)
            todo += graph[step]
    return seen


@pytest.mark.parametrize("package, judge, registry, callers", [
    ("probes", "probes.tray_judge", "probes.gpu_check_families", {"probes.run"}),
    ("opsctl", "opsctl.burnin.rack_judge", "opsctl.burnin.rack_check_families", {"opsctl.burnin.session", "opsctl.fleet.judge"}),
])
def test_no_family_imports_the_judge_or_its_registry(package, judge, registry, callers):
    """Only the judge imports its registry, only what runs a judgment imports the judge, and
    nothing the registry's families import leads back to either: no cycle closed by an import
    inside a function."""
    graph = import_graph(package)
    assert {name for name, found in graph.items() if judge in found} == callers
    assert {name for name, found in graph.items() if registry in found} == {judge}
    assert {judge, registry} & reachable(graph, registry) == set()
    running = import_graph(package, typing=False)  # what Python imports: a cycle here needs an import inside a function
    side = judge.rsplit(".", 1)[0]  # probes, opsctl.burnin: the judge's own modules and its families
    under_the_judge = {m for m in {judge} | reachable(running, judge) if m.startswith(side)}
    assert sorted(m for m in under_the_judge if m in reachable(running, m)) == []
    if package == "probes":  # the tray's side: no cycle even among the type-only imports
        assert sorted(m for m in {judge} | reachable(graph, judge) if m in reachable(graph, m)) == []


def test_the_check_record_is_at_the_bottom():
    assert imports_of(ROOT / "probes" / "check_record.py", "probes") == set()
    under = reachable(import_graph("probes"), "probes.gpu_check_families")
    assert {"probes.check_record", "probes.gemm", "probes.running_totals", "probes.hbm_checks"} <= under
