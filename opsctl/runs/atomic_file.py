"""Writing a file so that a reader, or a crash, sees the old file or the new one — never half.

Write to a temporary file in the same folder, flush it to disk, then rename it over the
target (a rename within one file system is atomic on POSIX).
"""

import json
import os
import tempfile
from pathlib import Path


def write_bytes_atomic(path, data):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def write_json_atomic(path, document):
    write_bytes_atomic(path, (json.dumps(document, indent=1, default=str) + "\n").encode())


def _sync_folder(folder):
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
