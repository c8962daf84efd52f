"""The simulated rack: GPUs and NVLink links whose readings are functions of time.

Every reading is computed from the spec, the seed and the clock, so two reads at the same
moment agree, deltas over a window are the injected rates, and nothing drifts between runs.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from probes.kernel_history import DRIVER_LOADED
from probes.sim import profiles
from probes.sim.clock import Clock, WallClock
from probes.sim.sku_models import SIM_SKUS
from probes.sim.spec import Effect, GpuSpec, LinkSpec, RackSpec, TraySpec

COUNTERS = ("crc", "replay", "recovery", "symbol")
# The counters beside the data-link ones that count on their own rate keys: NVLink 5's
# (NVML_FI_DEV_NVLINK_COUNT_*), and a link's NVLink data ECC errors, which NVML reports only as
# its GPU's total over all links (NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL). Each new one goes
# last: the draws below are made in this order, so the others read as before for a seed.
NVLINK5_COUNTERS = ("rcv", "malformed", "buffer_overrun", "integrity", "recovery_failed", "recovery_successful",
                    "rcv_remote", "rcv_general", "ecc_data")
_RATE_KEYS = {"crc": "crc_per_s", "replay": "replay_per_s", "recovery": "recovery_per_s", "symbol": "symbol_per_s",
              "rcv": "rcv_errors_per_s", "malformed": "malformed_packet_errors_per_s",
              "buffer_overrun": "buffer_overrun_errors_per_s", "integrity": "local_link_integrity_errors_per_s",
              "recovery_failed": "recovery_failed_per_s", "recovery_successful": "recovery_successful_per_s",
              "rcv_remote": "rcv_remote_errors_per_s", "rcv_general": "rcv_general_errors_per_s",
              "ecc_data": "ecc_data_errors_per_s"}
FEC_BINS = 16


class SimLink:
    """One NVLink port of a simulated GPU."""

    def __init__(self, gpu: SimGpu, spec: LinkSpec) -> None:
        self.gpu = gpu
        self.spec = spec
        self.port = spec.port
        self.effects = spec.effects
        rng = profiles.seeded_random(gpu.rack.seed, gpu.id, spec.port, "link")
        # Some healthy links are noisier than others (lognormal spread around the rack's noise).
        self.noise_scale = math.exp(rng.gauss(0.0, 0.6))
        # What the counters held when the simulator started (NVML counts since the driver loaded
        # or the GPU was reset). A healthy link holds none: DCGM 4.6's health watch fails any
        # recovery, replay or CRC total (MonitorNVLinkErrorFields), so a link that arrives with
        # some is a fault, injected as `link_totals`. The draws that used to pick random lifetime
        # counts are still made, so the phases below, and so every count, read as before for a seed.
        totals = {key: int(value) for effect in spec.effects if effect.kind == "totals"
                  for key, value in effect.params.items() if key in (*COUNTERS, *NVLINK5_COUNTERS, "effective")}
        for c in (*COUNTERS, "effective"):
            rng.randrange(0, 40 if c in ("crc", "effective") else 2)
        self.baseline: dict[str, int] = {c: totals.get(c, 0) for c in (*COUNTERS, "effective")}
        self.phase = {name: rng.random() for name in (*COUNTERS, "effective", "fec")}
        # A stream of its own, so the counters above read as they always have for a seed.
        rng5 = profiles.seeded_random(gpu.rack.seed, gpu.id, spec.port, "nvlink5")
        for name in NVLINK5_COUNTERS:
            rng5.randrange(0, 2)
            self.baseline[name] = totals.get(name, 0)
            self.phase[name] = rng5.random()
        self.line_rate = gpu.sku.nvlink_line_rate_bits
        # Bytes carried by this process's simulated copies, sent and received (NVML's
        # throughput counters). Copies stripe across a GPU's links by what each delivers.
        self.traffic = {"tx": 0, "rx": 0}
        self._traffic_lock = threading.Lock()

    # --- state -----------------------------------------------------------------------------
    def is_up(self, t: float) -> bool:
        for effect in self.effects:
            if effect.kind == "down" and profiles.active(effect, t):
                return False
            if effect.kind == "flap" and profiles.flap_is_down(effect, t):
                return False
        return True

    def down_events(self, t: float) -> int:
        """How many times the link has gone down (each a failed recovery) by time t."""
        events = 0
        for effect in self.effects:
            if effect.kind == "down" and t >= effect.get("start_s", 0.0):
                events += 1
            elif effect.kind == "flap":
                events += profiles.flap_transitions(effect, t)
        return events

    def _error_effects(self) -> list[Effect]:
        return [e for e in self.effects if e.kind == "errors"]

    def _noise(self, key: str) -> float:
        return float(self.gpu.rack.spec.noise.get(key, 0.0)) * self.noise_scale

    # --- counters --------------------------------------------------------------------------
    def expected(self, counter: str, t: float) -> float:
        """Λ(t): the expected count of `counter` since the epoch."""
        key = _RATE_KEYS[counter]
        total = self._noise(key) * max(t, 0.0)
        for effect in self._error_effects():
            if effect.get(key) is not None:
                total += profiles.effect_integral(effect, key, t)
            elif counter == "crc" and effect.get("ber") is not None:
                # A BER alone still shows as flit CRC errors at the line rate.
                total += profiles.ramp_integral(
                    float(effect.get("ber")) * self.line_rate,
                    effect.get("start_s", 0.0), effect.get("end_s"), effect.get("ramp_s", 0.0), t,
                )
        if counter == "recovery":
            # The data-link counter (NVLink 4) counts the link's drops and failed recoveries; an
            # NVLink 5 successful recovery (recovery_successful_per_s) counts on its own counter only.
            total += self.down_events(t) + self._effects_integral("recovery_failed_per_s", t)
        return total

    def _effects_integral(self, key: str, t: float) -> float:
        return sum(profiles.effect_integral(e, key, t) for e in self._error_effects() if e.get(key) is not None)

    def recovery_successful(self, t: float) -> int:
        """Successful link recoveries by time t (NVLink 5): the rate injected as successful, and
        those it arrived with. Nothing is drawn from the data-link recovery counter: Blackwell has
        none, and NVIDIA documents no relation between the two."""
        return self.counter("recovery_successful", t)

    def recovery_failed(self, t: float) -> int:
        """Failed link recoveries by time t (NVLink 5): every drop of the link, the rate injected,
        and those it arrived with (`link_totals`)."""
        return self.down_events(t) + self.counter("recovery_failed", t)

    def counter(self, counter: str, t: float) -> int:
        # No link counts more errors than the bits it carried: a rate past the line rate is held
        # there. That also keeps the count inside NVML's 64-bit counter; 1e300 errors a second
        # would otherwise be truncated to a counter that never moves, which reads as healthy.
        expected = min(self.expected(counter, t), self.line_rate * max(t, 0.0))
        return self.baseline[counter] + profiles.count(expected, self.phase[counter])

    def ber(self, t: float) -> float:
        """The effective BER the link reports now (errors after FEC per bit)."""
        ber = self._noise("ber")
        for effect in self._error_effects():
            if effect.get("ber") is not None:
                ber += profiles.effect_rate(effect, "ber", t)
        return ber

    def symbol_ber(self, t: float) -> float:
        rate = self._noise("symbol_per_s")
        for effect in self._error_effects():
            rate += profiles.effect_rate(effect, "symbol_per_s", t)
        return rate / self.line_rate

    def effective_errors(self, t: float) -> int:
        """Errors left after FEC (NVLink 5). In-spec noise leaves none: DCGM fails any effective
        error in a window, so a healthy link's count does not move; an injected BER or rate does."""
        expected = self._effects_integral("effective_errors_per_s", t)
        for effect in self._error_effects():
            ber = effect.get("ber")
            if ber is not None:  # CRC errors alone are replayed, not left behind: they set no BER
                expected += profiles.ramp_integral(
                    float(ber) * self.line_rate, effect.get("start_s", 0.0), effect.get("end_s"), effect.get("ramp_s", 0.0), t
                )
        return self.baseline["effective"] + profiles.count(expected, self.phase["effective"])

    def fec_history(self, t: float) -> list[int]:
        """Codewords by number of corrected symbols (bins 0–15): a worse link fills higher bins."""
        codewords = self.line_rate / 5440.0 * max(t, 0.0)  # RS(544,514) codewords of 5,440 bits
        corrected_per_codeword = 1e-4 * max(1.0, (self.ber(t) / 1e-15) ** 0.25)
        bins: list[int] = []
        for k in range(FEC_BINS):
            p = math.exp(-corrected_per_codeword) * corrected_per_codeword**k / math.factorial(k)
            bins.append(profiles.count(codewords * p, self.phase["fec"]))
        return bins

    def add_traffic(self, direction: str, nbytes: float) -> None:
        with self._traffic_lock:
            self.traffic[direction] += int(nbytes)

    def bandwidth_factor(self, t: float) -> float:
        """Share of the nominal per-link bandwidth this link delivers now."""
        if not self.is_up(t):
            return 0.0
        factor = 1.0
        for effect in self.effects:
            if effect.kind == "bandwidth" and profiles.active(effect, t):
                factor *= float(effect.get("factor", 1.0))
        replay_rate = sum(profiles.effect_rate(e, "replay_per_s", t) for e in self._error_effects())
        return factor / (1.0 + replay_rate / 50.0)  # replays resend flits: heavy replay costs bandwidth


