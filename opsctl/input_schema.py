"""Declarative schemas for the files people write (scenario, criteria, inventory variables, TCO
scenario, snapshot): each format is a set of msgspec Structs, checked in one pass, and its JSON
Schema (docs/schemas/, written by tools/write_schemas.py) lets an editor check the YAML while it is
being written.

msgspec, not pydantic: its errors are already one line naming the place ("Expected `int` <= 7 -
at `$.faults[0].gpu`"), and it loads in about half the time (docs/benchmarks.md, start-up).

A mistake becomes one InputError (exit 2): the file, the place in it, what was expected.
"""

from __future__ import annotations

import re
from typing import Annotated, TypeVar

import msgspec

from opsctl.errors import InputError
from opsctl.input_checks import MAX_SECONDS

T = TypeVar("T")

# The shared field types. NaN fails every bound (its comparisons are false), infinity the upper
# one, so a bounded float is also a finite one.
Seconds = Annotated[float, msgspec.Meta(gt=0, le=MAX_SECONDS, description="seconds, above 0 and at most a week")]
Fraction = Annotated[float, msgspec.Meta(ge=0, le=1, description="a fraction, 0 to 1")]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=256, description="a name")]

_PLACE = re.compile(r" - at `\$(?P<place>[^`]*)`$")


def message(error: msgspec.ValidationError) -> str:
    """msgspec's message with the place first: "faults[0].gpu: expected `int` <= 7"."""
    text = str(error)
    found = _PLACE.search(text)
    if not found:
        return text[:1].lower() + text[1:]
    what = text[: found.start()]
    place = found.group("place").lstrip(".") or "the top level"
    return f"{place}: {what[:1].lower()}{what[1:]}"


def convert(document: object, model: type[T], source: object) -> T:
    """`document` (parsed YAML or JSON) as a `model`; any mismatch is one InputError naming `source`."""
    try:
        return msgspec.convert(document, type=model, strict=True)
    except msgspec.ValidationError as error:
        raise InputError(f"{source}: {message(error)}") from None


def json_schema(model: type) -> dict[str, object]:
    """The JSON Schema of `model`, as docs/schemas/ holds it for editors."""
    return msgspec.json.schema(model)
