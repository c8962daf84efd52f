"""The shipped YAML's parse cache (probes/shipped_yaml.py): a second start reads the cache, an
edited file is parsed again, and no cache is written where Python would write no bytecode."""

import sys

import pytest

from probes import shipped_yaml


@pytest.fixture
def writes_caches(monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def cache_of(path):
    return path.parent / "__pycache__" / f"{path.name}.{sys.implementation.cache_tag}.pickle"


def test_a_second_load_reads_the_cache_and_an_edited_file_is_parsed_again(tmp_path, writes_caches, monkeypatch):
    rules = tmp_path / "rules.yaml"
    rules.write_text("limit: 100\n")
    assert shipped_yaml.load_shipped_yaml(rules) == {"limit": 100}
    assert cache_of(rules).is_file()
    parsed = []
    monkeypatch.setattr(shipped_yaml, "parse_trusted_yaml", lambda text: parsed.append(text) or {"parsed": True})
    assert shipped_yaml.load_shipped_yaml(rules) == {"limit": 100} and parsed == []  # from the cache
    rules.write_text("limit: 101\n")  # same size, maybe the same time stamp: the bytes decide
    assert shipped_yaml.load_shipped_yaml(rules) == {"parsed": True} and len(parsed) == 1


def test_each_load_gives_its_own_document(tmp_path, writes_caches):
    rules = tmp_path / "rules.yaml"
    rules.write_text("codes: [1, 2]\n")
    first = shipped_yaml.load_shipped_yaml(rules)
    first["codes"].append(3)  # a caller that changes what it was given changes nobody else's copy
    assert shipped_yaml.load_shipped_yaml(rules) == {"codes": [1, 2]}


def test_a_broken_cache_is_parsed_past_and_mended(tmp_path, writes_caches):
    rules = tmp_path / "rules.yaml"
    rules.write_text("limit: 100\n")
    shipped_yaml.load_shipped_yaml(rules)
    key = cache_of(rules).read_bytes()[:32]
    cache_of(rules).write_bytes(key + b"not a pickle")
    assert shipped_yaml.load_shipped_yaml(rules) == {"limit": 100}
    assert shipped_yaml.load_shipped_yaml(rules) == {"limit": 100} and cache_of(rules).read_bytes()[32:] != b"not a pickle"


def test_no_cache_is_written_under_pythondontwritebytecode_nor_where_the_folder_cannot_be_written(tmp_path, monkeypatch):
    rules = tmp_path / "rules.yaml"
    rules.write_text("limit: 100\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert shipped_yaml.load_shipped_yaml(rules) == {"limit": 100}
    assert not (tmp_path / "__pycache__").exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / "__pycache__").write_text("a file where the folder would go")
    assert shipped_yaml.load_shipped_yaml(rules) == {"limit": 100}  # read all the same


def test_a_start_that_finds_every_cache_never_loads_the_yaml_parser(tmp_path, writes_caches):
    """What the cache is for: a probe start pays nothing for PyYAML when every file is cached."""
    import subprocess

    rules = tmp_path / "rules.yaml"
    rules.write_text("limit: 100\n")
    shipped_yaml.load_shipped_yaml(rules)  # writes the cache
    script = ("import sys; from probes.shipped_yaml import load_shipped_yaml; "
              f"assert load_shipped_yaml({str(rules)!r}) == {{'limit': 100}}; print('yaml' in sys.modules)")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "False"


def test_a_file_that_is_not_yaml_says_where(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("limit: [100\n")
    with pytest.raises(shipped_yaml.ShippedYamlError) as raised:
        shipped_yaml.load_shipped_yaml(rules)
    assert raised.value.line == 2 and raised.value.column is not None and raised.value.problem


def test_what_we_ship_reads_the_same_by_the_strict_loader():
    """The files read by the C loader without the strict checks (the rulebook, the XID catalog,
    the SKU figures, the repair model, the runbooks' front matter) are held to them here: no key
    twice, nothing nested too deep, the same document."""
    from opsctl.mttr import DEFAULT_MTTR_CONFIG
    from opsctl.runbooks import RUNBOOK_DIR
    from opsctl.yaml_input import parse_yaml
    from tests.conftest import REPO

    files = [*sorted((REPO / "probes" / "references").glob("*.yaml")), DEFAULT_MTTR_CONFIG]
    texts = {path: path.read_text() for path in files}
    for path in sorted(RUNBOOK_DIR.glob("*.md")):
        if path.name != "README.md":
            text = path.read_text()
            texts[path] = text[4:text.find("\n---\n", 4)]
    for path, text in texts.items():
        assert shipped_yaml.parse_trusted_yaml(text) == parse_yaml(text, path), path
