"""The simulator is chosen in one place: above the NVML/device seam, only opsctl/backend.py (which
builds each command's view of the hardware) and opsctl/simulation/ (which compiles a scenario
into the simulator's spec) may import it; nothing in exporters/ or the rest of opsctl does."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALLOWED = {"opsctl/backend.py", "opsctl/simulation/__init__.py", "opsctl/simulation/compiler.py"}
IMPORTS_SIM = re.compile(r"^\s*(from probes\.sim\b|import probes\.sim\b|from probes import .*\bsim\b)", re.M)


def test_only_the_backend_and_the_scenario_compiler_import_the_simulator():
    importers = {str(path.relative_to(ROOT)) for folder in ("opsctl", "exporters") for path in (ROOT / folder).rglob("*.py")
                 if IMPORTS_SIM.search(path.read_text(encoding="utf-8"))}
    assert importers <= ALLOWED, sorted(importers - ALLOWED)
    assert "opsctl/backend.py" in importers  # the pattern finds what it is meant to
