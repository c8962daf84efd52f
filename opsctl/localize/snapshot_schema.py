"""The link-health snapshot's schema (docs/probe-output.md; docs/triage.md: triage and fault
localization): one msgspec Struct per mapping of the format. `read_snapshot` is the only reader
of the format — `opsctl localize`, `opsctl triage` and the burn-in's localizer all go through it —
and docs/schemas/snapshot.schema.json is written from these Structs (tools/write_schemas.py).

Imported only when a snapshot is read: msgspec stays out of `opsctl --help`. What a schema
cannot say (ids that belong to the rack's model, a link listed twice, a counter above 2^64 − 1
that is an exact integer) is checked where the ids are resolved (opsctl/localize/snapshot.py).

Every Struct leaves its defaults out when written back, and the fields opsctl's writers give even
at their default (a link's side, a GPU's reachable, a tray's error) default to UNSET, which no
value in a file equals: a snapshot written back names exactly the keys its file gave, which is
how the fast read rules out a key given twice (opsctl/unique_json.py). What they mean when left
out (gpu, true, none) is read in opsctl/localize/snapshot.py.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from opsctl.input_schema import Seconds, convert
from opsctl.rack_models import MODELS, NAME_PATTERN

MAX_XID = 2**32 - 1  # far above any code NVIDIA's XID catalog lists; bounds what a file can ask
MAX_UNIX_TIME = 253402300799  # 9999-12-31T23:59:59Z, the last moment an ISO 8601 time can say

RackName = Annotated[str, msgspec.Meta(pattern=f"^{NAME_PATTERN.pattern}$", max_length=256,
                                       description="the rack's name ([A-Za-z0-9_.-]+)")]
# The rack models opsctl knows (opsctl/rack_models.py); an editor offers them.
ModelName = Literal[tuple(sorted(MODELS))]  # type: ignore[valid-type]  # built from the models' registry
ComponentId = Annotated[str, msgspec.Meta(min_length=1, max_length=256,
                                          description="a component id, with or without the rack: rack07/ct03/gpu2 or ct03/gpu2")]
Port = Annotated[int, msgspec.Meta(ge=0, le=2**31, description="a port number on the GPU or switch chip")]
# A counter's delta over the window. An integer's upper bound, 2^64 − 1 (NVML's counters are
# 64-bit), is checked by the reader: msgspec bounds integers only within int64.
Delta = Annotated[int, msgspec.Meta(ge=0, description="a counter's delta over the window, 0 to 2^64 - 1")] | \
    Annotated[float, msgspec.Meta(ge=0, lt=2.0**64, description="a counter's delta over the window, 0 to 2^64 - 1")]
UnixTime = Annotated[float, msgspec.Meta(ge=-MAX_UNIX_TIME, le=MAX_UNIX_TIME, description="unix seconds")]


class FailedCheck(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A rulebook check the GPU, link or tray failed on its own measurement."""

    check: Annotated[str, msgspec.Meta(description="the check's name in probes/references/rules.yaml, e.g. memory.remapped_rows")]
    value: Any = None  # the reading the check judged (a number, or whatever the check reads)
    reason: str | None = None


class Link(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One end of one NVLink as read over the window. A GPU-side entry names the link by `gpu`
    and `port`; a switch-side one by `link`, else `switch` and `switch_port`, else `peer_gpu` and
    `peer_port`, else `gpu` and `port`. A counter left out was not read (not zero)."""

    side: Annotated[Literal["gpu", "switch"], msgspec.Meta(
        description="the end the link was read at", extra_json_schema={"default": "gpu"})] | UnsetType = UNSET
    gpu: ComponentId | None = None
    port: Port | None = None
    link: ComponentId | None = None
    switch: ComponentId | None = None
    switch_port: Port | None = None
    peer_gpu: ComponentId | None = None
    peer_port: Port | None = None
    state: Literal["up", "down"] | None = None
    crc_errors: Delta | None = None
    replay_errors: Delta | None = None
    recovery_errors: Delta | None = None
    symbol_errors: Delta | None = None
    link_down_events: Delta | None = None
    rcv_errors: Delta | None = None
    malformed_packet_errors: Delta | None = None
    buffer_overrun_errors: Delta | None = None
    local_link_integrity_errors: Delta | None = None
    effective_errors: Delta | None = None
    recovery_successful: Delta | None = None
    rcv_remote_errors: Delta | None = None
    rcv_general_errors: Delta | None = None
    recovery_events: Delta | None = None
    effective_ber: Annotated[float, msgspec.Meta(ge=0, le=1, description="the link's effective bit error rate")] | None = None
    # NVML's raw value may carry bits above the twelve it is read from (DCGM's tests pass one, 73710);
    # the judge masks them off, as DCGM does.
    symbol_ber_raw: Annotated[int, msgspec.Meta(ge=0, description=(
        "the link's symbol BER at the window's end as NVML packs it: mantissa in bits 11:8, exponent in bits 7:0 "
        "(BER = mantissa × 10^-exponent)"))] | None = None
    failed_checks: list[FailedCheck] | None = None


class XidEvent(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """An XID and when it came."""

    xid: Annotated[int, msgspec.Meta(ge=0, le=MAX_XID, description="the XID number (NVIDIA's XID catalog)")]
    time: UnixTime | Annotated[str, msgspec.Meta(description="an ISO 8601 time")] | None = None


class Gpu(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One GPU: whether it answered, the XIDs it logged in the window, its own failed checks."""

    id: ComponentId
    reachable: Annotated[bool, msgspec.Meta(
        description="whether the GPU answered", extra_json_schema={"default": True})] | UnsetType = UNSET
    xids: list[Annotated[int, msgspec.Meta(ge=0, le=MAX_XID)] | XidEvent] | None = None
    failed_checks: list[FailedCheck] | None = None


class Tray(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Whether a tray answered: complete, incomplete or failed (it ran its probe), unread (not)."""

    tray: Annotated[str, msgspec.Meta(description="the tray's name in the rack model: ct05, st3")]
    status: Annotated[str, msgspec.Meta(description="complete, incomplete, failed (the tray answered) or unread")]
    error: Annotated[str | None, msgspec.Meta(extra_json_schema={"default": None})] | UnsetType = UNSET
    failed_checks: list[FailedCheck] | None = None


class Snapshot(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One rack's link-health snapshot: counters are deltas over the window; a link or GPU that
    is absent was not observed."""

    rack: RackName
    model: ModelName  # type: ignore[valid-type]  # a Literal built from the models' registry
    window_seconds: Seconds
    links: list[Link]
    gpus: list[Gpu] | None = None
    trays: list[Tray] | None = None
    format: Annotated[str, msgspec.Meta(description="opsctl-snapshot/1")] | None = None
    taken: Annotated[str, msgspec.Meta(description="when the snapshot was taken (ISO 8601)")] | None = None


# A snapshot file: one snapshot, or a list of them (a fleet).
SnapshotFile = Snapshot | list[Snapshot]


def read_snapshot(document: object, source: object) -> Snapshot:
    """`document` (parsed JSON or YAML) as a Snapshot, or one InputError naming `source` and the place."""
    return convert(document, Snapshot, source)


__all__ = ["FailedCheck", "Gpu", "Link", "Snapshot", "Tray", "SnapshotFile", "XidEvent", "read_snapshot"]
