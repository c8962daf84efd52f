"""Faults to inject in the localization benchmarks: random faults of every part kind, each
with the part it should be blamed on, and the in-spec noise levels of healthy links."""

from collections import defaultdict

from opsctl.simulation.scenario import DL_RATES
from probes.sim.sku_models import SIM_SKUS

# In spec: on NVLink 4 CRC errors far below DCGM's 100/s (they warn) and no replay (DCGM fails a
# link on one); the BER below 1e-12 on every link, the noisiest included (the simulator spreads a
# level lognormally over the links: at seed 2 one of 1,296 links has 16 times it).
NOISE_LEVELS = {
    "low": {"crc_per_s": 0.002, "ber": 1e-15},
    "mid": {"crc_per_s": 0.1, "ber": 1e-14},
    "high": {"crc_per_s": 2.0, "ber": 5e-14},
}


def has_dl_counters(model):
    """Do the rack's GPUs have the data-link CRC, replay and recovery counters (NVLink 4; Blackwell has none)?"""
    return SIM_SKUS[model.sku].nvlink_dl_counters


def noise(level, model):
    """A noise level on a rack of this model: on NVLink 5, whose GPUs have no data-link counter
    and where DCGM fails any counted error, only its BER."""
    return {k: v for k, v in NOISE_LEVELS[level].items() if has_dl_counters(model) or k not in DL_RATES}
SEEDS = (1, 2, 3)  # few seeds: trays a fault leaves alone are read once per seed and noise
RACKS = {"gb200-nvl72": "rack07", "hgx-h100": "hgx01"}


class Generator:
    """Random faults of each kind on a topology, each with the part it should be blamed on."""

    def __init__(self, topology, rng, window_s):
        self.topology = topology
        self.rng = rng
        self.window = window_s
        self.by_kind = defaultdict(list)
        for component in topology.components.values():
            kind = component.kind
            if kind == "connector" and topology.model.is_switch_tray(component.tray):
                kind = "switch_connector"
            self.by_kind[kind].append(component)

    def pick(self, kind):
        return self.rng.choice(self.by_kind[kind])

    def rel(self, component_id):
        return component_id.split("/", 1)[1]

    def errors(self):
        """Error rates of a marginal-to-bad link: on NVLink 4 CRC above DCGM's limit or replays, or
        both; on NVLink 5 symbol and receive errors, any of which DCGM fails."""
        rng = self.rng
        if has_dl_counters(self.topology.model):
            rates = {"crc_per_s": round(rng.uniform(20, 400), 1), "replay_per_s": round(10 ** rng.uniform(-1.3, 0.5), 3)}
        else:
            rates = {"symbol_per_s": round(10 ** rng.uniform(-0.5, 2), 2), "rcv_errors_per_s": round(10 ** rng.uniform(-1, 1.5), 2)}
        if rng.random() < 0.3:
            rates["ber"] = float(f"{10 ** rng.uniform(-11, -9):.1e}")
        return rates

    def start(self):
        return round(self.rng.uniform(0, self.window * 0.5), 1)

    def fault(self, kind):
        """(scenario faults, the part to blame, label)."""
        rng = self.rng
        if kind == "link":
            link = self.pick("link")
            style = rng.choice(["errors", "errors", "down", "flap"])
            if style == "errors":
                return [{"kind": "link_errors", "link": self.rel(link.id), **self.errors()}], link.id, "link errors"
            if style == "down":
                return [{"kind": "link_down", "link": self.rel(link.id), "start_s": self.start()}], link.id, "link down"
            period = round(rng.uniform(10, 30), 1)
            return ([{"kind": "link_flap", "link": self.rel(link.id), "start_s": self.start(), "period_s": period,
                      "down_s": round(rng.uniform(0.5, 3), 1)}], link.id, "link flapping")
        if kind == "gpu":
            gpu = self.pick("gpu")
            style = rng.choice(["lost", "gsp", "ecc", "remap", "links_down"])
            if style == "lost":
                return [{"kind": "gpu_lost", "gpu": self.rel(gpu.id), "start_s": self.start()}], gpu.id, "GPU lost (XID 79)"
            if style == "gsp":
                return ([{"kind": "xid", "gpu": self.rel(gpu.id), "xid": rng.choice([119, 120]), "at_s": self.start()}],
                        gpu.id, "GSP XID 119/120")
            if style == "ecc":
                return [{"kind": "ecc", "gpu": self.rel(gpu.id), "uncorrected": 1, "start_s": self.start()}], gpu.id, "double-bit ECC (XID 48)"
            if style == "remap":
                return ([{"kind": "row_remap", "gpu": self.rel(gpu.id), "uncorrected_rows": 1, "failure": True,
                          "start_s": self.start()}], gpu.id, "row remap failure (XID 64)")
            return ([{"kind": "bad_pins", "part": self.rel(gpu.id), "fraction": 1.0, "down": True, "start_s": self.start()}],
                    gpu.id, "all links of a GPU down")
        if kind in ("connector", "switch_connector", "cartridge", "baseboard"):
            part = self.pick(kind)
            size = len(part.links)
            low, high = {"connector": (2, 9), "switch_connector": (3, 16), "cartridge": (8, 72), "baseboard": (8, 40)}[kind]
            if rng.random() < 0.2:
                return ([{"kind": "bad_pins", "part": self.rel(part.id), "fraction": 1.0, "down": True, "start_s": self.start()}],
                        part.id, f"{kind} unseated: all links down")
            n = rng.randint(low, min(high, size))
            return ([{"kind": "bad_pins", "part": self.rel(part.id), "links": n, **self.errors()}], part.id,
                    f"{kind} bad pins on some links")
        if kind == "compute_tray":
            tray = self.pick("compute_tray")
            if rng.random() < 0.5:
                return ([{"kind": "bad_pins", "part": self.rel(tray.id), "fraction": 1.0, "down": True, "start_s": self.start()}],
                        tray.id, "compute tray unseated: all links down")
            return [{"kind": "bad_pins", "part": self.rel(tray.id), "fraction": 1.0, **self.errors()}], tray.id, "compute tray: all links erroring"
        if kind == "switch_chip":
            chip = self.pick("switch_chip")
            if not self.topology.model.is_nvl72:
                return ([{"kind": "bad_pins", "part": self.rel(chip.id), "fraction": 1.0, "down": True, "start_s": self.start()}],
                        chip.id, "NVSwitch chip: all links down")
            return [{"kind": "switch_chip_failed", "part": self.rel(chip.id), "start_s": self.start()}], chip.id, "switch chip failed"
        if kind == "switch_tray":
            tray = self.pick("switch_tray")
            return [{"kind": "switch_tray_failed", "part": self.rel(tray.id), "start_s": self.start()}], tray.id, "switch tray failed"
        raise ValueError(kind)

    def faults(self, kinds):
        """Faults of the given kinds on parts that share no link and no tray, so that each has
        one right answer (both chips of a switch tray failing is that tray's fault):
        (scenario faults, parts to blame, labels, the links they touch)."""
        faults, truths, labels = [], [], []
        used_links, used_trays = set(), set()
        for kind in kinds:
            for _ in range(100):
                added, truth, label = self.fault(kind)
                links = set(self.topology.components[truth].links)
                tray = self.topology.components[truth].tray
                if not links & used_links and (tray is None or tray not in used_trays):
                    break
            used_links |= links
            used_trays.add(tray)
            faults += added
            truths.append(truth)
            labels.append(label)
        return faults, truths, labels, used_links

