"""The one way the ledger talks to its database: SQLite (a file, the default) or PostgreSQL
(a server a team shares), behind the same small interface over DB-API.

SQL elsewhere in the ledger is written once, with named parameters (`WHERE rack = :rack`, the
values in a dict). SQLite's driver takes that form as it is. psycopg takes only `%(rack)s`, so for
PostgreSQL the statement goes through SQLAlchemy Core's `text()`, compiled for its psycopg dialect:
the library that already parses `:name` binds (and doubles a literal `%`) does the translation,
not a string replace of ours. Only SQLAlchemy's compiler is used, not its engine or pool: the
connections stay ours, with SQLite's BEGIN IMMEDIATE and busy timeout and PostgreSQL's advisory
lock as below. SQLAlchemy is imported only when a PostgreSQL ledger is opened (it takes about
0.2-0.4 s to load), so the default SQLite ledger and every other command pay nothing for it.

Writers are serialized — SQLite by BEGIN IMMEDIATE (WAL, a busy timeout), PostgreSQL by a
transaction-scoped advisory lock — so two triages recorded at once both land, and a transaction
that fails half-way leaves nothing behind.
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from urllib.parse import quote

from opsctl.errors import IncompleteError, InputError
from opsctl.regular_files import refuse_special_file

DB_ENV = "OPSCTL_DB"
BUSY_TIMEOUT_MS = 30_000
# Any fixed 64-bit number: every opsctl writer on a PostgreSQL ledger takes this lock.
_PG_WRITE_LOCK = 7_301_952_218


def default_db_path() -> Path:
    """$XDG_STATE_HOME/opsctl/ledger.sqlite, else ~/.local/state/opsctl/ledger.sqlite."""
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "opsctl" / "ledger.sqlite"


def ledger_url(option: str | None = None) -> str:
    """--db, else $OPSCTL_DB, else the SQLite file under the user's state dir."""
    return option or os.environ.get(DB_ENV) or f"sqlite:///{default_db_path()}"


# libpq takes a secret in the URL's userinfo (postgresql://u:S@h/db; it ends the userinfo at the
# first '@' before the path, so a '?' or a space may be in S), as a query parameter (?password=S,
# ?sslpassword=S — the passphrase of the client certificate's key) and in its keyword form
# (host=h password=S sslpassword='a b'). It percent-decodes a query's keys (pass%77ord is password).
# So: the whole userinfo after its ':' is masked, and every parameter whose key, decoded, ends in
# "password"; a query parameter's value ends at '&', a keyword's at white space.
_USERINFO_PASSWORD = re.compile(r"\b([a-z][a-z0-9+.-]*://[^/?#@:\s\"]*):[^/\n\"]*@", re.IGNORECASE)
_PARAMETER = re.compile(r"(?<![\w%.-])([\w%.-]+)\s*=\s*('(?:[^'\\]|\\.)*'|[^&\s]*)")
_REST_OF_WORD = re.compile(r"\S*")


def _secret_parameters(url: str) -> list[tuple[int, int, int, bool]]:
    """(start of the key, start of the value, end of the value, in a URL's query) of every
    parameter of `url` that holds a password, in order."""
    found = []
    for match in _PARAMETER.finditer(url):
        if not unquote(match.group(1)).lower().endswith("password"):
            continue
        in_query = match.start() > 0 and url[match.start() - 1] in "?&"
        end = match.end()
        if not in_query:  # a keyword's value ends at white space only ('password=a&b')
            end = _REST_OF_WORD.match(url, end).end()  # type: ignore[union-attr]  # \S* always matches
        found.append((match.start(), match.start(2), end, in_query))
    return found


def redacted(url: str, mask: str = "***") -> str:
    """The URL with its passwords, in whichever form each is given, replaced by `mask`: fit to print."""
    url = _USERINFO_PASSWORD.sub(lambda m: f"{m.group(1)}:{mask}@", url, count=1)
    for _, value, end, _ in reversed(_secret_parameters(url)):
        url = url[:value] + mask + url[end:]
    return url


