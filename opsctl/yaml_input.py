"""Reading the YAML (or JSON) files users write, so that every mistake is one clear line.

PyYAML keeps the last of two equal keys without a word; an inventory with a tray listed twice
must be refused instead, so this loader rejects duplicate keys and names the line. Both YAML and
JSON documents are refused when nested deeper than any opsctl format goes (input_checks).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from opsctl.errors import InputError
from opsctl.input_checks import check_depth
from opsctl.regular_files import MAX_DOCUMENT_BYTES, read_regular_text


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value", key_node.start_mark
            ) from None
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _NotPlainJson(ValueError):
    """A JSON document the fast path leaves to YAML: a repeated key, NaN or Infinity."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _NotPlainJson("duplicate key")
    return result


def _refuse_constant(name: str) -> Any:
    raise _NotPlainJson(name)


def _plain_json(text: str) -> Any:
    """The document, when `text` is plain JSON; None when it is not. JSON is YAML too, but
    PyYAML's pure-Python parser takes ~10 s over a rack's 3 MB burn-in summary (json: ~0.1 s).
    Anything JSON reads differently from YAML (a repeated key, NaN) goes to YAML, which names
    the line or reads it as YAML does."""
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):  # not JSON, or _NotPlainJson: YAML decides
        return None


def parse_yaml(text: str, source: object) -> Any:
    """Parse YAML text; any syntax or duplicate-key error becomes an InputError naming `source`."""
    document = _plain_json(text)
    if document is not None:
        return check_depth(document, source)
    try:
        return check_depth(yaml.load(text, Loader=_StrictLoader), source)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        if text.lstrip()[:1] in ("{", "["):  # meant as JSON: say what JSON's parser says
            try:
                json.loads(text)
            except json.JSONDecodeError as json_error:
                raise InputError(f"{source}: line {json_error.lineno} not valid JSON: {json_error.msg}") from None
            except (RecursionError, ValueError):
                pass  # YAML's own message below
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        at = f" line {mark.line + 1}" if mark is not None else ""
        raise InputError(f"{source}:{at} not valid YAML: {problem}") from None
    except RecursionError:
        raise InputError(f"{source}: nested too deeply to read") from None


class DuplicateKey(ValueError):
    """A key given twice in one JSON object: JSON's parser would keep the last and say nothing."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json.loads' object_pairs_hook that refuses a repeated key, as YAML input refuses one."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise DuplicateKey(f"key {key!r} appears twice in one object (which one is meant?)")
    return result


def parse_json(text: str, source: object) -> Any:
    """Parse JSON text; a syntax error, a repeated key, a number too long to read (Python's
    4,300-digit limit) or nesting too deep becomes an InputError naming `source` and, where known, the line."""
    try:
        return check_depth(json.loads(text, object_pairs_hook=unique_keys), source)
    except DuplicateKey as exc:
        raise InputError(f"{source}: not valid JSON input: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: line {exc.lineno} not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{source}: nested too deeply to read") from None
    except ValueError as exc:  # int('9' * 5000): "Exceeds the limit (4300 digits)…"
        raise InputError(f"{source}: not valid JSON: {str(exc).splitlines()[0]}") from None


# What a file people write (an inventory of a thousand racks, a fault scenario) stays far below;
# a larger one is refused before PyYAML spends minutes on it: the inventory, a fault scenario, a
# cabling map, acceptance criteria, a TCO scenario, an MTTR config. (Documents opsctl writes
# itself, a rack's 3 MB burn-in summary, are read within regular_files.MAX_DOCUMENT_BYTES.)
MAX_WRITTEN_BYTES = 4 * 2**20


def load_yaml_file(path: str | Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> Any:
    """Read and parse a YAML or JSON file; a missing or unreadable file, one that is not a regular
    file (a FIFO, /dev/zero), or one over `max_bytes` (counted as read, not as stat says), is an
    InputError."""
    path = Path(path)
    return parse_yaml(read_regular_text(path, max_bytes), path)


def require_mapping(value: object, source: object) -> dict[Any, Any]:
    """The top of every input file is a mapping; say so plainly when it is not."""
    if not isinstance(value, dict):
        kind = "empty" if value is None else f"a {type(value).__name__}"
        raise InputError(f"{source}: expected a mapping of keys, found {kind}")
    return value
