"""One computed figure and how it was computed: the formula, the inputs it used and where the
formula (or the number) comes from. The TCO output carries one of these for every figure, so a
reader can retrace any number back to the scenario file and the published sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    formula: str
    source: str
    inputs: dict[str, Any] = field(default_factory=dict)  # name -> value used

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit, "formula": self.formula, "inputs": self.inputs,
                "source": self.source}


@dataclass(frozen=True)
class Given(Generic[T]):
    """A number the scenario gave (or a preset default), with where it came from."""

    value: T
    source: str
