"""Saved scenarios: the store every page and the command line use, and its SQLite backend.

The pages talk to a :class:`ScenarioStore` only (the interface, records and errors are in
:mod:`core.store.types`, the SQL both backends share in :mod:`core.store.sql`, the name rules in
:mod:`core.store.names`), so a team deployment can plug PostgreSQL (:mod:`core.store.postgres`) behind
the same methods. Every name keeps working as ``core.store.<name>``. :class:`SQLiteStore` keeps everything in one file
(default ``~/.moe-planner/scenarios.db``) so saved scenarios survive a server restart. It opens a new
connection for each operation (Streamlit runs sessions in threads, and a sqlite3 connection must not be
shared between them), runs the database in WAL journal mode (readers never wait for a writer) and waits
at most ``timeout_s`` (2 s by default) for the write lock: concurrent saves from several threads and
processes all land, and a writer held up longer gets :class:`StoreBusyError` ("try again"). Every
statement is parameterised: a name is only ever data.

A file written by the release before stable ids is migrated in place on first use (two columns added,
ids assigned); a copy of that release still writing to the same file keeps working, and its new rows get
an id from a trigger.

Pure standard library + pydantic; no Streamlit.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from core.store.names import MAX_NAME_CHARS, name_key, normalize_name
from core.store.sql import COLUMNS, DEFAULT_TIMEOUT_S, MAX_MODEL_CONFIG_CHARS, SCHEMA, SQLStoreBase
from core.store.types import (
    BadRow,
    SavedScenario,
    ScenarioChangedError,
    ScenarioExistsError,
    ScenarioGoneError,
    ScenarioNotFoundError,
    ScenarioRef,
    ScenarioStore,
    StoreBusyError,
    StoreListing,
)

__all__ = [
    "COLUMNS",
    "DEFAULT_DB_PATH",
    "DEFAULT_TIMEOUT_S",
    "ENV_VAR",
    "MAX_MODEL_CONFIG_CHARS",
    "MAX_NAME_CHARS",
    "SCHEMA",
    "BadRow",
    "SQLStoreBase",
    "SQLiteStore",
    "SavedScenario",
    "ScenarioChangedError",
    "ScenarioExistsError",
    "ScenarioGoneError",
    "ScenarioNotFoundError",
    "ScenarioRef",
    "ScenarioStore",
    "StoreBusyError",
    "StoreListing",
    "name_key",
    "normalize_name",
    "open_store",
]

ENV_VAR = "PLANNER_DB"
DEFAULT_DB_PATH = Path("~/.moe-planner/scenarios.db")

# the in-place migration of a file from before stable ids, and what keeps rows of that release addressable
_MIGRATION = (
    "UPDATE scenarios SET id = lower(hex(randomblob(16))) WHERE id IS NULL",
    "CREATE UNIQUE INDEX IF NOT EXISTS scenarios_id ON scenarios (id)",
    "CREATE TRIGGER IF NOT EXISTS scenarios_new_id AFTER INSERT ON scenarios WHEN NEW.id IS NULL BEGIN "
    "UPDATE scenarios SET id = lower(hex(randomblob(16))) WHERE rowid = NEW.rowid; END",
)


def _busy(e: sqlite3.Error) -> bool:
    text = str(e).lower()
    return "locked" in text or "busy" in text


class SQLiteStore(SQLStoreBase):
    """:class:`ScenarioStore` on one SQLite file (WAL mode, a short busy timeout, a connection per call)."""

    _INTEGRITY = (sqlite3.IntegrityError,)

    def __init__(self, path: str | os.PathLike[str], *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        text = os.fspath(path)
        if not text or text == ":memory:" or text.startswith("file:"):
            raise ValueError(
                f"SQLiteStore needs a file path (got {text!r}); an in-memory database would not survive "
                "a restart nor be shared between sessions"
            )
        self.path = Path(text).expanduser()
        self.timeout_s = float(timeout_s)
        self._ready = False
        self._init_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    def _busy_error(self) -> StoreBusyError:
        return StoreBusyError(
            f"the scenario store is busy (another writer has held it for more than {self.timeout_s:g} s); "
            "try again in a moment"
        )

    # connections -------------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        # isolation_level=None: autocommit; multi-statement work uses explicit BEGIN IMMEDIATE
        conn = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
        return conn

    @staticmethod
    def _schema_ok(conn: sqlite3.Connection) -> bool:
        cols = {r[1] for r in conn.execute("PRAGMA table_info(scenarios)")}
        found = conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('scenarios_id', 'scenarios_new_id')"
        ).fetchone()[0]
        return {"id", "version"} <= cols and found == 2

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        """Create the table, or bring one from before stable ids up to date (inside BEGIN IMMEDIATE)."""
        conn.execute(SCHEMA)
        cols = {r[1] for r in conn.execute("PRAGMA table_info(scenarios)")}
        if "id" not in cols:
            conn.execute("ALTER TABLE scenarios ADD COLUMN id TEXT")
        if "version" not in cols:
            conn.execute("ALTER TABLE scenarios ADD COLUMN version INTEGER NOT NULL DEFAULT 1")
        for statement in _MIGRATION:
            conn.execute(statement)

    def _init(self) -> None:
        """Create the folder, switch the file to WAL and create or migrate the table, once per instance.

        Switching to WAL needs a moment of exclusive access, and SQLite reports "database is locked"
        at once rather than waiting on its busy timeout when other processes race to set up the same
        new file; so that step retries with a short back-off until ``timeout_s``. A file already set up
        is only read here, so opening a store never waits for a writer.
        """
        with self._init_lock:
            if self._ready:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            deadline = time.monotonic() + self.timeout_s
            delay = 0.005
            while True:
                conn = None
                try:
                    conn = self._open()
                    mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
                    if mode != "wal":
                        mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
                    if mode != "wal":
                        raise ValueError(f"could not switch {self.path} to WAL journal mode (got {mode!r})")
                    if not self._schema_ok(conn):
                        conn.execute("BEGIN IMMEDIATE")
                        try:
                            self._migrate(conn)
                        except BaseException:
                            conn.execute("ROLLBACK")
                            raise
                        conn.execute("COMMIT")
                    break
                except sqlite3.OperationalError as e:
                    if not _busy(e):
                        raise ValueError(f"cannot use {self.path} as a scenario store: {e}") from e
                    if time.monotonic() >= deadline:
                        raise self._busy_error() from None
                except sqlite3.DatabaseError as e:
                    raise ValueError(f"cannot use {self.path} as a scenario store: {e}") from e
                finally:
                    if conn is not None:
                        conn.close()
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
            self._ready = True

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if not self._ready:
            self._init()
        try:
            conn = self._open()
        except sqlite3.Error as e:
            raise ValueError(f"cannot open the scenario store {self.path}: {e}") from None
        try:
            conn.execute("PRAGMA synchronous = NORMAL")  # safe in WAL mode
            yield conn
        except sqlite3.OperationalError as e:
            if _busy(e):
                raise self._busy_error() from None
            raise ValueError(f"the scenario store {self.path} failed: {e}") from None
        except sqlite3.DatabaseError as e:
            raise ValueError(f"the scenario store {self.path} failed: {e}") from None
        finally:
            conn.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the write lock up front (waiting up to the busy timeout, then
        StoreBusyError), so two writers never deadlock upgrading a read lock."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")


# -- choosing a backend ----------------------------------------------------------------------------


def _sqlite_path(url: str) -> str:
    """``sqlite:///relative.db``, ``sqlite:////abs/path.db`` (SQLAlchemy's form) or a plain path."""
    if "://" not in url:
        return url
    scheme, _, rest = url.partition("://")
    if scheme.lower() != "sqlite":
        raise ValueError(
            f"unsupported scenario store URL scheme {scheme!r}: use a file path, sqlite:///path or "
            f"postgresql://user@host:port/database"
        )
    if not rest.startswith("/") or not rest[1:]:
        raise ValueError("a SQLite URL needs a file path: sqlite:///path (three slashes, then the path)")
    return rest[1:]


def open_store(url: str | None = None) -> ScenarioStore:
    """The store at ``url``, else at ``$PLANNER_DB``, else at ``~/.moe-planner/scenarios.db``.

    ``url`` is a file path, ``sqlite:///path`` or ``postgresql://user:password@host:port/db`` (a team
    deployment; needs psycopg 3). Any other scheme raises ValueError. No message ever shows a password.
    """
    if url is None or not str(url).strip():
        url = os.environ.get(ENV_VAR, "").strip() or str(DEFAULT_DB_PATH)
    url = str(url).strip()
    if url.lower().startswith(("postgresql://", "postgres://")):
        from core.store.postgres import PostgresStore

        return PostgresStore(url)
    return SQLiteStore(_sqlite_path(url))