def without_password(url: str) -> str:
    """The URL with no password at all: what a hint may print for the user to paste, the
    password then coming from PGPASSWORD or ~/.pgpass as libpq reads them."""
    url = _USERINFO_PASSWORD.sub(lambda m: f"{m.group(1)}@", url, count=1)
    for key, _, end, in_query in reversed(_secret_parameters(url)):
        if in_query:  # '?a=1&password=S&b=2' -> '?a=1&b=2'
            end += url[end:end + 1] == "&"
        else:  # 'host=h password=S dbname=l' -> 'host=h dbname=l'
            key = len(url[:key].rstrip())
        url = url[:key] + url[end:]
    return url.rstrip("?&")


Row = dict[str, Any]
Params = Mapping[str, Any]


class Transaction:
    """A cursor inside one transaction; rows come back as dicts. Statements take named
    parameters (`:name`); `prepare` turns one into what the driver runs, with its values."""

    def __init__(self, cursor: Any, prepare: Callable[[str, Params], tuple[str, Params]]):
        self._cursor = cursor
        self._prepare = prepare

    def execute(self, sql: str, params: Params | None = None) -> Transaction:
        self._cursor.execute(*self._prepare(sql, params or {}))
        return self

    def rows(self, sql: str, params: Params | None = None) -> list[Row]:
        self.execute(sql, params)
        names = [column[0] for column in self._cursor.description]
        return [dict(zip(names, row)) for row in self._cursor.fetchall()]

    def row(self, sql: str, params: Params | None = None) -> Row | None:
        rows = self.rows(sql, params)
        return rows[0] if rows else None

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)


def _as_written(sql: str, params: Params) -> tuple[str, Params]:
    """SQLite's driver binds `:name` parameters from a dict itself."""
    return sql, params


@lru_cache(maxsize=512)
def _postgres_statement(sql: str) -> Any:
    """`sql` compiled by SQLAlchemy for psycopg: `:name` binds as `%(name)s`, a literal % doubled."""
    from sqlalchemy import text
    from sqlalchemy.dialects.postgresql.psycopg import dialect

    return text(sql).compile(dialect=dialect())


def _for_psycopg(sql: str, params: Params) -> tuple[str, Params]:
    compiled = _postgres_statement(sql)
    return compiled.string, compiled.construct_params(dict(params))


class SqliteDatabase:
    dialect = "sqlite"

    def __init__(self, url: str, path: str | Path, *, read_only: bool = False, make_folders: bool = False) -> None:
        """`read_only`: the file must exist (a read never creates a ledger). `make_folders`: create
        missing parent folders — only for the default ledger in the state dir; an explicit --db in
        a folder that does not exist is more likely a typo than a wish for a new folder."""
        self.url = url
        self.path = Path(path).expanduser()
        refuse_special_file(self.path, "keeps a ledger only in a regular file (check --db)")  # not SQLite's I/O error
        created = False
        try:
            if read_only:
                if not self.path.exists():
                    raise InputError(f"no ledger at {self.path}; record something first or check --db")
                if self.path.is_dir():
                    raise InputError(f"cannot open the ledger {self.path}: it is a folder, not a file (check --db)")
                os.close(os.open(self.path, os.O_RDWR))  # the OS says why not (permission denied, …)
            else:
                if make_folders:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                elif not self.path.parent.exists():
                    raise InputError(f"cannot create the ledger {self.path}: no folder {self.path.parent} "
                                     "(create it first, or check --db)")
                created = not self.path.exists()
                os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644))
            # mode=rw: sqlite must not create the file itself (a read-only open of a missing ledger).
            uri = f"file:{quote(str(self.path.resolve()))}?mode=rw"
            # isolation_level=None: we say BEGIN ourselves, so writes can BEGIN IMMEDIATE.
            self._connection = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self._connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if read_only and not self.has_ledger():  # before WAL: a read leaves a stranger's file as it was
                self._connection.close()
                raise InputError(f"no ledger at {self.path} (the file holds no opsctl ledger); "
                                 "record something first or check --db")
            self._connection.execute("PRAGMA journal_mode = WAL")  # readers never block the writer
            self._connection.execute("PRAGMA foreign_keys = ON")  # as PostgreSQL always does
        except OSError as exc:
            why = exc.strerror or str(exc)
            if exc.errno == errno.ENOENT and self.path.parent.is_dir():
                why = f"{self.path.parent} takes no new files ({why})"  # /proc, /sys
            raise InputError(f"cannot {'open' if read_only else 'create'} the ledger {self.path}: {why}") from None
        except sqlite3.Error as exc:
            if created and self.path.is_file() and self.path.stat().st_size == 0:
                self.path.unlink()  # nothing of ours is left behind
            if isinstance(exc, sqlite3.OperationalError) and ("full" in str(exc) or "I/O" in str(exc)):
                raise IncompleteError(f"cannot open the ledger {self.path}: {exc}") from None  # the disk's, not the input's
            raise InputError(f"cannot open the ledger {self.path}: {exc}") from None

    def has_ledger(self) -> bool:
        with self.transaction() as tx:
            return tx.row("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") is not None

    @property
    def where(self) -> str:
        return str(self.path)

    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[Transaction]:
        with driver_errors(self.where, sqlite3.Error, sqlite3.IntegrityError):
            yield from self._transaction(write)

    def _transaction(self, write: bool) -> Iterator[Transaction]:
        cursor = self._connection.cursor()
        try:
            # IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so two
            # writers queue instead of one failing when it upgrades a read lock.
            cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.OperationalError as exc:
            cursor.close()
            if "locked" in str(exc) or "busy" in str(exc):
                raise IncompleteError(self._locked_message()) from None
            raise
        try:
            yield Transaction(cursor, _as_written)
        except BaseException:
            if self._connection.in_transaction:
                try:
                    cursor.execute("ROLLBACK")
                except sqlite3.Error:  # a disk that failed the write may fail this too: SQLite rolls back on close
                    pass
            raise
        else:
            cursor.execute("COMMIT")
        finally:
            cursor.close()

    def close(self) -> None:
        self._connection.close()

    def _locked_message(self) -> str:
        holders = ", ".join(lock_holders([self.path, Path(f"{self.path}-shm"), Path(f"{self.path}-wal")])) or "another process"
        return (f"the ledger {self.path} has been locked by {holders} for over {BUSY_TIMEOUT_MS // 1000} s; "
                "nothing was written: retry when it is done")


