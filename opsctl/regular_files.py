"""Files opened as what they are: opsctl reads only regular files and replaces only regular files.

A path an operator types may name anything: a FIFO (reading it waits for a writer that never
comes), a device (/dev/zero and /dev/urandom never end, and stat says they hold 0 bytes), a
socket, a folder, or a link to any of them. So

- an input is refused unless it is a regular file once links are followed: it is stat'ed (which
  never blocks), then opened with O_NONBLOCK (a FIFO swapped in between cannot block the open)
  and fstat'ed (what was opened is what is read); and at most `max_bytes` + 1 bytes are read, so
  the cap holds for what is read, whatever stat says (a /proc file says 0);
- an output is refused unless it is a regular file, a path not there yet, or (for a folder of
  outputs) a folder: the atomic writer renames over what the path names, and renaming a file over
  /dev/null replaces the device machine-wide. The click types check at option parsing, before
  any work; the atomic writer checks again, just before it renames.

Each refusal is one InputError line (exit 2) naming the path, what it is, and the bound.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import click

from opsctl.errors import InputError

# Documents opsctl wrote itself (a burn-in summary, a snapshot, a ledger export) are read with
# this cap when their reader has none of its own: a rack's summary is ~3 MB, a fleet's ledger
# export a few tens of MB; a file larger than this is not one opsctl wrote.
MAX_DOCUMENT_BYTES = 256 * 2**20
_READ_CHUNK = 1 << 20
READS, REPLACES = "reads only regular files", "replaces only regular files"


def kind_of_mode(mode: int) -> str:
    """'a FIFO', 'a character device'… — what a path is, as a message says it."""
    for test, kind in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "an unknown kind of file"


def size_text(count: int) -> str:
    """4194304 -> '4 MiB'; a cap as a message says it."""
    if count >= 2**20 and count % 2**20 == 0:
        return f"{count // 2**20} MiB"
    return f"{count:,} bytes"


def _named(path: str | os.PathLike[str]) -> str:
    """The path as a refusal names it, with where a link leads: 'x.yaml (a link to /dev/zero)'."""
    try:
        if os.path.islink(path):
            return f"{path} (a link to {os.path.realpath(path)})"
    except OSError:
        pass
    return str(path)


def _not_regular(path: str | os.PathLike[str], mode: int, rule: str) -> InputError:
    return InputError(f"{_named(path)}: is {kind_of_mode(mode)}, not a regular file; opsctl {rule}")


# --- reading -----------------------------------------------------------------------------------
def read_regular_bytes(path: str | os.PathLike[str], max_bytes: int | None = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of the regular file at `path` (links followed), at most `max_bytes`; anything
    else — missing, a folder, a FIFO, a device, a socket, over the cap, unreadable — is an
    InputError in one line. Never blocks on a FIFO, never reads more than `max_bytes` + 1."""
    try:
        mode = os.stat(path).st_mode  # never blocks, whatever the path is
    except FileNotFoundError:
        raise InputError(f"{_named(path)}: no such file") from None
    except OSError as error:
        raise InputError(f"{_named(path)}: cannot read: {error.strerror or error}") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{_named(path)}: is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise _not_regular(path, mode, READS)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise InputError(f"{_named(path)}: cannot read: {error.strerror or error}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):  # swapped for something else between the stat and the open
            raise _not_regular(path, status.st_mode, READS)
        limit = None if max_bytes is None else max_bytes + 1
        chunks: list[bytes] = []
        total = 0
        # The whole file in one read where its size is known (a fleet's rack snapshots: one copy,
        # not a join of chunks), then on in chunks if it grew.
        want = max(status.st_size + 1, _READ_CHUNK)
        while limit is None or total < limit:
            chunk = os.read(descriptor, want if limit is None else min(want, limit - total))
            want = _READ_CHUNK
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as error:
        raise InputError(f"{_named(path)}: cannot read: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
    if max_bytes is not None and total > max_bytes:
        raise InputError(f"{_named(path)}: more than {size_text(max_bytes)}; at most {size_text(max_bytes)} is read")
    return b"".join(chunks)


def read_regular_text(path: str | os.PathLike[str], max_bytes: int | None = MAX_DOCUMENT_BYTES) -> str:
    """read_regular_bytes, as UTF-8 text; text that is not UTF-8 is an InputError naming the byte."""
    return utf8_text(read_regular_bytes(path, max_bytes), path)


def utf8_text(data: bytes, path: str | os.PathLike[str]) -> str:
    """A file's bytes as UTF-8 text; bytes that are not UTF-8 are an InputError naming the byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{_named(path)}: cannot read: not UTF-8 text ({error.reason} at byte {error.start:,})") from None


# --- writing -----------------------------------------------------------------------------------
def check_replaceable(path: str | Path, rule: str = REPLACES) -> None:
    """Refuse an output path that names anything but a regular file (or nothing yet): a folder, a
    FIFO, a device, a socket, or a link to one. A link to a regular file is replaced, as ever.
    `rule` says what opsctl does with such files, for the message."""
    mode = _mode(path)
    if mode is not None and stat.S_ISDIR(mode):
        raise InputError(f"{_named(path)}: Is a directory; opsctl writes a file here and {rule}")
    refuse_special_file(path, rule, mode)


def refuse_special_file(path: str | Path, rule: str, mode: int | None = None) -> None:
    """Refuse a path that names a FIFO, a device or a socket (or a link to one); a folder, a
    regular file or nothing yet is left to the caller."""
    mode = _mode(path) if mode is None else mode
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise _not_regular(path, mode, rule)


def _mode(path: str | Path) -> int | None:
    try:
        return os.stat(path).st_mode
    except OSError:
        return None  # nothing there (a new file), or unreadable (a /proc path): the write itself says why


def check_folder(path: str | Path) -> None:
    """Refuse a folder of outputs that names anything but a folder (or nothing yet)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISDIR(mode):
        raise InputError(f"{_named(path)}: is {kind_of_mode(mode)}, not a folder; opsctl writes a folder of files here")


# --- click types: the same checks at option parsing, before any work ------------------------------
class InputFile(click.Path):
    """A file option opsctl reads: refused at parsing unless a regular file (links followed).
    A missing one is left to its reader, which says 'no such file' as ever."""

    def __init__(self, dir_okay: bool = False) -> None:
        super().__init__(dir_okay=dir_okay)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        value = super().convert(value, param, ctx)
        try:
            mode = os.stat(value).st_mode
        except OSError:
            return value
        if not (stat.S_ISREG(mode) or (self.dir_okay and stat.S_ISDIR(mode))):
            self.fail(str(_not_regular(value, mode, READS)), param, ctx)
        return value


class OutputFile(click.Path):
    """A file option opsctl writes (atomically, by rename): refused at parsing unless a regular
    file or a path not there yet."""

    def __init__(self, writable: bool = False) -> None:
        super().__init__(dir_okay=False, writable=writable)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        value = super().convert(value, param, ctx)  # a folder: click's own words, as ever
        try:
            check_replaceable(value)
        except InputError as error:
            self.fail(str(error), param, ctx)
        return value


class OutputFolder(click.Path):
    """A folder option opsctl writes files into: refused at parsing unless a folder or not there yet."""

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        value = super().convert(value, param, ctx)  # a regular file: click's own words, as ever
        try:
            check_folder(value)
        except InputError as error:
            self.fail(str(error), param, ctx)
        return value
