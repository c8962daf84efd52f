"""A GPU's configuration as NVML reports it — driver, VBIOS, InfoROM, ECC, persistence and MIG
mode, power limit, application clocks — and what must hold on every GPU whatever its rack
(ECC on, MIG off, the default power limit and clocks). That every tray of a rack runs the same
configuration is judged across the rack (opsctl/burnin/configuration.py).
"""

from __future__ import annotations

from typing import Any

from probes.check_record import Check, GpuContext, check
from probes.sku_references import References

MODES = {0: "disabled", 1: "enabled"}  # nvml.h NVML_FEATURE_DISABLED / ENABLED, NVML_DEVICE_MIG_DISABLE / ENABLE


def read(nvml: Any, handle: Any, reading: Any, system: dict[str, Any]) -> dict[str, Any]:
    """The `configuration` section of a GPU entry (docs/probe-output.md); `reading` is its
    identity reading (VBIOS, InfoROM), `system` the tray's (driver). A value NVML does not
    give is None, and `unread` says which call and why."""
    config: dict[str, Any] = {"driver_version": system.get("driver_version"), "vbios": reading.vbios, "inforom": reading.inforom,
              "unread": {}}

    def ask(key: str, call: str, *args: Any) -> Any:
        try:
            return getattr(nvml, call)(handle, *args)
        except nvml.NVMLError as error:
            config["unread"][key] = f"{call}: {error}"
            return None

    ecc = ask("ecc_mode", "nvmlDeviceGetEccMode")
    config["ecc_mode"] = None if ecc is None else MODES.get(ecc[0], str(ecc[0]))
    config["ecc_mode_pending"] = None if ecc is None else MODES.get(ecc[1], str(ecc[1]))
    persistence = ask("persistence_mode", "nvmlDeviceGetPersistenceMode")
    config["persistence_mode"] = None if persistence is None else MODES.get(persistence, str(persistence))
    mig = ask("mig_mode", "nvmlDeviceGetMigMode")
    config["mig_mode"] = None if mig is None else MODES.get(mig[0], str(mig[0]))
    limit = ask("power_limit_w", "nvmlDeviceGetPowerManagementLimit")
    default = ask("power_limit_w", "nvmlDeviceGetPowerManagementDefaultLimit")
    config["power_limit_w"] = None if limit is None else limit / 1000.0
    config["default_power_limit_w"] = None if default is None else default / 1000.0
    clocks: dict[str, dict[str, Any]] = {}
    for name, clock in (("sm", nvml.NVML_CLOCK_SM), ("mem", nvml.NVML_CLOCK_MEM)):
        now = ask("applications_clocks", "nvmlDeviceGetApplicationsClock", clock)
        usual = ask("applications_clocks", "nvmlDeviceGetDefaultApplicationsClock", clock)
        if now is not None and usual is not None:
            clocks[name] = {"mhz": now, "default_mhz": usual}
    config["applications_clocks"] = "default" if clocks and all(c["mhz"] == c["default_mhz"] for c in clocks.values()) \
        else (None if not clocks else "set")
    config["applications_clocks_mhz"] = clocks
    config["nvlink_speed_mbps"] = _nvlink_speed(nvml, handle, config["unread"])
    return config


def _nvlink_speed(nvml: Any, handle: Any, unread: dict[str, str]) -> int | None:
    """The speed every active NVLink of the GPU runs at (nvml.h NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON,
    "Common NVLink Speed in MBps for active links"); None where NVML does not say."""
    field = getattr(nvml, "NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON", None)
    if field is None:
        return None
    try:
        [value] = nvml.nvmlDeviceGetFieldValues(handle, [field])
    except nvml.NVMLError as error:
        unread["nvlink_speed_mbps"] = f"nvmlDeviceGetFieldValues: {error}"
        return None
    if value.nvmlReturn != nvml.NVML_SUCCESS:
        unread["nvlink_speed_mbps"] = f"NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON: {nvml.NVMLError(value.nvmlReturn)}"
        return None
    return int(value.value.uiVal)


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """The configuration every GPU must run, where it was read."""
    return checks(context.component, gpu["configuration"], refs.rules) if gpu.get("configuration") else []


def checks(component: str, config: dict[str, Any], rules: dict[str, Any]) -> list[Check]:
    """What must hold on every GPU: ECC enabled, MIG disabled, the default power limit and clocks."""
    rule = rules["configuration"]
    found: list[Check] = []
    ecc = config.get("ecc_mode")
    if ecc is None:
        found.append(check("config.ecc_mode", component, "incomplete", None, "enabled", "mode", "!=",
                           rule["ecc_mode"]["source"], f"ECC mode could not be read ({config['unread'].get('ecc_mode')})"))
    else:
        pending = config.get("ecc_mode_pending")
        note = f" (pending after reset: {pending})" if pending and pending != ecc else ""
        found.append(check("config.ecc_mode", component, "pass" if ecc == "enabled" else "fail", ecc, "enabled", "mode",
                           "!=", rule["ecc_mode"]["source"], f"ECC {ecc}{note}"))
    if config.get("mig_mode") is not None:  # a GPU without MIG support has no MIG mode to be wrong in
        mig = config["mig_mode"]
        found.append(check("config.mig_mode", component, "pass" if mig == "disabled" else "fail", mig, "disabled", "mode",
                           "!=", rule["mig_mode"]["source"], f"MIG {mig}"))
    limit, default = config.get("power_limit_w"), config.get("default_power_limit_w")
    if limit is not None and default is not None:
        found.append(check("config.power_limit", component, "pass" if limit >= default else "fail", limit, default, "W",
                           "<", rule["power_limit"]["source"], f"power limit {limit:g} W, default {default:g} W"))
    if config.get("applications_clocks") is not None:
        clocks = config["applications_clocks_mhz"]
        state = config["applications_clocks"]
        found.append(check("config.applications_clocks", component, "pass" if state == "default" else "fail", state,
                           "default", "clocks", "!=", rule["applications_clocks"]["source"],
                           ", ".join(f"{name} {c['mhz']} MHz (default {c['default_mhz']})" for name, c in clocks.items())))
    return found