def lock_holders(paths: list[Path]) -> list[str]:
    """'pid 4242 (opsctl ledger import …)' for every other process holding a POSIX lock on one of
    the files (SQLite locks with fcntl); Linux's /proc/locks says who. Empty where it cannot tell."""
    inodes: set[tuple[int, int, int]] = set()
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            continue
        inodes.add((os.major(stat.st_dev), os.minor(stat.st_dev), stat.st_ino))
    holders: list[int] = []
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] not in ("POSIX", "OFDLCK") or fields[4] == "-1":
            continue
        major, minor, inode = fields[5].split(":")
        if (int(major, 16), int(minor, 16), int(inode)) in inodes and int(fields[4]) != os.getpid():
            holders.append(int(fields[4]))
    return [f"pid {pid} ({_command_line(pid)})" for pid in sorted(set(holders))]


def _command_line(pid: int) -> str:
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(w.decode(errors="replace") for w in words if w)
    return redacted(text[:120])


class PostgresDatabase:
    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        import psycopg  # only a PostgreSQL ledger needs the driver loaded

        self.url = url
        try:
            self._connection = psycopg.connect(url, connect_timeout=10)
        except psycopg.ProgrammingError as exc:  # an option libpq does not take (sslmode=bogus): bad input
            raise InputError(f"ledger URL {redacted(url)!r}: {_reason(exc)}") from None
        except psycopg.Error as exc:
            raise IncompleteError(f"cannot reach the ledger database {redacted(url)}: {_reason(exc)}") from None

    def has_ledger(self) -> bool:
        with self.transaction() as tx:
            found = tx.row("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
            return bool(found and found["present"])

    @property
    def where(self) -> str:
        return redacted(self.url)

    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[Transaction]:
        import psycopg

        with driver_errors(self.where, psycopg.Error, psycopg.IntegrityError), self._connection.transaction():
            with self._connection.cursor() as cursor:
                transaction = Transaction(cursor, _for_psycopg)
                if write:
                    transaction.execute("SELECT pg_advisory_xact_lock(:lock)", {"lock": _PG_WRITE_LOCK})
                yield transaction

    def close(self) -> None:
        self._connection.close()


def sqlite_path(url: str) -> str:
    """The file a sqlite: URL names. sqlite:///var/x.sqlite and sqlite:////var/x.sqlite (SQLAlchemy's
    spelling of an absolute path) both name /var/x.sqlite; sqlite:///~/x.sqlite is in the home folder."""
    path = url[len("sqlite:"):]
    if path.startswith("//"):
        path = path[2:]  # the empty host of sqlite://
    if path.startswith("/~"):
        path = path[1:]
    elif path.startswith("//"):
        path = "/" + path.lstrip("/")
    return path


def check_url(url: str) -> str:
    """Refuse a ledger URL that can never work (a scheme we do not speak, no file), before any work."""
    scheme = url.split(":", 1)[0].lower() if "://" in url else ""
    if not scheme and _KEYWORD_FORM.match(url):
        scheme = "postgresql"  # libpq's keyword form: host=db1 dbname=ledger
    if scheme in ("postgresql", "postgres"):
        _check_postgres_url(url)
        return scheme
    if scheme == "sqlite":
        path = sqlite_path(url)
        if not path.strip("/"):
            raise InputError(f"ledger URL {redacted(url)!r} names no file (sqlite:///path/to/ledger.sqlite)")
        return scheme
    if scheme:
        raise InputError(f"ledger URL {redacted(url)!r}: unsupported scheme {scheme!r} (sqlite:///FILE or postgresql://…)")
    if not url.strip():
        raise InputError("empty ledger URL (sqlite:///FILE, a path, or postgresql://…)")
    return scheme


_KEYWORD_FORM = re.compile(r"\s*[a-z_]+\s*=", re.IGNORECASE)


def _check_postgres_url(url: str) -> None:
    """Parse a PostgreSQL URL as libpq does, without connecting: a malformed one is bad input."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    authority = url.split("://", 1)[1].split("/", 1)[0] if "://" in url else ""
    if authority.count("@") > 1:  # libpq ends the password at the first '@': the rest would be the host, and printed
        raise InputError(f"ledger URL {redacted(url)!r}: an '@' in the user name or password must be written %40")
    try:
        parameters = conninfo_to_dict(url)
    except ProgrammingError as exc:
        raise InputError(f"ledger URL {redacted(url)!r} is malformed: {_reason(exc)}") from None
    port = str(parameters.get("port", "5432"))
    if not all(p.strip().isascii() and p.strip().isdigit() for p in port.split(",")):
        raise InputError(f"ledger URL {redacted(url)!r}: port {redacted(port)!r} is not a number")


@contextmanager
def driver_errors(where: str, errors: type[Exception], contradictions: type[Exception]) -> Iterator[None]:
    """A database error inside a transaction as opsctl's own, in one line naming the ledger:
    a write the schema refuses (two open repairs of one part) or text no database can hold (a
    lone UTF-16 surrogate) is bad input (2); a full disk, an I/O error or a lost server is
    incomplete (3). The transaction is rolled back either way: nothing was written."""
    try:
        yield
    except contradictions as exc:
        raise InputError(f"the ledger {where} refused the write, which contradicts what it holds: {_reason(exc)}; "
                         "nothing was written") from None
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end] if isinstance(exc.object, str) else ""
        raise InputError(f"the ledger {where} cannot store text with {ascii(bad)} in it ({exc.reason}: not "
                         "valid UTF-8); nothing was written") from None
    except errors as exc:
        if "file is not a database" in str(exc):  # SQLite's word for a file that is something else: bad input
            raise InputError(f"cannot open the ledger {where}: {_reason(exc)}") from None
        raise IncompleteError(f"the ledger {where}: {_reason(exc)}; nothing was written") from None
    except OSError as exc:
        raise IncompleteError(f"the ledger {where}: {exc.strerror or exc}; nothing was written") from None


def _reason(exc: BaseException) -> str:
    """A driver's error as one line, any password it quotes masked."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return redacted(" ".join(lines) if lines else type(exc).__name__)


def connect(url: str | None = None, *, read_only: bool = False) -> SqliteDatabase | PostgresDatabase:
    """The database a ledger URL names: sqlite:///path (or a plain path) or postgresql://…

    `read_only`: for a command that only reads; a SQLite file that is not there is an input error,
    never a new empty ledger. Writers create the file; only the default ledger gets its folders made.
    """
    explicit = bool(url or os.environ.get(DB_ENV))
    url = ledger_url(url)
    scheme = check_url(url)
    if scheme in ("postgresql", "postgres"):
        return PostgresDatabase(url)
    path = sqlite_path(url) if scheme == "sqlite" else url
    if not scheme:
        url = f"sqlite:///{Path(url).expanduser().resolve()}"
    return SqliteDatabase(url, path, read_only=read_only, make_folders=not explicit)
