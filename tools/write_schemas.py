"""Write the JSON Schema of every file format people write into docs/schemas/, from the msgspec
schemas the code checks them with (opsctl/input_schema.py), so an editor validates the YAML as it
is typed. tests/test_input_schemas.py fails when a written schema no longer matches the code.

    .venv/bin/python tools/write_schemas.py          # rewrite docs/schemas/*.schema.json
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from opsctl.input_schema import json_schema

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "docs" / "schemas"

# format name (the file docs/schemas/<name>.schema.json) -> "module:Struct" of its top level
FORMATS: dict[str, str] = {
    "scenario": "opsctl.simulation.scenario_schema:ScenarioFile",
    "criteria": "opsctl.acceptance.criteria_schema:CriteriaFile",
    "inventory": "opsctl.inventory_schema:InventoryFile",
    "tco-scenario": "opsctl.tco.scenario_schema:TcoScenario",
    "snapshot": "opsctl.localize.snapshot_schema:Snapshot",
}


def schema_text(name: str) -> str:
    """The JSON Schema of format `name`, as the file holds it."""
    module_name, struct_name = FORMATS[name].split(":")
    model = getattr(importlib.import_module(module_name), struct_name)
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": f"opsctl {name}", **json_schema(model)}
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> int:
    SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
    for name in FORMATS:
        path = SCHEMA_DIR / f"{name}.schema.json"
        path.write_text(schema_text(name), encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
