"""What `opsctl exporter rules -o` and `opsctl ledger stats --plot` write goes through the one
atomic writer (opsctl/runs/atomic_file.py): a write that fails half-way leaves the file that was
there whole (issue 15). The failure is the kernel's own: the command runs under a file-size
limit (RLIMIT_FSIZE) smaller than what it writes, as a disk that fills up mid-write would."""

import json
import os
import resource
import signal
import subprocess
import sys

import pytest

RULES_LIMIT_BYTES = 512
PLOT_LIMIT_BYTES = 8192


def run_with_file_size_limit(args, cwd, limit_bytes):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing us
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", "opsctl", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd, preexec_fn=limit)


def test_a_rule_file_that_cannot_be_written_leaves_the_old_one_whole(opsctl, tmp_path):
    rules = tmp_path / "rules"
    assert opsctl("exporter", "rules", "-o", rules).code == 0
    before = {path.name: path.read_bytes() for path in rules.iterdir()}
    assert max(len(text) for text in before.values()) > RULES_LIMIT_BYTES  # the limit cuts a write short
    result = run_with_file_size_limit(["exporter", "rules", "-o", rules, "--runbook-base", "https://example.com/ops"],
                                      tmp_path, RULES_LIMIT_BYTES)
    assert result.returncode == 2 and "cannot write rule files" in result.stderr and len(result.stderr.splitlines()) == 1
    assert {path.name: path.read_bytes() for path in rules.iterdir()} == before  # no temporary left, nothing cut


@pytest.mark.slow
def test_a_plot_that_cannot_be_written_leaves_the_old_one_whole(opsctl, tmp_path):
    from opsctl.errors import InputError
    from opsctl.ledger.plot import plot_failures

    db = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    plot = tmp_path / "failures.png"
    assert opsctl("ledger", "incident", "rack07/ct03/gpu2", "--at", "2026-11-02T03:00:00Z", "--db", db).code == 0
    result = opsctl("ledger", "stats", "--db", db, "--plot", plot, "--json")
    assert result.code == 0
    stats, before = json.loads(result.out), plot.read_bytes()
    assert len(before) > PLOT_LIMIT_BYTES
    # The ledger's SQLite needs more room than the limit to be read: the plot is drawn in a child
    # process under the limit from the stats read here.
    child = os.fork()
    if child == 0:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (PLOT_LIMIT_BYTES, PLOT_LIMIT_BYTES))
        try:
            plot_failures(stats, plot)
        except InputError as error:
            os._exit(2 if "--plot" in str(error) else 1)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 2  # refused in one line, as the command says it
    assert plot.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["failures.png", "ledger.sqlite"]