class SimGpu:
    """One simulated GPU: health readings, load accounting, and the faults that act on it."""

    def __init__(self, rack: SimRack, tray: SimTray, spec: GpuSpec) -> None:
        self.rack = rack
        self.tray = tray
        self.spec = spec
        self.id = spec.id
        self.sku = rack.sku
        self.effects = spec.effects
        rng = profiles.seeded_random(rack.seed, spec.id, "gpu")
        # Healthy GPUs differ a little: the rack-relative judge must not call that a fault.
        self.perf_scale = 1.0 + max(-0.025, min(0.025, rng.gauss(0.0, 0.008)))
        self.temp_offset = rng.gauss(0.0, 1.5)
        self.power_scale = 1.0 + rng.gauss(0.0, 0.015)
        self.lifetime_energy_j = rng.uniform(1e8, 5e9)
        self.lifetime_corrected_ecc = rng.randrange(0, 20)
        self.links = [SimLink(self, link) for link in spec.links]
        self._busy: list[tuple[float, float]] = []  #  merged (start, end) intervals of load, sim time
        self._computing: list[float] = []  # the start of each compute call in progress (computing())
        self._lock = threading.Lock()
        self._xid_cache: list[tuple[float, int]] = []  #  (time, xid) in order, complete up to _xid_horizon
        self._xid_horizon = -math.inf

    # --- faults that change what answers ---------------------------------------------------
    def lost_at(self) -> float | None:
        times = [e.get("start_s", 0.0) for e in self.effects if e.kind == "lost"]
        return min(times) if times else None

    def is_lost(self, t: float) -> bool:
        lost = self.lost_at()
        return lost is not None and t >= lost

    def is_hung(self, t: float) -> bool:
        """Compute on this GPU never returns (a wedged GPU or driver): from `start_s`, and, given
        `after_busy_s`, only once it has computed that long — a GPU that wedges under load, whenever
        the load begins (a test then does not depend on how fast a busy machine starts the probe)."""
        return any(e.kind == "hang" and profiles.active(e, t) and self.busy_seconds(t) >= float(e.get("after_busy_s", 0.0))
                   for e in self.effects)

    def nvml_hangs(self, t: float) -> bool:
        """NVML calls on this GPU block too (the driver itself is stuck)."""
        return any(e.kind == "hang" and e.get("nvml", False) and profiles.active(e, t) for e in self.effects)

    def unsupported_calls(self) -> set[str]:
        return {c for e in self.effects if e.kind == "not_supported" for c in e.get("calls", [])}

    def unsupported_fields(self) -> set[int]:
        return {f for e in self.effects if e.kind == "not_supported" for f in e.get("fields", [])}

    # --- load --------------------------------------------------------------------------------
    def add_load(self, start: float, seconds: float) -> None:
        """Record that the GPU computed from `start` for `seconds` (sim time); a span that
        overlaps the latest ones (a compute call around the kernels it ran) merges with them."""
        with self._lock:
            end = start + seconds
            while self._busy and start <= self._busy[-1][1]:
                last_start, last_end = self._busy.pop()
                start, end = min(start, last_start), max(end, last_end)
            self._busy.append((start, end))

    @contextmanager
    def computing(self, now: Callable[[], float]) -> Iterator[None]:
        """The GPU is busy for the whole of a compute call, the host's arithmetic included: in
        the simulator the host (NumPy) does the GPU's work, and a host slowed by a loaded
        machine must not show the GPU idle — clocks and power down — between its kernels,
        which a real GPU, fed by its queue, is not."""
        start = now()
        with self._lock:
            self._computing.append(start)
        try:
            yield
        finally:
            with self._lock:
                self._computing.remove(start)
            self.add_load(start, max(0.0, now() - start))

    def busy_seconds(self, t: float) -> float:
        with self._lock:
            return sum(max(0.0, min(end, t) - start) for start, end in self._busy if start < t)

    def is_busy(self, t: float) -> bool:
        with self._lock:
            return any(start <= t for start in self._computing) or \
                (bool(self._busy) and self._busy[-1][0] <= t < self._busy[-1][1] + 0.5)

    # --- throttling, clocks, power, temperature ---------------------------------------------
    def active_throttles(self, t: float) -> list[Effect]:
        found: list[Effect] = []
        for effect in self.effects:
            if effect.kind != "throttle" or not profiles.active(effect, t):
                continue
            after = effect.get("after_busy_s")
            if after is not None and not (self.is_busy(t) and self.busy_seconds(t) >= after):
                continue  # a thermal limit reached only under sustained load
            found.append(effect)
        return found

    def clock_factor(self, t: float) -> float:
        factor = 1.0
        for effect in self.active_throttles(t):
            factor = min(factor, float(effect.get("clock_factor", 0.7)))
        return factor

    def sm_clock_mhz(self, t: float) -> int:
        if not self.is_busy(t):
            return 345
        return int(self.sku.sm_clock_max_mhz * self.clock_factor(t))

    def temperature_c(self, t: float) -> int:
        base = self.sku.load_c if self.is_busy(t) else self.sku.idle_c
        temperature = base + self.temp_offset
        for effect in self.active_throttles(t):
            if effect.get("reason", "thermal") == "thermal":
                temperature = max(temperature, float(effect.get("temperature_c", 91.0)))
        return int(round(temperature))

    def memory_temperature_c(self, t: float) -> int:
        return self.temperature_c(t) + round(self.sku.memory_above_gpu_c)

    def thermal_margin_c(self, t: float) -> int:
        """Degrees to the nearest slowdown threshold (NVML's margin temperature): the die's or the HBM's."""
        return int(min(self.sku.slowdown_c - self.temperature_c(t),
                       self.sku.memory_slowdown_c - self.memory_temperature_c(t)))

    def power_w(self, t: float) -> float:
        if not self.is_busy(t):
            return self.sku.idle_w * self.power_scale
        return self.sku.load_w * self.power_scale * (0.4 + 0.6 * self.clock_factor(t))

    def energy_mj(self, t: float) -> int:
        idle = self.sku.idle_w * self.power_scale * max(t, 0.0)
        extra = (self.sku.load_w - self.sku.idle_w) * self.power_scale * self.busy_seconds(t)
        # What a throttle's lower clocks did not draw (power_w's 0.6 share that scales with the clock).
        saved = max((0.6 * self.sku.load_w * self.power_scale * (1.0 - float(e.get("clock_factor", 0.7)))
                     * self.throttled_seconds(e, t) for e in self.effects if e.kind == "throttle"), default=0.0)
        return int((self.lifetime_energy_j + idle + extra - saved) * 1000)

    def throttled_seconds(self, effect: Effect, t: float) -> float:
        """Seconds by t that a throttle effect held the clocks (NVML's violation time): under
        load past `after_busy_s` for a limit reached only under load, else its whole window."""
        if effect.get("after_busy_s") is not None:
            return max(0.0, self.busy_seconds(t) - float(effect.get("after_busy_s")))
        stop = t if effect.get("end_s") is None else min(t, effect.get("end_s"))
        return max(0.0, stop - effect.get("start_s", 0.0))

    def throughput_scale(self, t: float) -> float:
        """Achieved compute relative to a healthy GPU of the SKU at this moment."""
        scale = self.perf_scale * self.clock_factor(t)
        for effect in self.effects:
            if effect.kind == "slow" and profiles.active(effect, t):
                scale *= float(effect.get("factor", 0.8))
        return scale

    def sdc_probability(self, t: float) -> float:
        p = 0.0
        for effect in self.effects:
            if effect.kind == "sdc" and profiles.active(effect, t):
                p = max(p, float(effect.get("probability", 0.01)))
        return p

    # --- memory errors ----------------------------------------------------------------------
    def ecc_counts(self, t: float) -> tuple[int, int]:
        """(corrected, uncorrected) since the simulator's epoch (volatile counts)."""
        corrected = 0.0
        uncorrected = 0
        for effect in self.effects:
            if effect.kind != "ecc":
                continue
            corrected += profiles.effect_integral(effect, "corrected_per_s", t)
            if t >= effect.get("start_s", 0.0):
                uncorrected += int(effect.get("uncorrected", 0))
        return profiles.count(corrected, 0.5), uncorrected

    def remapped_rows(self, t: float) -> tuple[int, int, int, int]:
        corrected = uncorrected = pending = failure = 0
        for effect in self.effects:
            if effect.kind == "row_remap" and t >= effect.get("start_s", 0.0):
                corrected += int(effect.get("corrected_rows", 0))
                uncorrected += int(effect.get("uncorrected_rows", 0))
                pending = pending or int(bool(effect.get("pending", False)))
                failure = failure or int(bool(effect.get("failure", False)))
        return corrected, uncorrected, pending, failure

    # --- XIDs ---------------------------------------------------------------------------------
    def xid_events(self, until: float) -> list[tuple[float, int]]:
        """[(time, xid)] of every XID logged up to `until`, in order."""
        log = self._xid_log(until)
        return log[: bisect.bisect_right(log, (until, math.inf))]

    def xid_count(self, until: float) -> int:
        """How many XIDs were logged up to `until`."""
        return bisect.bisect_right(self._xid_log(until), (until, math.inf))

    def xid_at(self, index: int, until: float) -> tuple[float, int] | None:
        """The index-th XID (time, xid) if it was logged by `until`, else None."""
        log = self._xid_log(until)
        return log[index] if index < len(log) and log[index][0] <= until else None

    def _xid_log(self, until: float) -> list[tuple[float, int]]:
        """The XIDs up to at least `until`, generated once and extended as time goes on:
        a repeating XID (a flapping link's, every 30 s) would otherwise be regenerated from
        the start on every read of a long-running exporter."""
        with self._lock:
            if until > self._xid_horizon:
                new: list[tuple[float, int]] = []
                for effect in self.effects:
                    if effect.kind == "xid":
                        code = int(effect.get("xid"))
                        new.extend((at, code) for at in _occurrences(effect, self._xid_horizon, until))
                self._xid_cache.extend(sorted(new))  # all later than what is cached
                self._xid_horizon = until
            return self._xid_cache

    def kernel_log(self, after: float, until: float) -> list[str]:
        """The NVRM Xid lines this GPU's kernel log gets in (after, until]: one per XID an `xid`
        effect logs, with its registers (intr_info, error_status) where it has them, in the form
        of NVIDIA's catalog."""
        return [line for _, line in self.timed_kernel_log(after, until)]

    def timed_kernel_log(self, after: float, until: float) -> list[tuple[float, str]]:
        """kernel_log's lines with the sim time each was logged, in order."""
        lines: list[tuple[float, str]] = []
        domain, bus, rest = self.spec.pci_bus_id.split(":")
        pci = f"{int(domain, 16):04x}:{bus}:{rest.split('.')[0]}"
        for effect in self.effects:
            if effect.kind != "xid":
                continue
            code = int(effect.get("xid"))
            if effect.get("intr_info") is not None:
                intr, status = int(effect.get("intr_info")), int(effect.get("error_status", 0))
                text = (f"NVRM: Xid (PCI:{pci}): {code}, simulated unit Nonfatal XC0 i0 Link -1 "
                        f"({intr:#010x} {status:#010x} 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")
            else:
                text = f"NVRM: Xid (PCI:{pci}): {code}, pid='<unknown>', name=<unknown>, simulated XID {code}"
            lines += [(at, text) for at in _occurrences(effect, after, until)]
        for effect in self.effects:  # the reset job's journal line, as NVSentinel's gpu_reset.sh writes it
            at = float(effect.get("at_s", 0.0))
            if effect.kind == "gpu_reset" and after < at <= until:
                lines.append((at, f"GPU reset executed: {self.spec.uuid}, "
                                  f"success: {'true' if effect.get('success', True) else 'false'}"))
        return sorted(lines)

    def recovery_action(self, t: float) -> str:
        """What the driver asks for now (NVML's GPU recovery action): set by the latest XID
        logged by t that carried one, as XID 154 announces."""
        action, latest = "none", -math.inf
        for effect in self.effects:
            if effect.kind == "xid" and effect.get("recovery_action"):
                at = effect.get("at_s", 0.0)
                if latest < at <= t:
                    action, latest = effect.get("recovery_action"), at
        return action

    # --- fabric ---------------------------------------------------------------------------------
    def clique_id(self, t: float) -> int:
        """The NVLink clique the GPU registered in: the rack's, unless a fault put it in another."""
        for effect in self.effects:
            if effect.kind == "fabric" and effect.get("clique_id") is not None and profiles.active(effect, t):
                return int(effect.get("clique_id"))
        return self.rack.spec.clique_id

    def fabric(self, t: float) -> tuple[str, dict[str, bool]]:
        """(state, {health flag: bool}) of the GPU's NVLink fabric registration."""
        flags = {"degraded_bw": False, "route_recovery": False, "route_unhealthy": False, "access_timeout_recovery": False}
        state = "completed"
        if any(not link.is_up(t) for link in self.links):
            flags["degraded_bw"] = True
        for effect in self.effects:
            if effect.kind == "fabric" and profiles.active(effect, t):
                state = effect.get("state", state)
                for flag in flags:
                    if effect.get(flag):
                        flags[flag] = True
        return state, flags

    def fabric_configuration(self, t: float) -> tuple[str | None, bool]:
        """(what an incorrect configuration is, or None; whether the global fabric manager is
        disconnected) of the fabric registration, from `fabric_degraded` faults."""
        wrong, disconnected = None, False
        for effect in self.effects:
            if effect.kind == "fabric" and profiles.active(effect, t):
                wrong = effect.get("incorrect_configuration", wrong)
                disconnected = disconnected or bool(effect.get("gfm_disconnected", False))
        return wrong, disconnected


