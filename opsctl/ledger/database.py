"""The one way the ledger talks to its database: SQLite (a file, the default) or PostgreSQL
(a server a team shares), behind the same small interface over DB-API.

SQL elsewhere in the ledger is written once, portably, with `?` placeholders; the dialect
turns them into what the driver wants. Writers are serialized — SQLite by BEGIN IMMEDIATE
(WAL, a busy timeout), PostgreSQL by a transaction-scoped advisory lock — so two triages
recorded at once both land, and a transaction that fails half-way leaves nothing behind.
"""

import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from opsctl.errors import IncompleteError, InputError

DB_ENV = "OPSCTL_DB"
BUSY_TIMEOUT_MS = 30_000
# Any fixed 64-bit number: every opsctl writer on a PostgreSQL ledger takes this lock.
_PG_WRITE_LOCK = 7_301_952_218


def default_db_path():
    """$XDG_STATE_HOME/opsctl/ledger.sqlite, else ~/.local/state/opsctl/ledger.sqlite."""
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "opsctl" / "ledger.sqlite"


def ledger_url(option=None):
    """--db, else $OPSCTL_DB, else the SQLite file under the user's state dir."""
    return option or os.environ.get(DB_ENV) or f"sqlite:///{default_db_path()}"


def redacted(url):
    """The URL without its password, fit to print."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


class Transaction:
    """A cursor inside one transaction; rows come back as dicts."""

    def __init__(self, cursor, placeholder):
        self._cursor = cursor
        self._placeholder = placeholder

    def execute(self, sql, params=()):
        if self._placeholder != "?":
            sql = sql.replace("?", self._placeholder)
        self._cursor.execute(sql, tuple(params))
        return self

    def rows(self, sql, params=()):
        self.execute(sql, params)
        names = [column[0] for column in self._cursor.description]
        return [dict(zip(names, row)) for row in self._cursor.fetchall()]

    def row(self, sql, params=()):
        rows = self.rows(sql, params)
        return rows[0] if rows else None

    @property
    def rowcount(self):
        return self._cursor.rowcount


class SqliteDatabase:
    dialect = "sqlite"

    def __init__(self, url, path):
        self.url = url
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: we say BEGIN ourselves, so writes can BEGIN IMMEDIATE.
            self._connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self._connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._connection.execute("PRAGMA journal_mode = WAL")  # readers never block the writer
            self._connection.execute("PRAGMA foreign_keys = ON")  # as PostgreSQL always does
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"cannot open the ledger {self.path}: {exc}") from None

    @contextmanager
    def transaction(self, write=False):
        cursor = self._connection.cursor()
        # IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so two
        # writers queue instead of one failing when it upgrades a read lock.
        cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield Transaction(cursor, "?")
        except BaseException:
            if self._connection.in_transaction:
                cursor.execute("ROLLBACK")
            raise
        else:
            cursor.execute("COMMIT")
        finally:
            cursor.close()

    def close(self):
        self._connection.close()


class PostgresDatabase:
    dialect = "postgresql"

    def __init__(self, url):
        import psycopg  # only a PostgreSQL ledger needs the driver loaded

        self.url = url
        try:
            self._connection = psycopg.connect(url, connect_timeout=10)
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise IncompleteError(f"cannot reach the ledger database {redacted(url)}: {reason}") from None

    @contextmanager
    def transaction(self, write=False):
        with self._connection.transaction():
            with self._connection.cursor() as cursor:
                if write:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_WRITE_LOCK,))
                yield Transaction(cursor, "%s")

    def close(self):
        self._connection.close()


def connect(url=None):
    """The database a ledger URL names: sqlite:///path (or a plain path) or postgresql://…"""
    url = ledger_url(url)
    scheme = url.split(":", 1)[0].lower() if "://" in url else ""
    if scheme in ("postgresql", "postgres"):
        return PostgresDatabase(url)
    if scheme == "sqlite":
        path = url[len("sqlite://"):]
        if not path or path == "/":
            raise InputError(f"ledger URL {url!r} names no file (sqlite:///path/to/ledger.sqlite)")
        return SqliteDatabase(url, path)
    if scheme:
        raise InputError(f"ledger URL {redacted(url)!r}: unsupported scheme {scheme!r} (sqlite:///FILE or postgresql://…)")
    return SqliteDatabase(f"sqlite:///{Path(url).resolve()}", url)
