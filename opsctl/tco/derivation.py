"""One computed figure and how it was computed: the formula, the inputs it used and where the
formula (or the number) comes from. The TCO output carries one of these for every figure, so a
reader can retrace any number back to the scenario file and the published sources.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Figure:
    value: float | None
    unit: str
    formula: str
    source: str
    inputs: dict = field(default_factory=dict)  # name -> value used

    def to_dict(self):
        return {"value": self.value, "unit": self.unit, "formula": self.formula, "inputs": self.inputs,
                "source": self.source}


@dataclass(frozen=True)
class Given:
    """A number the scenario gave (or a preset default), with where it came from."""

    value: object
    source: str
