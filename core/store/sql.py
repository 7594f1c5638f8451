"""Saved scenarios: the SQL written once for both backends (the interface and records: :mod:`core.store.types`).

Every scenario has a stable ``id`` (32 hex digits, kept across renames) and a ``version`` (1 when saved,
+1 on every rename or save over it). A session addresses what it read by a :class:`ScenarioRef`
(id, version, name): :meth:`SQLStoreBase.save_ref` (save over it), :meth:`~SQLStoreBase.rename_ref`,
:meth:`~SQLStoreBase.delete_ref` and :meth:`~SQLStoreBase.get_ref` refuse, and change nothing, when that
scenario was deleted (:class:`ScenarioGoneError`) or changed (:class:`ScenarioChangedError`, which
carries the reference of what is stored now) since: each write is ``... WHERE id = ? AND version = ?``.
That is optimistic concurrency: nobody locks a scenario while looking at it, a stale click never reaches
another row, and a save over a scenario someone else saved since never discards their change. The
name-based ``save(..., overwrite=True)`` / ``rename`` / ``delete`` / ``get`` stay for scripts and the
command line (each reads and writes in one transaction).

Writers are serialised (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a table lock), so the checks of a write
(the name is free, no look-alike name exists, the version is still the one read) and the write itself
are one step. A writer that cannot get the lock within the store's busy timeout gets
:class:`StoreBusyError` ("try again in a moment"), never a hang.

Pure standard library + pydantic; no Streamlit.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import threading
import uuid
from datetime import UTC, datetime, timedelta

from pydantic import ValidationError

from core._util.validated import describe_validation_error
from core.deployment.specs import Scenario
from core.store.names import confusable_chars, lookup_name, name_key, normalize_name, stored_name_key
from core.store.types import (
    BadRow,
    SavedScenario,
    ScenarioChangedError,
    ScenarioExistsError,
    ScenarioGoneError,
    ScenarioNotFoundError,
    ScenarioRef,
    StoreListing,
)

__all__ = ["COLUMNS", "DEFAULT_TIMEOUT_S", "MAX_MODEL_CONFIG_CHARS", "SCHEMA", "SQLStoreBase"]

MAX_MODEL_CONFIG_CHARS = 1_000_000
DEFAULT_TIMEOUT_S = 2.0  # how long a write waits for another writer before StoreBusyError

# the release before issue 21 had the first five columns; both backends add id and version in place
SCHEMA = """
CREATE TABLE IF NOT EXISTS scenarios (
    name TEXT PRIMARY KEY,
    scenario_json TEXT NOT NULL,
    model_config_json TEXT,
    created_at TEXT,
    updated_at TEXT,
    id TEXT,
    version INTEGER NOT NULL DEFAULT 1
)
"""
COLUMNS = "name, scenario_json, model_config_json, created_at, updated_at, id, version"


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


def _check_ref(ref: object) -> ScenarioRef:
    if not isinstance(ref, ScenarioRef):
        raise ValueError(f"expected a ScenarioRef (id, version, name) from a listing, not {type(ref).__name__}")
    if not isinstance(ref.id, str) or not 1 <= len(ref.id) <= 64:
        raise ValueError("a ScenarioRef's id must be text of 1-64 characters")
    if isinstance(ref.version, bool) or not isinstance(ref.version, int) or ref.version < 0:
        raise ValueError(f"a ScenarioRef's version must be a whole number >= 0, not {ref.version!r}")
    return ref


def _lookup(name: object) -> tuple[str, ValueError | None]:
    """A name to look up: its stored form, or (for a row stored before a name rule refused its name) the
    name as typed with NFC and stripping only, with the rule's error to raise if no such row exists."""
    try:
        return normalize_name(name), None
    except ValueError as e:
        return lookup_name(name), e


def _not_found(name: str, refused: ValueError | None) -> ValueError:
    return refused if refused is not None else ScenarioNotFoundError(f"no saved scenario named {name!r}")


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


