"""Reading the YAML files the probe ships (the rulebook, the XID catalog, the SKU figures).

They are ours and trusted, so they take libyaml's C loader where PyYAML was built with it: the
57 kB XID catalog parses in ~14 ms instead of ~140 ms. Even that is paid on every one of a rack's
probe starts, so the parsed document is kept as Python keeps a module's bytecode: in a
`__pycache__` folder beside the file, keyed by the file's own bytes (an edited file is never
read stale, whatever its time stamp says), written only where Python would write bytecode
(not under PYTHONDONTWRITEBYTECODE, not in a folder it cannot write). The cache is as trusted
as the .pyc files beside it: whoever can write one can write the other. PyYAML itself is
imported only when a file has to be parsed: a probe start that finds every cache pays nothing for it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from pathlib import Path
from typing import Any


class ShippedYamlError(ValueError):
    """The file is not valid YAML: where (1-based line and column, when the parser knows) and why."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(problem)
        self.problem, self.line, self.column = problem, line, column


def load_shipped_yaml(path: Path | str) -> Any:
    path = Path(path)
    raw = path.read_bytes()
    key = hashlib.sha256(raw).digest()
    cache = path.parent / "__pycache__" / f"{path.name}.{sys.implementation.cache_tag}.pickle"
    try:
        with open(cache, "rb") as file:
            if file.read(len(key)) == key:
                return pickle.load(file)  # noqa: S301 - our own cache, trusted as bytecode is
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ValueError):
        pass  # no cache yet, or a broken one: parse
    document = parse_trusted_yaml(raw.decode("utf-8"))
    if not sys.dont_write_bytecode:
        _write_cache(cache, key, document)
    return document


def parse_trusted_yaml(text: str) -> Any:
    """YAML we ship (a file, or a runbook's front matter), by the C loader where PyYAML has it:
    trusted, so read without the strict checks user files get (the tests hold the shipped files to
    those). PyYAML is imported here, on a parse, not when the module loads."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise ShippedYamlError(str(getattr(error, "problem", None) or error),
                               mark.line + 1 if mark is not None else None,
                               mark.column + 1 if mark is not None else None) from None


def _write_cache(cache: Path, key: bytes, document: Any) -> None:
    """Write atomically (probes starting at once each see a whole file or none); a folder that
    cannot be written is no error: the next start parses again."""
    temporary = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    try:
        cache.parent.mkdir(exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(key)
            pickle.dump(document, file, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, cache)
    except OSError:
        try:
            temporary.unlink()
        except OSError:
            pass
