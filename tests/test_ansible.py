"""The Ansible side, run for real (ansible-core and ansible-lint come with the dev extra): the
example inventory read by opsctl and by Ansible; every playbook through --syntax-check and
ansible-lint; deploy.yml installing opsctl into a venv on a tray with the exporter's systemd
unit, whose ExecStart then serves metrics; acceptance.yml on that tray; burnin.yml across a
small fleet in batches, with a failing and an unreachable rack, judged by `opsctl report`.

Every tray is this machine, with folders of its own, on the simulator: a host with
`ansible_connection: local`, or one reached over ssh on the loopback sshd (tests/sshd.py).
"""

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from opsctl.fleet.ansible_results import NOT_REACHED

REPO = Path(__file__).resolve().parent.parent
ANSIBLE = REPO / "ansible"
BIN = Path(sys.executable).parent
PLAYBOOKS = ("deploy.yml", "burnin.yml", "acceptance.yml")
# Role variables the playbooks set themselves; every other one may be set in the inventory.
SET_BY_PLAYBOOKS = {"opsctl_probes_wheel", "opsctl_exporter_rack", "opsctl_exporter_tray"}


def tool(name):
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed: run scripts/test, which installs the dev extra")
    return str(path)


@pytest.fixture(scope="module")
def ansible_env(tmp_path_factory):
    """Ansible's state kept out of ~; ssh's control sockets in a short path (sockets have a
    length limit); this Python's `opsctl` first on PATH for the playbooks' controller tasks."""
    home = tmp_path_factory.mktemp("ansible-home")
    sockets = tempfile.mkdtemp(prefix="ans-cp-")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"), "ANSIBLE_HOME": str(home),
           "ANSIBLE_LOCAL_TEMP": str(home / "tmp"), "ANSIBLE_SSH_CONTROL_PATH_DIR": sockets, "ANSIBLE_NOCOLOR": "1"}
    env.pop("OPSCTL_INVENTORY", None)
    yield env
    shutil.rmtree(sockets, ignore_errors=True)


def playbook(env, name, inventory, *extra):
    result = subprocess.run([tool("ansible-playbook"), "-i", str(inventory), str(ANSIBLE / name), *map(str, extra)],
                            capture_output=True, text=True, env=env, cwd=Path(inventory).parent, timeout=900)
    result.log = f"exit {result.returncode}\n{result.stdout[-6000:]}\n{result.stderr[-3000:]}"
    return result


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- the files themselves ----------------------------------------------------------------------


@pytest.mark.slow
def test_the_example_inventory_is_read_by_opsctl_and_by_ansible(opsctl, ansible_env):
    example = ANSIBLE / "inventory.example.yaml"
    racks = opsctl("--inventory", example, "inventory", "list", "--json")
    assert racks.code == 0, racks.err
    assert {r["rack"]: (r["model"], r["trays"]) for r in racks.json()["racks"]} == {
        "rack12": ("gb200-nvl72", 27), "rack13": ("gb200-nvl72", 27), "hgx21": ("hgx-h100", 1), "hgx22": ("hgx-h100", 1)}
    listed = subprocess.run([tool("ansible-inventory"), "-i", example, "--list"], capture_output=True, text=True,
                            env=ansible_env, timeout=300)
    assert listed.returncode == 0, listed.stderr
    groups = json.loads(listed.stdout)
    assert groups["rack12"]["hosts"] == [f"rack12-ct{n:02d}" for n in range(1, 19)] + [f"rack12-st{n}" for n in range(1, 10)]
    assert groups["nvl72"]["children"] == ["rack12", "rack13"] and groups["hgx22"]["hosts"] == ["10.20.1.22"]


def test_every_role_variable_an_inventory_may_set_is_known_to_opsctl():
    from opsctl.inventory import KNOWN_OPSCTL_VARS

    for defaults in sorted(ANSIBLE.glob("roles/*/defaults/main.yml")):
        settable = set(yaml.safe_load(defaults.read_text())) - SET_BY_PLAYBOOKS
        assert settable and settable <= KNOWN_OPSCTL_VARS, (defaults, settable - KNOWN_OPSCTL_VARS)


