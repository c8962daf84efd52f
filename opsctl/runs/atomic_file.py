"""Writing a file so that a reader, or a crash, sees the old file or the new one — never half.

Write to a temporary file in the same folder, flush it to disk, then rename it over the
target (a rename within one file system is atomic on POSIX). The temporary file is created
as open() creates a file — mode 0666 less the umask — not 0600 as tempfile.mkstemp makes it:
a run's reports are for the vendor and CI to read, and the rename keeps the mode.

The rename replaces whatever the path names, so a path that names anything but a regular file
(a device such as /dev/null, a FIFO, a socket, a folder, or a link to one) is refused first:
renaming over /dev/null would replace the device for the whole machine (opsctl/regular_files.py).
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path
from typing import Any

from opsctl.errors import IncompleteError
from opsctl.regular_files import check_replaceable
from probes import json_lines

_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class DiskFullError(IncompleteError):
    """No space (or quota) left where opsctl writes: the work is incomplete, exit 3."""


def raise_if_disk_full(error: BaseException, path: str | Path) -> None:
    """Turn ENOSPC or EDQUOT while writing `path` into one line that names the folder that is full."""
    code = getattr(error, "errno", None)
    if code in _DISK_FULL:
        raise DiskFullError(f"{Path(path).parent}: no space left ({os.strerror(code)}) writing {Path(path).name}; "
                            "free some space and run again") from None


def write_bytes_atomic(path: str | Path, data: bytes, make_folders: bool = True) -> None:
    """Replace `path` with `data`; `make_folders=False` when a missing folder is the caller's
    mistake (a typo in `-o`) rather than a folder of ours to make."""
    path = Path(path)
    check_replaceable(path)
    if make_folders:
        path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = _create_temporary(path)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        temporary.unlink(missing_ok=True)
        raise_if_disk_full(error, path)
        raise
    _sync_folder(path.parent)


def write_json_atomic(path: str | Path, document: Any, make_folders: bool = True) -> None:
    write_bytes_atomic(path, (json_lines.dumps(document) + "\n").encode(), make_folders)


def _create_temporary(path: Path) -> tuple[int, Path]:
    # O_EXCL with a random name, as mkstemp does, but with the mode open() would give: the
    # kernel applies the umask, so no process-wide umask has to be read (and briefly changed).
    for _ in range(100):
        temporary = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temporary name for {path.name}")


def _sync_folder(folder: Path) -> None:
    # The rename itself is on disk only once the folder is.
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
