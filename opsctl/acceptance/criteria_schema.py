"""The acceptance criteria file as msgspec schemas (docs/schemas/criteria.schema.json is written
from them). opsctl/acceptance/criteria.py reads a file through CriteriaFile and keeps, as code,
only the rules between keys: a run timeout longer than the duration, one margin per rule.
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from opsctl.input_checks import MAX_SECONDS
from opsctl.input_schema import Seconds

# A margin wider than these compares nothing: a typo, refused rather than a rule switched off.
MAX_PCT = 1000.0
MAX_SIGMAS = 100.0

# The probes an acceptance may run (criteria.py PROBES) and the metrics a rack-relative rule may
# compare (opsctl/burnin/rack_relative.py METRICS); tests check both lists are the code's.
Probe = Literal["gemm", "membw", "nvlink", "pulse", "hbm", "configuration", "counters", "collective"]
Metric = Literal["gemm_bf16_tflops", "gemm_fp8_tflops", "membw_gbps", "nvlink_gbps", "sm_clock_mhz", "temperature_c", "power_w"]
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=256, pattern=r"\S")]
Finite = Annotated[float, msgspec.Meta(ge=-sys.float_info.max, le=sys.float_info.max)]


class Rule(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A GPU judged against its rack's median: worse than it by more than the margin (pct or
    delta, one of them) and by more than robust_sigmas of the rack's spread."""

    metric: Annotated[Metric, msgspec.Meta(description="the figure compared")]
    worse: Annotated[Literal["lower", "higher"], msgspec.Meta(description="which way is worse")]
    pct: Annotated[float, msgspec.Meta(gt=0, le=MAX_PCT, description="the margin, percent of the median")] | UnsetType = UNSET
    delta: Annotated[float, msgspec.Meta(gt=0, le=sys.float_info.max, description="or the margin, in the metric's unit")] | UnsetType = UNSET
    robust_sigmas: Annotated[float, msgspec.Meta(gt=0, le=MAX_SIGMAS, description="and this many robust standard deviations")] = 6.0
    verdict: Annotated[Literal["fail", "warn"], msgspec.Meta(description="what a GPU outside gets")] = "fail"


class RackRelative(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    min_gpus: Annotated[int, msgspec.Meta(ge=3, le=2**31 - 1, description="the fewest GPUs a median is taken over")] = 4
    rules: list[Rule] | None = None
    source: Annotated[str, msgspec.Meta(description="where the rules come from, for the report")] | None = None


class CriteriaFile(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Acceptance criteria: which probes run, for how long, how each GPU must compare with its rack."""

    criteria: Annotated[Text, msgspec.Meta(description="the criteria's name, recorded in every report")]
    version: Annotated[Text | int | Finite, msgspec.Meta(description='its version, as text (version: "1.1")')]
    description: str | None = None
    probes: Annotated[list[Probe], msgspec.Meta(min_length=1, description="the probes run (default: all)")] | UnsetType = UNSET
    optional_probes: Annotated[list[Probe], msgspec.Meta(description=(
        "probes the run goes on without when a tray cannot run them (the preflight says why); the others "
        "end the run incomplete before any load"))] = []
    duration_s: Annotated[Seconds, msgspec.Meta(description="how long each tray is loaded")]
    run_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=2 * MAX_SECONDS, description=(
        "when a run is given up, above duration_s (default: twice it, and at least 300 s more)"))] | UnsetType = UNSET
    warnings_fail: Annotated[bool, msgspec.Meta(description="a warning fails the rack too")] = False
    rack_relative: RackRelative | None = None
