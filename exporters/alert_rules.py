"""The alert rule files shipped in exporters/rules/, and copies of them with runbook links for
a site.

In the shipped files every `runbook_url` is the relative path `runbooks/<file>.md`. An operator
writes copies with a base in front (`https://git.example.com/ops/opsctl/blob/main`), so the
link opens in their browser and still ends in the runbook's file name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

RULES_DIR = Path(__file__).resolve().parent / "rules"
_RUNBOOK_URL = re.compile(r"^(\s*runbook_url:\s*)(runbooks/[A-Za-z0-9_.-]+\.md)\s*$", re.MULTILINE)


def rule_files() -> list[Path]:
    return sorted(RULES_DIR.glob("*.yml"))


def with_runbook_base(text: str, base: str | None) -> str:
    """The rule file `text` with `base` joined in front of every runbook_url."""
    if not base:
        return text
    prefix = base.rstrip("/") + "/"
    # A JSON string is a valid YAML double-quoted scalar: any base survives, `#` and `: ` included.
    return _RUNBOOK_URL.sub(lambda m: m.group(1) + json.dumps(prefix + m.group(2)), text)


def rule_file_texts(base: str | None = None) -> list[tuple[str, str]]:
    """[(file name, text)] of every rule file with runbook links under `base` (opsctl writes them,
    each atomically: an existing file is replaced whole or not at all)."""
    return [(source.name, with_runbook_base(source.read_text(encoding="utf-8"), base)) for source in rule_files()]


def runbook_file(url: str) -> str | None:
    """The runbooks/ file a runbook_url points at, whatever base is in front."""
    match = re.search(r"(?:^|/)runbooks/([A-Za-z0-9_.-]+\.md)$", url)
    return match.group(1) if match else None
