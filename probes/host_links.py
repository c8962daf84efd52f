"""The GPU's link to its host CPU: on HGX the PCIe link's generation and width against the
most the GPU supports, and its replay counter over the run. A GB200 GPU reaches its Grace CPU
over NVLink-C2C, which NVML does not report as a PCIe link; there the PCIe calls answer
NOT_SUPPORTED and only what is read is judged (the SKU's reference file says `host_link: pcie`
where a PCIe link must be read).
"""

from probes.judge import check, compare

CALLS = {"generation": "nvmlDeviceGetCurrPcieLinkGeneration", "max_generation": "nvmlDeviceGetGpuMaxPcieLinkGeneration",
         "width": "nvmlDeviceGetCurrPcieLinkWidth", "max_width": "nvmlDeviceGetMaxPcieLinkWidth",
         "replays": "nvmlDeviceGetPcieReplayCounter"}


def read(nvml, handle, now):
    """One reading of the host link: {generation, max_generation, width, max_width, replays,
    time, unread}."""
    link = {"time": now(), "unread": {}}
    for key, call in CALLS.items():
        try:
            link[key] = int(getattr(nvml, call)(handle))
        except nvml.NVMLError as error:
            link[key] = None
            link["unread"][key] = f"{call}: {error}"
    return link


def window(before, after):
    """The `host_link` section of a GPU entry: the link as it ends the run, and the replays of the run."""
    link = {key: after.get(key) for key in ("generation", "max_generation", "width", "max_width")}
    link["unread"] = {**before.get("unread", {}), **after.get("unread", {})}
    seconds = max(0.0, after["time"] - before["time"])
    if before.get("replays") is not None and after.get("replays") is not None:
        link["replays"] = after["replays"] - before["replays"]
        link["window_s"] = round(seconds, 3)
    return link


def checks(component, link, rules, required=False):
    rule = rules["host_link"]
    found = []
    for what, best in (("generation", "max_generation"), ("width", "max_width")):
        source = rule[f"pcie_{what}"]["source"]
        if link.get(what) is None or link.get(best) is None:
            if required:
                found.append(check(f"host_link.pcie_{what}", component, "incomplete", None, None, what, "<",
                                   rule["pcie_required_source"], f"PCIe link {what} not read ({link['unread'].get(what) or link['unread'].get(best)})"))
            continue
        unit = "generation" if what == "generation" else "lanes"
        found.append(compare(f"host_link.pcie_{what}", component, link[what], "<", link[best], unit, source,
                             f"PCIe link {'Gen' if what == 'generation' else 'x'}{link[what]}, the GPU's best "
                             f"{'Gen' if what == 'generation' else 'x'}{link[best]}"))
    if link.get("replays") is not None and link.get("window_s"):
        per_minute = link["replays"] / link["window_s"] * 60.0
        limit = rule["replay_per_minute"]
        found.append(compare("host_link.pcie_replays", component, round(per_minute, 3), ">", limit["max"], "per minute",
                             limit["source"], f"{link['replays']} PCIe replays in {link['window_s']:.0f} s"))
    return found