class SQLStoreBase:
    """Every operation of :class:`ScenarioStore` on a ``scenarios`` table, written once for both backends;
    a backend supplies ``_connect`` (a read connection), ``_write`` (a write transaction that serialises
    writers and turns a lock wait into StoreBusyError), its placeholder ``_PH`` (``?`` / ``%s``), the
    tie-break of the newest-first order and ``_INTEGRITY``, its unique-violation exceptions."""

    _PH = "?"
    _TIE = "rowid DESC"
    _INTEGRITY: tuple[type[BaseException], ...] = ()

    def _connect(self):  # pragma: no cover - each backend defines it
        raise NotImplementedError

    def _write(self):
        return self._connect()

    @contextlib.contextmanager
    def _unique(self, name: str, hint: str = "choose another name"):
        """A write that the database refuses as a duplicate name (a writer that raced past the table lock)
        says what a refused save says."""
        try:
            yield
        except self._INTEGRITY:
            raise ScenarioExistsError(f"a scenario named {name!r} exists; {hint}") from None

    # reading -------------------------------------------------------------------------------------
    @staticmethod
    def _decode(row: tuple) -> SavedScenario:
        name, scenario_json, model_config_json, created_at, updated_at, sid, version = row
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
            id=sid or "",
            version=version if isinstance(version, int) else 0,
        )

    def _select(self, conn, where: str = "", params: tuple = ()) -> builtins.list[tuple]:
        order = f"ORDER BY COALESCE(updated_at, created_at, '') DESC, {self._TIE}"
        return conn.execute(f"SELECT {COLUMNS} FROM scenarios {where} {order}", params).fetchall()

    def get(self, name: str) -> SavedScenario:
        name, refused = _lookup(name)
        with self._connect() as conn:
            rows = self._select(conn, f"WHERE name = {self._PH}", (name,))
        if not rows:
            raise _not_found(name, refused)
        return self._decode(rows[0])

    def list(self) -> builtins.list[SavedScenario]:
        with self._connect() as conn:
            rows = self._select(conn)
        return [self._decode(r) for r in rows]

    def scan(self) -> StoreListing:
        with self._connect() as conn:
            rows = self._select(conn)
        saved, bad = [], []
        for r in rows:
            try:
                saved.append(self._decode(r))
            except ValueError as e:
                version = r[6] if isinstance(r[6], int) else 0
                bad.append(BadRow(name=str(r[0]), reason=str(e), id=r[5] or "", version=version))
        return StoreListing(saved, bad)

    def get_ref(self, ref: ScenarioRef) -> SavedScenario:
        ref = _check_ref(ref)
        with self._connect() as conn:
            rows = self._select(conn, f"WHERE id = {self._PH}", (ref.id,))
        self._unchanged(ref, (rows[0][0], rows[0][6]) if rows else None)
        return self._decode(rows[0])

    # writing -------------------------------------------------------------------------------------
    @staticmethod
    def _unchanged(
        ref: ScenarioRef, current: tuple | None, hint: str = "reload it and try again", gone_hint: str = ""
    ) -> None:
        """ScenarioGoneError / ScenarioChangedError unless ``current`` (name, version) is what ``ref`` saw."""
        if current is None:
            raise ScenarioGoneError(f"{ref.name!r} was deleted by someone else since you read it{gone_hint}")
        name, version = current
        if version != ref.version:
            what = f"now {name!r}" if name != ref.name else f"saved again by someone else, now version {version}"
            raise ScenarioChangedError(
                f"{ref.name!r} changed since you opened it ({what}): {hint}", ScenarioRef(ref.id, version, name)
            )

    @staticmethod
    def _free(rows: builtins.list[tuple], new: str, own_id: str | None, hint: str) -> None:
        """ScenarioExistsError if another row (id, name) is named ``new`` or a look-alike of it."""
        key = name_key(new)
        for rid, rname in rows:
            if rname == new and rid != own_id:
                raise ScenarioExistsError(f"a scenario named {new!r} exists; {hint}")
        for rid, rname in rows:
            if rid != own_id and rname != new and stored_name_key(rname) == key:
                chars = confusable_chars(new)
                detail = f"; it has {', '.join(chars)}" if chars else ""
                raise ScenarioExistsError(
                    f"{new!r} is too close to the saved scenario {rname!r} (names that differ only in case, width, "
                    f"dashes, spaces or look-alike letters count as the same{detail}); choose another name"
                )

    @staticmethod
    def _encode(scenario: object, model_config_json: object) -> tuple[str, str | None]:
        if not isinstance(scenario, Scenario):
            raise ValueError(f"can only save a Scenario, not {type(scenario).__name__}")
        model_config_json = _check_model_config(model_config_json)
        return json.dumps(scenario.model_dump(mode="json"), sort_keys=True, separators=(",", ":")), model_config_json

    def save(
        self, name: str, scenario: Scenario, *, model_config_json: str | None = None, overwrite: bool = False
    ) -> SavedScenario:
        """Store ``scenario`` under a new ``name``, or with ``overwrite`` over the scenario of that very name
        whatever its version (for scripts: a page saves over what it read with :meth:`save_ref`)."""
        name = normalize_name(name)
        scenario_json, model_config_json = self._encode(scenario, model_config_json)
        ph, now = self._PH, _now()
        hint = "choose another name or overwrite it"
        with self._write() as conn:
            rows = conn.execute("SELECT id, name, version, created_at FROM scenarios").fetchall()
            same = next((r for r in rows if r[1] == name), None)
            if same is None:
                self._free([r[:2] for r in rows], name, None, "choose another name")
                sid = uuid.uuid4().hex
                with self._unique(name, hint):
                    conn.execute(
                        f"INSERT INTO scenarios ({COLUMNS}) VALUES ({ph}, {ph}, {ph}, {ph}, {ph}, {ph}, 1)",
                        (name, scenario_json, model_config_json, now, now, sid),
                    )
                return SavedScenario(name, scenario, model_config_json, now, now, sid, 1)
            if not overwrite:
                raise ScenarioExistsError(f"a scenario named {name!r} exists; {hint}")
            n = conn.execute(  # the version read just above, in this transaction
                f"UPDATE scenarios SET scenario_json = {ph}, model_config_json = {ph}, updated_at = {ph}, "
                f"version = version + 1 WHERE name = {ph} AND version = {ph}",
                (scenario_json, model_config_json, now, name, same[2]),
            ).rowcount
            if n != 1:  # a writer that does not take the lock got there first
                raise ScenarioChangedError(f"{name!r} changed while saving over it: try again")
        return SavedScenario(name, scenario, model_config_json, same[3] or now, now, same[0] or "", same[2] + 1)

    def save_ref(self, ref: ScenarioRef, scenario: Scenario, *, model_config_json: str | None = None) -> SavedScenario:
        """Save ``scenario`` over the scenario ``ref`` names (keeping its id and name), only if it is still at
        the version ``ref`` saw: ``UPDATE ... WHERE id = ? AND version = ?``. ScenarioGoneError if it was
        deleted since, ScenarioChangedError (with ``.current``) if someone renamed or saved over it since;
        either way nothing is written. The saved record, at ``ref.version + 1``."""
        ref = _check_ref(ref)
        scenario_json, model_config_json = self._encode(scenario, model_config_json)
        ph, now = self._PH, _now()
        with self._write() as conn:
            row = conn.execute(f"SELECT name, version, created_at FROM scenarios WHERE id = {ph}", (ref.id,)).fetchone()
            self._unchanged(
                ref,
                (row[0], row[1]) if row else None,
                hint="nothing was saved; open it again to see their change, or save yours under another name",
                gone_hint=": nothing was saved; save again to store yours as a new scenario",
            )
            n = conn.execute(
                f"UPDATE scenarios SET scenario_json = {ph}, model_config_json = {ph}, updated_at = {ph}, "
                f"version = version + 1 WHERE id = {ph} AND version = {ph}",
                (scenario_json, model_config_json, now, ref.id, ref.version),
            ).rowcount
            if n != 1:  # a writer that does not take the lock got there first
                raise ScenarioChangedError(
                    f"{ref.name!r} changed while saving over it: nothing was saved; open it again"
                )
        return SavedScenario(row[0], scenario, model_config_json, row[2] or now, now, ref.id, ref.version + 1)

    def rename(self, old: str, new: str) -> None:
        (old, refused), new = _lookup(old), normalize_name(new)
        ph = self._PH
        with self._write() as conn:
            rows = conn.execute("SELECT id, name FROM scenarios").fetchall()
            current = next((r for r in rows if r[1] == old), None)
            if current is None:
                raise _not_found(old, refused)
            if old == new:
                return
            self._free(rows, new, current[0], "choose another name")
            with self._unique(new):
                conn.execute(
                    f"UPDATE scenarios SET name = {ph}, updated_at = {ph}, version = version + 1 WHERE name = {ph}",
                    (new, _now(), old),
                )

    def delete(self, name: str) -> None:
        name, refused = _lookup(name)
        with self._write() as conn:
            if conn.execute(f"DELETE FROM scenarios WHERE name = {self._PH}", (name,)).rowcount == 0:
                raise _not_found(name, refused)

    def rename_ref(self, ref: ScenarioRef, new: str) -> ScenarioRef:
        ref, new = _check_ref(ref), normalize_name(new)
        ph = self._PH
        with self._write() as conn:
            rows = conn.execute("SELECT id, name, version FROM scenarios").fetchall()
            current = next((r for r in rows if r[0] == ref.id), None)
            self._unchanged(ref, current[1:] if current else None)
            if current[1] == new:
                return ref
            self._free([r[:2] for r in rows], new, ref.id, "choose another name")
            with self._unique(new):
                n = conn.execute(
                    f"UPDATE scenarios SET name = {ph}, updated_at = {ph}, version = version + 1 "
                    f"WHERE id = {ph} AND version = {ph}",
                    (new, _now(), ref.id, ref.version),
                ).rowcount
            if n != 1:  # a writer that does not take the lock got there first
                raise ScenarioChangedError(f"{ref.name!r} changed while renaming it: reload it and try again")
        return ScenarioRef(ref.id, ref.version + 1, new)

    def delete_ref(self, ref: ScenarioRef) -> None:
        ref = _check_ref(ref)
        ph = self._PH
        with self._write() as conn:
            row = conn.execute(f"SELECT name, version FROM scenarios WHERE id = {ph}", (ref.id,)).fetchone()
            self._unchanged(ref, tuple(row) if row else None)
            n = conn.execute(f"DELETE FROM scenarios WHERE id = {ph} AND version = {ph}", (ref.id, ref.version))
            if n.rowcount != 1:
                raise ScenarioChangedError(f"{ref.name!r} changed while deleting it: reload it and try again")
