"""The JSON Schemas in docs/schemas/ are the ones the code checks files with: regenerated from the
msgspec schemas and compared, so an editor never validates against a stale format."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("write_schemas", ROOT / "tools" / "write_schemas.py")
write_schemas = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(write_schemas)


@pytest.mark.parametrize("name", sorted(write_schemas.FORMATS))
def test_written_schema_matches_the_code(name):
    written = (write_schemas.SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8")
    assert written == write_schemas.schema_text(name), f"run: .venv/bin/python tools/write_schemas.py ({name} changed)"


def test_every_schema_file_is_a_known_format():
    files = {path.name.removesuffix(".schema.json") for path in write_schemas.SCHEMA_DIR.glob("*.schema.json")}
    assert files == set(write_schemas.FORMATS)
