"""A GB200 GPU's link to its Grace CPU: NVLink-C2C, which NVML reports through its C2C fields
(nvml.h NVML_FI_DEV_C2C_LINK_COUNT, _GET_STATUS "0=INACTIVE 1=ACTIVE", _GET_MAX_BW, and the
error counters _ERROR_INTR, _ERROR_REPLAY, _ERROR_REPLAY_B2B). Every link the GPU has must be
active at both ends of the run. The error counters' deltas are shown, not judged: no public
source gives a limit for them (corrected C2C errors reach the XID rules as XID 121).
"""

from __future__ import annotations

from typing import Any

from probes.counters import counter_deltas
from probes.check_record import Check, GpuContext, check
from probes.sku_references import References


def window(before: Any, after: Any) -> dict[str, Any] | None:
    """The `c2c` section of a GPU entry (docs/probe-output.md) from its readings before and after
    the run; None where the GPU reports no C2C link."""
    if after.c2c is None and before.c2c is None:
        return None
    end, start = after.c2c or before.c2c, before.c2c or {}
    active_before = {link["link"]: link["active"] for link in start.get("links", [])}
    links = [{**link, "active_before": active_before.get(link["link"])} for link in end["links"]]
    errors = counter_deltas(start.get("errors") or {}, {k: v for k, v in (after.c2c or {}).get("errors", {}).items()})
    return {"link_count": end["link_count"], "links": links, "error_deltas": errors,
            "read": "both" if before.c2c is not None and after.c2c is not None else "once"}


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """c2c.links, read with the counters before and after the run (none for a GPU lost or hung)."""
    if "counters" not in gpu or gpu.get("lost") or gpu.get("hung"):
        return []
    return checks(context.component, gpu.get("c2c"), refs, required=(refs.sku or {}).get("host_link") == "c2c")


def checks(component: str, c2c: dict[str, Any] | None, refs: References,
           required: bool = False) -> list[Check]:
    """c2c.links: every NVLink-C2C link active through the run; `required` where the GPU's model
    reaches its CPU over C2C (its reference file's `host_link: c2c`)."""
    rule = refs.rules["c2c"]
    if c2c is None:
        return [check("c2c.links", component, "incomplete", None, "active", "link status", "!=", rule["source"],
                      "no NVLink-C2C link could be read, where this GPU model reaches its CPU over one")] if required else []
    links = c2c.get("links") or []
    errors = ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in sorted((c2c.get("error_deltas") or {}).items()))
    tail = f"; C2C error counters over the run: {errors}" if errors else ""
    if not links:
        return [check("c2c.links", component, "fail", 0, "active", "link status", "!=", rule["source"],
                      f"NVML reports {c2c.get('link_count', 0)} NVLink-C2C links: the GPU cannot reach its CPU{tail}")]
    down = [link["link"] for link in links if False in (link.get("active"), link.get("active_before"))]
    unread = [link["link"] for link in links if link.get("active") is None]
    if down:
        verdict, reason = "fail", f"NVLink-C2C link {', '.join(map(str, down))} of {len(links)} inactive during the run"
    elif unread:
        verdict, reason = "incomplete", f"the status of C2C link {', '.join(map(str, unread))} could not be read"
    else:
        speeds = sorted({link.get("max_bw_mbps") for link in links if link.get("max_bw_mbps") is not None})
        verdict = "pass"
        reason = f"all {len(links)} NVLink-C2C links active" + (f" at {', '.join(f'{s:,} MB/s' for s in speeds)}" if speeds else "")
    return [check("c2c.links", component, verdict, down or unread or "active", "active", "link status", "!=",
                  rule["source"], reason + tail)]
