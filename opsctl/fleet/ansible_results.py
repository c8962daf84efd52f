"""What Ansible left for each tray of a rack, turned into the rack's run journal.

For each tray the playbook fetches the probe's JSON to trays/TRAY.json and writes
ansible/TRAY.json: the probe's exit code, the end of its stderr and how long it ran (or, when
the task gave up, Ansible's message). Each is read through the fan-out's own `interpret`, so a
tray ends complete or incomplete by the same rule as under `opsctl burnin`. A tray with no
record was never reached: Ansible could not log in, or its play stopped before the probe ran.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from opsctl.fanout import INCOMPLETE, TrayResult
from opsctl.fanout.runner import interpret
from opsctl.fanout.transport import Completed
from opsctl.fleet.plan import record_file

if TYPE_CHECKING:
    from opsctl.inventory import Rack, Tray
    from opsctl.runs.run_directory import RunDirectory

NOT_REACHED = ("Ansible fetched no result: the tray was unreachable, or its play stopped before the "
               "probe ran (see ansible-playbook's output)")


class _ViaAnsible:
    """The transport as `interpret` and the journal name it."""

    name = "ansible"


def import_records(rack: Rack, run: RunDirectory) -> None:
    """Journal each tray's outcome from its Ansible record, when it says something new."""
    journaled = run.outcomes()
    for tray in rack.trays:
        result = _tray_result(tray, run)
        last = journaled.get(tray.name) or {}
        if (last.get("status"), last.get("exit_code"), last.get("reason")) != (result.status, result.exit_code, result.reason):
            run.save_tray_result(result)


def _tray_result(tray: Tray, run: RunDirectory) -> TrayResult:
    path = record_file(run, tray.name)
    if not path.is_file():
        return _incomplete(tray, NOT_REACHED)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return _incomplete(tray, f"{path.name}: Ansible's record cannot be read: {error}")
    if not isinstance(record, dict):
        return _incomplete(tray, f"{path.name}: Ansible's record is not a JSON object")
    result_file = run.tray_file(tray.name)
    stdout = result_file.read_bytes() if result_file.is_file() else b""
    code = record.get("rc")
    if isinstance(code, int) and not isinstance(code, bool):
        result = interpret(tray, _ViaAnsible, Completed(code, stdout, str(record.get("stderr") or "").encode()))
    else:  # the task timed out or could not start the probe: no exit code
        message = " ".join(str(record.get("msg") or "no exit code").split())
        result = _incomplete(tray, f"the probe did not finish under Ansible: {message}", stdout)
    result.seconds = _seconds(record.get("delta"))
    return result


def _incomplete(tray: Tray, reason: str, stdout: bytes = b"") -> TrayResult:
    return TrayResult(tray=tray.name, host=tray.host, status=INCOMPLETE, exit_code=None, document=None,
                      stdout=stdout, reason=reason, transport=_ViaAnsible.name)


def _seconds(delta: object) -> float:
    """Ansible's `delta` ('0:01:02.345678') in seconds; 0 when absent."""
    try:
        hours, minutes, seconds = str(delta).split(":")
        return int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    except ValueError:
        return 0.0