def _occurrences(effect: Effect, after: float, until: float) -> list[float]:
    """Times in (after, until] at which an `xid` effect logs its XID."""
    at = float(effect.get("at_s", 0.0))
    repeat = effect.get("repeat_s")
    if repeat is None:
        return [at] if after < at <= until else []
    repeat = float(repeat)
    limit = int(effect.get("count", 10**9))
    first = 0 if after < at else int((after - at) // repeat) + 1
    times: list[float] = []
    for k in range(first, limit):
        t = at + k * repeat
        if t > until:
            break
        if t > after:
            times.append(t)
    return times


class SimTray:
    def __init__(self, rack: SimRack, spec: TraySpec) -> None:
        self.rack = rack
        self.spec = spec
        self.name = spec.name
        self.gpus = [SimGpu(rack, self, gpu) for gpu in spec.gpus]


class _Trays(Mapping[str, SimTray]):
    """The rack's trays by name, each built the first time it is asked for: a tray's probe builds
    its own GPUs and their links (4 and 72 on a GB200 tray), not the rack's 72 and 1,296."""

    def __init__(self, rack: SimRack, specs: Iterable[TraySpec]) -> None:
        self._rack = rack
        self._specs = {spec.name: spec for spec in specs}
        self._built: dict[str, SimTray] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> SimTray:
        with self._lock:
            tray = self._built.get(name)
            if tray is None:
                tray = self._built[name] = SimTray(self._rack, self._specs[name])  # KeyError as a dict's
            return tray

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


class SimRack:
    """A simulated rack built from a RackSpec. `t(now)` turns clock time into sim time."""

    def __init__(self, spec: RackSpec | dict[str, Any], clock: Clock | None = None) -> None:
        if isinstance(spec, dict):
            spec = RackSpec.from_dict(spec)
        self.spec = spec
        self.seed = spec.seed
        self.sku = SIM_SKUS[spec.sku]
        self.clock = clock or WallClock()
        self.epoch = spec.epoch if spec.epoch is not None else self.clock.now()
        self.trays = _Trays(self, spec.trays)

    def now(self) -> float:
        """Seconds since the simulator's epoch."""
        return self.clock.now() - self.epoch

    def gpus(self, tray: str | None = None) -> list[SimGpu]:
        trays = [self.trays[tray]] if tray is not None else self.trays.values()
        return [gpu for t in trays for gpu in t.gpus]

    def imex(self, tray: str) -> dict[str, Any]:
        """The IMEX service's state and channels on a compute tray (probes/imex.py's reading)."""
        if tray in (self.spec.domain.get("imex_missing") or []):
            return {"service": "inactive", "channels": []}
        return {"service": "active", "channels": ["channel0"]}

    def kernel_log(self, tray: str, since: float) -> tuple[list[str], str | None]:
        """A tray's kernel log from clock time `since` to now (probes.kernel_log.read_kernel_log's
        answer: lines, and no error)."""
        after, until = since - self.epoch, self.now()
        return [line for gpu in self.trays[tray].gpus for line in gpu.kernel_log(after, until)], None

    def kernel_history(self, tray: str, until: float) -> tuple[list[str], str | None]:
        """A tray's kernel log from the driver's load (the simulation's start, and before it: an
        `xid` effect at a negative at_s) to clock time `until` (probes.kernel_history's answer):
        its GPUs' Xid lines and reset lines (`gpu_reset` faults), then its host's NVSwitch SXid lines
        (an HGX baseboard's `sxid` faults), in time order."""
        sim_tray = self.trays[tray]
        t = until - self.epoch
        timed = [entry for gpu in sim_tray.gpus for entry in gpu.timed_kernel_log(-math.inf, t)] + \
            sxid_lines(sim_tray.spec.effects, t) + driver_load_lines(sim_tray.spec.effects, t)
        return [line for _, line in sorted(timed, key=lambda entry: entry[0])], None


def driver_load_lines(effects: list[Effect], until: float) -> list[tuple[float, str]]:
    """The driver's load line (probes.kernel_history.DRIVER_LOADED, then its version and build as
    the driver prints them) at each `driver_reload` of a host by sim time `until`."""
    return [(float(effect.get("at_s")), f"{DRIVER_LOADED} x86_64 Kernel Module  570.133.20  Release Build  (simulated)")
            for effect in effects if effect.kind == "driver_reload" and float(effect.get("at_s")) <= until]


def sxid_lines(effects: list[Effect], until: float) -> list[tuple[float, str]]:
    """(sim time, line) of the SXid lines of a host's `sxid` effects logged by sim time `until`, in
    order, in the form the nvidia-nvswitch driver writes them (probes/nvswitch_sxids.py): "Fatal"
    or "Non-fatal" after the code, or neither when the fault leaves it unstated."""
    lines: list[tuple[float, str]] = []
    for effect in effects:
        if effect.kind != "sxid" or float(effect.get("at_s", 0.0)) > until:
            continue
        fatal = effect.params.get("fatal")
        severity = "Fatal, " if fatal is True else "Non-fatal, " if fatal is False else ""
        lines.append((float(effect.get("at_s", 0.0)),
                      f"nvidia-nvswitch{effect.get('switch')}: SXid (PCI:{effect.get('pci_bus_id')}): "
                      f"{int(effect.get('sxid'))}, {severity}{effect.get('text', 'simulated SXid')}"))
    return sorted(lines)


def allreduce_busbw_gbps(gpus: list[SimGpu], t: float) -> float:
    """The bus bandwidth (nccl-tests' definition) an all-reduce over `gpus` reaches at time t
    through the NVSwitch fabric: every GPU sends and receives its share over all its links at
    once, so the GPU with the least live NVLink bandwidth sets the pace."""
    return min(sum(link.bandwidth_factor(t) for link in gpu.links) * gpu.sku.nvlink_gbps_per_link for gpu in gpus)
