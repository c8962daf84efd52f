"""Nothing an operator reads cites the team's private notes: code, docs, runbooks, rules and the
Ansible roles name the public source (a datasheet, a DCGM file and constant, NVIDIA's XID
catalog) or opsctl's own docs, never a note an operator does not have."""

import re
import subprocess
from pathlib import Path

from tests.conftest import PRIVATE_SOURCES

ROOT = Path(__file__).resolve().parent.parent
# The notes by name, and the contract note as it was cited in prose ("CONTRACT's ids").
CITATION = re.compile("|".join([*map(re.escape, PRIVATE_SOURCES), r"\bCONTRACT\b"]))
TEXT = (".py", ".md", ".yaml", ".yml", ".json", ".j2", ".csv", ".toml", ".sh", ".cfg")


def test_no_shipped_file_cites_a_private_note():
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    files = [name for name in tracked if name.endswith(TEXT) and not name.startswith("tests/")]
    assert len(files) > 100  # the walk finds the tree
    citing = [name for name in files if (ROOT / name).is_file()
              and CITATION.search((ROOT / name).read_text(encoding="utf-8", errors="replace"))]
    assert citing == []
