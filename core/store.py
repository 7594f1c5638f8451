"""Saved scenarios: a small storage interface and its SQLite backend.

The pages talk to a :class:`ScenarioStore` only, so a team deployment can later plug another
backend (a shared SQL server, an object store) behind the same five methods. :class:`SQLiteStore`
keeps everything in one file (default ``~/.moe-planner/scenarios.db``) so saved scenarios survive a
server restart. It opens a new connection for each operation (Streamlit runs sessions in threads,
and a sqlite3 connection must not be shared between them), runs the database in WAL journal mode
and waits up to ``timeout_s`` for the write lock, so concurrent saves from several threads and
processes all land. Every statement is parameterised: a name is only ever data.

Pure standard library + pydantic; no Streamlit.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import ValidationError

from core.specs import Scenario, describe_validation_error

__all__ = [
    "COLUMNS",
    "DEFAULT_DB_PATH",
    "DEFAULT_TIMEOUT_S",
    "ENV_VAR",
    "MAX_MODEL_CONFIG_CHARS",
    "MAX_NAME_CHARS",
    "SCHEMA",
    "SQLStoreBase",
    "SQLiteStore",
    "SavedScenario",
    "ScenarioExistsError",
    "ScenarioNotFoundError",
    "ScenarioStore",
    "normalize_name",
    "open_store",
]

ENV_VAR = "PLANNER_DB"
DEFAULT_DB_PATH = Path("~/.moe-planner/scenarios.db")
MAX_NAME_CHARS = 100
MAX_MODEL_CONFIG_CHARS = 1_000_000
DEFAULT_TIMEOUT_S = 10.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS scenarios (
    name TEXT PRIMARY KEY,
    scenario_json TEXT NOT NULL,
    model_config_json TEXT,
    created_at TEXT,
    updated_at TEXT
)
"""
COLUMNS = "name, scenario_json, model_config_json, created_at, updated_at"


class ScenarioExistsError(ValueError):
    """Saving (or renaming onto) a name that is already taken, without overwrite."""