@pytest.mark.parametrize("name", PLAYBOOKS)
@pytest.mark.slow
def test_the_playbook_passes_syntax_check(name, ansible_env):
    result = playbook(ansible_env, name, ANSIBLE / "inventory.example.yaml", "--syntax-check")
    assert result.returncode == 0, result.log
    assert f"playbook: {ANSIBLE / name}" in result.stdout


@pytest.mark.slow
def test_playbooks_and_roles_pass_ansible_lint_production_profile(ansible_env):
    """No exception: ansible/.ansible-lint asks for the strictest profile and skips no rule."""
    result = subprocess.run([tool("ansible-lint"), "--nocolor"], capture_output=True, text=True, cwd=ANSIBLE,
                            env=ansible_env, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert "Profile 'production' was required, and it passed" in output
    config = yaml.safe_load((ANSIBLE / ".ansible-lint").read_text())
    assert not config.get("skip_list") and not config.get("warn_list")


# --- deploy.yml and acceptance.yml on one tray -------------------------------------------------

@dataclass
class DeployedTray:
    root: Path
    inventory: Path
    venv: Path
    workdir: Path
    unit: Path
    port: int
    log: str


@pytest.fixture(scope="module")
def tray(tmp_path_factory, ansible_env):
    """opsctl rolled out by deploy.yml onto one simulated HGX H100 "tray" (this machine). No
    systemd runs here: the unit is written and verified, not started."""
    root = tmp_path_factory.mktemp("tray")
    (root / "hgxa-healthy.yaml").write_text("scenario: hgxa-healthy\nseed: 5\n")
    port = free_port()
    inventory = root / "fleet.yaml"
    inventory.write_text(f"""all:
  children:
    hgxa:
      vars:
        opsctl_model: hgx-h100
        opsctl_backend: sim
        opsctl_scenario: hgxa-healthy.yaml
      hosts:
        hgxa-node:
          ansible_connection: local
          ansible_python_interpreter: {sys.executable}
          ansible_become: false
          opsctl_probes_venv: {root}/opt/venv
          opsctl_probes_workdir: {root}/var
          opsctl_probes_pip_args: --no-compile   # quicker here; a tray compiles its .pyc files
          opsctl_probes_poll_s: 1
          opsctl_exporter_config_dir: {root}/etc
          opsctl_exporter_unit_dir: {root}/systemd
          opsctl_exporter_systemd: false
          opsctl_exporter_listen: 127.0.0.1
          opsctl_exporter_port: {port}
""")
    (root / "systemd").mkdir()
    # The wheel is built with this Python's setuptools: the test needs no package index for it.
    result = playbook(ansible_env, "deploy.yml", inventory, "-e", "opsctl_wheel_build_isolation=false",
                      "-e", f"opsctl_prometheus_targets={root / 'prometheus-targets.json'}")
    assert result.returncode == 0, result.log
    return DeployedTray(root, inventory, root / "opt" / "venv", root / "var", root / "systemd" / "opsctl-exporter.service",
                        port, result.stdout)


@pytest.mark.slow
def test_deploy_installs_opsctl_into_a_venv_on_the_tray(tray):
    assert (tray.venv / "pyvenv.cfg").is_file()
    found = subprocess.run([tray.venv / "bin" / "python", "-c", "import exporters, opsctl, probes; print(probes.__file__)"],
                           capture_output=True, text=True, cwd=tray.root, timeout=120)
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith(str(tray.venv))  # the tray's own copy, not this checkout
    version = subprocess.run([tray.venv / "bin" / "opsctl", "--version"], capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and "opsctl" in version.stdout
    assert (tray.root / "etc" / "inventory.yaml").read_text() == tray.inventory.read_text()
    assert (tray.root / "etc" / "hgxa-healthy.yaml").is_file()  # the scenario, beside the inventory as in the original
    # Prometheus's file_sd list of the exporters deployed.
    assert json.loads((tray.root / "prometheus-targets.json").read_text()) == [{"targets": [f"hgxa-node:{tray.port}"]}]


@pytest.fixture(scope="module")
def accepted(tray, ansible_env):
    """acceptance.yml on the deployed tray, by a site's criteria: 1 s of load, version site-1.0."""
    criteria = yaml.safe_load((REPO / "opsctl" / "data" / "criteria" / "default.yaml").read_text())
    criteria.update(version="site-1.0", duration_s=1, run_timeout_s=120)
    criteria_file = tray.root / "criteria.yaml"
    criteria_file.write_text(yaml.safe_dump(criteria))
    run_dir = tray.root / "acceptance-run"
    result = playbook(ansible_env, "acceptance.yml", tray.inventory, "-e", f"opsctl_criteria={criteria_file}",
                      "-e", f"opsctl_run_dir={run_dir}")
    return result, run_dir


@pytest.mark.slow
def test_acceptance_yml_accepts_the_deployed_tray_by_the_given_criteria(tray, accepted):
    result, run_dir = accepted
    assert result.returncode == 0, result.log
    fleet = json.loads((run_dir / "fleet-summary.json").read_text())
    assert fleet["kind"] == "accept" and fleet["verdict"] == "PASS" and fleet["exit_code"] == 0
    summary = json.loads((run_dir / "hgxa" / "summary.json").read_text())
    assert summary["kind"] == "accept" and summary["verdict"] == "PASS" and summary["duration_s"] == 1
    assert summary["criteria"]["version"] == "site-1.0" and summary["criteria"]["file"] == str(tray.root / "criteria.yaml")
    fetched = run_dir / "hgxa" / "trays" / "hgxa.json"  # an HGX server's tray is named as the server
    kept = tray.workdir / "results" / "acceptance-run-node.json"  # the tray keeps its own copy
    assert json.loads(fetched.read_text())["format"] == "opsctl-probe/1"
    assert kept.read_bytes() == fetched.read_bytes()
    assert (run_dir / "hgxa" / "report.html").is_file() and (run_dir / "hgxa" / "junit.xml").is_file()


@pytest.mark.slow
def test_the_exporter_unit_verifies_and_its_execstart_serves_the_tray(tray, accepted):
    """The unit's own ExecStart line, started as a plain process (no systemd here), serves the
    tray's GPUs and the acceptance run's burn-in results the tray kept."""
    if shutil.which("systemd-analyze"):
        verify = subprocess.run(["systemd-analyze", "verify", tray.unit], capture_output=True, text=True, timeout=120)
        assert verify.returncode == 0, verify.stderr
    else:
        pytest.fail("systemd-analyze is not installed: run scripts/test, which installs systemd")
    [line] = [line for line in tray.unit.read_text().splitlines() if line.startswith("ExecStart=")]
    argv = shlex.split(line.removeprefix("ExecStart="))
    assert argv[0] == str(tray.venv / "bin" / "opsctl") and argv[argv.index("--port") + 1] == str(tray.port)
    gpus = {str(gpu) for gpu in range(8)}

    def gpus_up(samples):
        return {gpu for (name, gpu, _), value in samples.items() if name == "opsctl_gpu_up" and value == 1}

    def burnin_passed(samples):
        return {gpu for (name, gpu, verdict), value in samples.items()
                if name == "opsctl_gpu_burnin_verdict" and verdict == "pass" and value == 1}

    exporter = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # Each GPU has its own reader, so they come up one by one: the test fails unless all
        # eight are up and show the acceptance run's verdict within the time allowed.
        _scrape_until(f"http://127.0.0.1:{tray.port}/metrics", exporter,
                      lambda s: gpus_up(s) == gpus and burnin_passed(s) == gpus)
    finally:
        exporter.terminate()
        exporter.communicate(timeout=60)


def _scrape_until(url, process, done, timeout=120):
    """Scrape until done({(metric, gpu, verdict): value}) holds; fail the test if it never does."""
    from prometheus_client.parser import text_string_to_metric_families

    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, process.communicate()[1][-2000:]
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                text = response.read().decode()
            samples = {(s.name, s.labels.get("gpu"), s.labels.get("verdict")): s.value
                       for family in text_string_to_metric_families(text) for s in family.samples
                       if s.labels.get("rack") == "hgxa" and s.labels.get("tray") == "node"}
            if done(samples):
                return
        except OSError:
            pass  # not listening yet
        assert time.monotonic() < deadline, "the exporter never served the tray's burn-in"
        time.sleep(0.5)


# --- burnin.yml across a fleet ------------------------------------------------------------------


@pytest.mark.slow
def test_burnin_yml_runs_a_fleet_in_batches_and_a_failing_rack_does_not_stop_it(tray, sshd, ansible_env, tmp_path):
    """Four racks, one batch of three trays then one of two: hgxa healthy (local); hgxb with a bad
    NVLink, over ssh; hgxc unreachable (its ssh host key is not trusted); nvld, two trays of an
    NVL72 whose ct01 is down in the simulator. Every tray that answered is fetched and judged."""
    (tmp_path / "hgxb-bad-link.yaml").write_text(
        "seed: 3\nfaults:\n  - {kind: link_errors, link: gpu3/nvl02, crc_per_s: 180, replay_per_s: 0.8}\n")
    (tmp_path / "nvld-ct01-down.yaml").write_text("seed: 4\nfaults:\n  - {kind: tray_unreachable, tray: ct01}\n")
    known_hosts = sshd.write_known_hosts(tmp_path / "known_hosts", ["127.0.0.2"])
    ssh = (f"ansible_port: {sshd.port}, ansible_user: {sshd.user}, ansible_ssh_private_key_file: {sshd.user_key}, "
           f"ansible_ssh_common_args: '-o UserKnownHostsFile={known_hosts} -o StrictHostKeyChecking=yes', "
           "ansible_ssh_transfer_method: piped")  # the test sshd offers no sftp subsystem

    def tray_vars(host):
        return f"opsctl_probes_workdir: {tmp_path / 'trays' / host}"

    inventory = tmp_path / "fleet.yaml"
    inventory.write_text(f"""all:
  vars:
    opsctl_backend: sim
    opsctl_probes_venv: {tray.venv}
    opsctl_probes_poll_s: 1
    ansible_python_interpreter: {sys.executable}
    ansible_become: false
  children:
    hgxa:
      vars: {{opsctl_model: hgx-h100}}
      hosts:
        hgxa-node: {{ansible_connection: local, {tray_vars('hgxa-node')}}}
    hgxb:
      vars: {{opsctl_model: hgx-h100, opsctl_scenario: hgxb-bad-link.yaml}}
      hosts:
        hgxb-node: {{ansible_host: 127.0.0.2, {ssh}, {tray_vars('hgxb-node')}}}
    hgxc:
      vars: {{opsctl_model: hgx-h100}}
      hosts:
        hgxc-node: {{ansible_host: 127.0.0.3, {ssh}, {tray_vars('hgxc-node')}}}
    nvld:
      vars: {{opsctl_model: gb200-nvl72, opsctl_scenario: nvld-ct01-down.yaml}}
      hosts:
        nvld-ct01: {{ansible_connection: local, {tray_vars('nvld-ct01')}}}
        nvld-ct02: {{ansible_connection: local, {tray_vars('nvld-ct02')}}}
""")
    run_dir = tmp_path / "fleet-run"

    result = playbook(ansible_env, "burnin.yml", inventory, "-e", "opsctl_duration_s=1", "-e", "opsctl_serial=3",
                      "-e", f"opsctl_run_dir={run_dir}", "--forks", "4")

    # The playbook ran to its end, judged the fleet and failed on it; 4 is Ansible's exit code for
    # a run in which a host was unreachable.
    assert result.returncode == 4, result.log
    assert "fleet failed (opsctl report exit 1)" in result.stdout, result.log
    assert result.stdout.count("PLAY [Run the probes on every tray, a batch at a time]") == 2, result.log
    assert re.search(r"hgxc-node +: ok=\d+ +changed=0 +unreachable=1 ", result.stdout), result.log
    fleet = json.loads((run_dir / "fleet-summary.json").read_text())
    racks = {r["rack"]: r for r in fleet["racks"]}
    assert {name: r["verdict"] for name, r in racks.items()} == {
        "hgxa": "PASS", "hgxb": "FAIL", "hgxc": "INCOMPLETE", "nvld": "INCOMPLETE"}
    assert fleet["verdict"] == "FAIL" and fleet["exit_code"] == 1
    # The failing rack names its link, with the reading, the threshold and its source.
    assert racks["hgxb"]["failing"]["links"] == ["hgxb/gpu3/nvl02"]
    crc = [c for c in racks["hgxb"]["checks"] if c["check"] == "nvlink.crc_errors"]
    assert crc and crc[0]["value"] > crc[0]["threshold"] and "DCGM" in crc[0]["source"]
    # The unreachable rack and the tray that was down say why they were not judged a pass.
    assert [t["reason"] for t in racks["hgxc"]["not_reported"]] == [NOT_REACHED]
    down = {t["tray"]: t["reason"] for t in racks["nvld"]["not_reported"]}
    assert "unreachable" in down["nvld/ct01"] and "nvld/ct02" not in down and down["nvld/st9"] == "not in the inventory"
    # Each tray's JSON was fetched into its rack's run directory; each tray kept its own copy.
    # (An HGX server's tray file is named as the server; its probe still calls itself "node".)
    for rack, label, tray_name, host in (("hgxa", "hgxa", "node", "hgxa-node"), ("hgxb", "hgxb", "node", "hgxb-node"),
                                         ("nvld", "ct02", "ct02", "nvld-ct02")):
        fetched = run_dir / rack / "trays" / f"{label}.json"
        assert json.loads(fetched.read_text())["tray"] == tray_name
        assert (tmp_path / "trays" / host / "results" / f"fleet-run-{tray_name}.json").read_bytes() == fetched.read_bytes()
        assert (run_dir / rack / "report.html").is_file() and (run_dir / rack / "junit.xml").is_file()
    assert not (run_dir / "hgxc" / "trays" / "hgxc.json").exists() and not (run_dir / "hgxc" / "trays" / "node.json").exists()


# --- docs/fleet.md's Prometheus configuration -------------------------------------------------

def test_the_fleet_docs_prometheus_rules_and_federation_are_valid(tmp_path):
    """The recording rules and the federation job of docs/fleet.md pass promtool, and every
    metric they name is one the exporter serves."""
    from exporters.metrics import METRICS

    blocks = [yaml.safe_load(block) for block in
              re.findall(r"```yaml\n(.*?)```", (REPO / "docs" / "fleet.md").read_text(), re.S)]
    [rules] = [b for b in blocks if "groups" in b]
    [federation] = [b for b in blocks if any(job["job_name"] == "opsctl-federate" for job in b.get("scrape_configs", []))]
    named = set(re.findall(r"opsctl_[a-z_]+", " ".join(r["expr"] for g in rules["groups"] for r in g["rules"])))
    assert named and named <= set(METRICS), named - set(METRICS)
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed: run scripts/test, which installs Debian's prometheus")
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules))
    (tmp_path / "federate.yml").write_text(yaml.safe_dump(federation))
    for check, name in (("rules", "rules.yml"), ("config", "federate.yml")):
        result = subprocess.run([promtool, "check", check, tmp_path / name], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
