"""A real throwaway Slurm cluster on this machine for the scheduler tests: munged with a fresh
key, slurmctld, and one slurmd per compute tray of rack07 (nodes rack07-ct01 … rack07-ct18).

Debian's slurmd runs several daemons on one host when each is started with `-N NODENAME` and
its node has its own `Port` in slurm.conf (the spool and log paths take `%n`), so every node is
real: slurmctld sees it register, and srun runs tasks on it. Nothing is installed system-wide:
the config, the key, the state and the logs live in a temporary folder, the clients find them
through $SLURM_CONF.

Use it as a pytest plugin (tests/conftest.py lists it in `pytest_plugins`):

    def test_something(slurm):      # the session's cluster, every node undrained first
        slurm.env                    # {"SLURM_CONF": …}: set it for opsctl and the clients
        slurm.node("rack07-ct05")    # {"State": "IDLE+DRAIN", "Reason": "…", …} from scontrol
        slurm.drain("rack07-ct05", "someone else's reason")
"""

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

RACK = "rack07"
NODES = tuple(f"{RACK}-ct{n:02d}" for n in range(1, 19))
READY_TIMEOUT_S = 60
DAEMONS = ("munged", "slurmctld", "slurmd", "scontrol", "srun")


def _free_ports(count):
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def slurm_conf(root, host, user, ctld_port, node_ports, nodes=NODES):
    node_lines = [f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs=1 RealMemory=100 "
                  "State=UNKNOWN" for node, port in zip(nodes, node_ports)]
    return "\n".join([
        "ClusterName=opsctltest",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmUser={user}",
        f"SlurmdUser={user}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root}/munge/socket",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool/%n",
        f"SlurmctldPidFile={root}/slurmctld.pid",
        f"SlurmdPidFile={root}/slurmd-%n.pid",
        f"SlurmctldLogFile={root}/log/slurmctld.log",
        f"SlurmdLogFile={root}/log/slurmd-%n.log",
        "ProctrackType=proctrack/pgid",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/builtin",
        "MpiDefault=none",
        "ReturnToService=2",   # a node that registers after a restart takes work again (not a drain)
        "SlurmdTimeout=300",   # a loaded test machine must not mark its slurmds down
        "InactiveLimit=0",
        "KillWait=5",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        *node_lines,
        f"PartitionName={RACK} Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP",
    ]) + "\n"


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    nodes: tuple
    processes: list = field(default_factory=list)

    @property
    def env(self):
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def scontrol(self, *args, check=True):
        return subprocess.run(["scontrol", *args], env=self.env, capture_output=True, text=True, timeout=30,
                              check=check)

    def node(self, name):
        """The node as slurmctld reports it: `scontrol show node NAME`, one key=value per field
        (Reason, the last of its line, is kept whole; who set it and when go to ReasonSetBy)."""
        text = self.scontrol("-o", "show", "node", name).stdout.strip()
        head, _, reason = text.partition(" Reason=")
        fields = dict(item.split("=", 1) for item in head.split() if "=" in item)
        if reason:
            fields["Reason"], _, set_by = reason.rpartition(" [")
            fields["ReasonSetBy"] = set_by.rstrip("]")
        return fields

    def drained(self):
        """Names of the nodes slurmctld holds drained (sinfo's own view)."""
        out = subprocess.run(["sinfo", "-h", "-N", "-t", "drain,drained,draining", "-o", "%N"], env=self.env,
                             capture_output=True, text=True, timeout=30, check=True).stdout
        return sorted(set(out.split()))

    def drain(self, name, reason):
        self.scontrol("update", f"NodeName={name}", "State=DRAIN", f"Reason={reason}")

    def undrain_all(self):
        for name in self.drained():
            self.scontrol("update", f"NodeName={name}", "State=RESUME")
        self.wait_for(lambda: not self.drained(), "every node undrained")

    def wait_for(self, predicate, what, timeout=READY_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise RuntimeError(f"slurm test cluster: timed out waiting for {what}; "
                                   f"{self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self):
        log = self.root / "log" / "slurmctld.log"
        return log.read_text()[-2000:] if log.exists() else "(no slurmctld log)"

    def stop(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _responding(cluster):
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=cluster.env, capture_output=True, text=True,
                         timeout=30).stdout
    states = dict(line.split() for line in out.splitlines() if line.strip())
    return len(states) == len(cluster.nodes) and all(s.rstrip("*") == "idle" and not s.endswith("*")
                                                     for s in states.values())


def start_slurm(root, nodes=NODES):
    root = Path(root)
    for folder in ("munge", "state", "log", *(f"spool/{node}" for node in nodes)):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o755)  # munged refuses a socket folder others cannot reach
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    host = socket.gethostname().split(".")[0]
    ctld_port, *node_ports = _free_ports(1 + len(nodes))
    conf = root / "slurm.conf"
    conf.write_text(slurm_conf(root, host, getpass.getuser(), ctld_port, node_ports, nodes))
    cluster = SlurmCluster(root, conf, tuple(nodes))
    log = open(root / "log" / "daemons.out", "ab")
    munge = root / "munge"
    try:
        cluster.processes.append(subprocess.Popen(
            ["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={munge}/socket",
             f"--pid-file={munge}/munged.pid", f"--log-file={munge}/munged.log", f"--seed-file={munge}/seed"],
            stdout=log, stderr=log))
        cluster.wait_for(lambda: (munge / "socket").exists(), "munged's socket", timeout=15)
        cluster.processes.append(subprocess.Popen(["slurmctld", "-D", "-f", str(conf)], env=cluster.env,
                                                  stdout=log, stderr=log))
        cluster.wait_for(lambda: cluster.scontrol("ping", check=False).stdout.find("is UP") >= 0, "slurmctld")
        for node in nodes:
            cluster.processes.append(subprocess.Popen(["slurmd", "-D", "-N", node, "-f", str(conf)], env=cluster.env,
                                                      stdout=log, stderr=log))
        cluster.wait_for(lambda: _responding(cluster), "every slurmd registered")
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """The session's Slurm cluster (rack07's 18 compute trays as nodes)."""
    missing = [name for name in DAEMONS if shutil.which(name) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed: run scripts/test, which installs slurm-wlm and munge")
    cluster = start_slurm(tmp_path_factory.mktemp("slurm"))
    yield cluster
    cluster.stop()


@pytest.fixture
def slurm(slurm_cluster, monkeypatch):
    """The cluster with every node undrained, and $SLURM_CONF pointing opsctl at it."""
    slurm_cluster.undrain_all()
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    return slurm_cluster