class ScenarioNotFoundError(ValueError, KeyError):
    """No scenario of that name. A ValueError (like every other store error) that is also a
    KeyError, for callers that treat the store as a mapping."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "scenario not found"


@dataclass(frozen=True)
class SavedScenario:
    """One saved scenario. Timestamps are ISO 8601 in UTC, e.g. ``2025-01-31T12:00:00.123456+00:00``."""

    name: str
    scenario: Scenario
    model_config_json: str | None
    created_at: str
    updated_at: str


@runtime_checkable
class ScenarioStore(Protocol):
    """Where named scenarios live. Names are stripped of surrounding whitespace before use."""

    def save(
        self,
        name: str,
        scenario: Scenario,
        *,
        model_config_json: str | None = None,
        overwrite: bool = False,
    ) -> SavedScenario:
        """Store ``scenario`` under ``name``; ValueError if the name exists and not ``overwrite``."""
        ...

    def get(self, name: str) -> SavedScenario:
        """The scenario saved as ``name``; ScenarioNotFoundError (a ValueError) if there is none."""
        ...

    def list(self) -> builtins.list[SavedScenario]:
        """Every saved scenario, most recently saved first."""
        ...

    def rename(self, old: str, new: str) -> None:
        """Rename ``old`` to ``new``; ValueError if ``old`` is missing or ``new`` is taken."""
        ...

    def delete(self, name: str) -> None:
        """Remove ``name``; ScenarioNotFoundError (a ValueError) if there is none."""
        ...


# -- validation ------------------------------------------------------------------------------------


def normalize_name(name: object) -> str:
    """The name as stored: stripped, 1-100 characters, no control characters."""
    if not isinstance(name, str):
        raise ValueError(f"a scenario name must be text, not {type(name).__name__}")
    cleaned = name.strip()
    if not cleaned:
        raise ValueError("a scenario name cannot be empty")
    if len(cleaned) > MAX_NAME_CHARS:
        raise ValueError(f"a scenario name can have at most {MAX_NAME_CHARS} characters (this one has {len(cleaned)})")
    bad = sorted({c for c in cleaned if unicodedata.category(c) in ("Cc", "Cs")})
    if bad:
        shown = ", ".join(f"U+{ord(c):04X}" for c in bad)
        raise ValueError(f"a scenario name cannot contain control characters ({shown})")
    return cleaned


def _check_model_config(text: object) -> str | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f"model_config_json must be text or None, not {type(text).__name__}")
    if len(text) > MAX_MODEL_CONFIG_CHARS:
        raise ValueError(
            f"model_config_json can have at most {MAX_MODEL_CONFIG_CHARS:,} characters (this one has {len(text):,})"
        )
    return text


_clock_lock = threading.Lock()
_last_stamp: datetime | None = None


def _now() -> str:
    """ISO 8601 UTC with microseconds, strictly increasing within this process (so "newest first"
    holds for saves closer together than the clock's resolution)."""
    global _last_stamp
    with _clock_lock:
        t = datetime.now(UTC)
        if _last_stamp is not None and t <= _last_stamp:
            t = _last_stamp + timedelta(microseconds=1)
        _last_stamp = t
    return t.isoformat(timespec="microseconds")


# -- what both SQL backends share ----------------------------------------------------------------


class SQLStoreBase:
    """get / list / rename / delete and the row codec on a ``scenarios`` table, written once for both
    backends; a backend supplies ``_connect`` (read), ``_write`` (a write transaction), its placeholder
    ``_PH`` (``?`` / ``%s``), the row lock it can take and the tie-break of the newest-first order."""

    _PH = "?"
    _LOCK = ""
    _TIE = "rowid DESC"

    def _connect(self):  # pragma: no cover - each backend defines it
        raise NotImplementedError

    def _write(self):
        return self._connect()

    @staticmethod
    def _row(row: tuple) -> SavedScenario:
        name, scenario_json, model_config_json, created_at, updated_at = row
        try:
            scenario = Scenario.model_validate(json.loads(scenario_json))
        except (TypeError, json.JSONDecodeError) as e:
            raise ValueError(f"saved scenario {name!r} is corrupt: its JSON does not parse ({e})") from e
        except ValidationError as e:
            raise ValueError(
                f"saved scenario {name!r} is corrupt or from an incompatible version: {describe_validation_error(e)}"
            ) from e
        return SavedScenario(
            name=name,
            scenario=scenario,
            model_config_json=model_config_json,
            created_at=created_at or "",
            updated_at=updated_at or created_at or "",
        )

    @staticmethod
    def _prepare(name: str, scenario: Scenario, model_config_json: str | None) -> tuple[str, str, str | None, str]:
        """(normalised name, scenario JSON, checked model config, timestamp) of a save, validated."""
        name = normalize_name(name)
        if not isinstance(scenario, Scenario):
            raise ValueError(f"can only save a Scenario, not {type(scenario).__name__}")
        model_config_json = _check_model_config(model_config_json)
        scenario_json = json.dumps(scenario.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return name, scenario_json, model_config_json, _now()

    def get(self, name: str) -> SavedScenario:
        name = normalize_name(name)
        with self._connect() as conn:
            row = conn.execute(f"SELECT {COLUMNS} FROM scenarios WHERE name = {self._PH}", (name,)).fetchone()
        if row is None:
            raise ScenarioNotFoundError(f"no saved scenario named {name!r}")
        return self._row(row)

    def list(self) -> builtins.list[SavedScenario]:
        with self._connect() as conn:
            rows = conn.execute(f"SELECT {COLUMNS} FROM scenarios ORDER BY updated_at DESC, {self._TIE}").fetchall()
        return [self._row(r) for r in rows]

    def rename(self, old: str, new: str) -> None:
        old, new = normalize_name(old), normalize_name(new)
        ph = self._PH
        with self._write() as conn:
            if conn.execute(f"SELECT 1 FROM scenarios WHERE name = {ph}{self._LOCK}", (old,)).fetchone() is None:
                raise ScenarioNotFoundError(f"no saved scenario named {old!r}")
            if old == new:
                return
            if conn.execute(f"SELECT 1 FROM scenarios WHERE name = {ph}", (new,)).fetchone() is not None:
                raise ScenarioExistsError(f"a scenario named {new!r} exists; choose another name")
            conn.execute(f"UPDATE scenarios SET name = {ph}, updated_at = {ph} WHERE name = {ph}", (new, _now(), old))

    def delete(self, name: str) -> None:
        name = normalize_name(name)
        with self._write() as conn:
            if conn.execute(f"DELETE FROM scenarios WHERE name = {self._PH}", (name,)).rowcount == 0:
                raise ScenarioNotFoundError(f"no saved scenario named {name!r}")


# -- SQLite backend --------------------------------------------------------------------------------


class SQLiteStore(SQLStoreBase):
    """:class:`ScenarioStore` on one SQLite file (WAL mode, busy timeout, a connection per call)."""

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

    # connections -------------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        # isolation_level=None: autocommit; multi-statement work uses explicit BEGIN IMMEDIATE
        conn = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
        return conn

    def _init(self) -> None:
        """Create the folder, switch the file to WAL and create the table, once per instance.

        Switching to WAL needs a moment of exclusive access, and SQLite reports "database is locked"
        at once rather than waiting on its busy timeout when other processes race to set up the same
        new file; so that step retries with a short back-off until ``timeout_s``.
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
                    conn.execute(SCHEMA)
                    break
                except sqlite3.OperationalError as e:
                    busy = "locked" in str(e) or "busy" in str(e)
                    if not busy or time.monotonic() >= deadline:
                        raise ValueError(f"cannot use {self.path} as a scenario store: {e}") from e
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
        conn = self._open()
        try:
            conn.execute("PRAGMA synchronous = NORMAL")  # safe in WAL mode
            yield conn
        finally:
            conn.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the write lock up front (waiting up to the busy timeout),
        so two writers never deadlock upgrading a read lock."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # the interface -----------------------------------------------------------------------------
    def save(
        self,
        name: str,
        scenario: Scenario,
        *,
        model_config_json: str | None = None,
        overwrite: bool = False,
    ) -> SavedScenario:
        name, scenario_json, model_config_json, now = self._prepare(name, scenario, model_config_json)
        with self._write() as conn:
            row = conn.execute("SELECT created_at FROM scenarios WHERE name = ?", (name,)).fetchone()
            if row is not None and not overwrite:
                raise ScenarioExistsError(f"a scenario named {name!r} exists; choose another name or overwrite it")
            if row is None:
                created = now
                conn.execute(
                    f"INSERT INTO scenarios ({COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                    (name, scenario_json, model_config_json, created, now),
                )
            else:
                created = row[0] or now
                conn.execute(
                    "UPDATE scenarios SET scenario_json = ?, model_config_json = ?, updated_at = ? WHERE name = ?",
                    (scenario_json, model_config_json, now, name),
                )
        return SavedScenario(name, scenario, model_config_json, created, now)


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
        raise ValueError(f"a SQLite URL needs a file path: sqlite:///path (got {url!r})")
    return rest[1:]


def open_store(url: str | None = None) -> ScenarioStore:
    """The store at ``url``, else at ``$PLANNER_DB``, else at ``~/.moe-planner/scenarios.db``.

    ``url`` is a file path, ``sqlite:///path`` or ``postgresql://user@host:port/db`` (a team deployment;
    needs psycopg 3). Any other scheme raises ValueError.
    """
    if url is None or not str(url).strip():
        url = os.environ.get(ENV_VAR, "").strip() or str(DEFAULT_DB_PATH)
    url = str(url).strip()
    if url.lower().startswith(("postgresql://", "postgres://")):
        from core.store_postgres import PostgresStore

        return PostgresStore(url)
    return SQLiteStore(_sqlite_path(url))
