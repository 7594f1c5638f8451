"""The scenario store on a PostgreSQL server (a team deployment), through psycopg 3
(``pip install 'moe-planner[postgres]'``); the same interface as :class:`core.store.SQLiteStore`."""

from __future__ import annotations

import contextlib

from core.specs import Scenario
from core.store import (
    COLUMNS,
    DEFAULT_TIMEOUT_S,
    SCHEMA,
    SavedScenario,
    ScenarioExistsError,
    SQLStoreBase,
)

__all__ = ["PostgresStore"]


class PostgresStore(SQLStoreBase):
    """The same interface on a PostgreSQL server (a team deployment), through psycopg 3
    (``pip install 'moe-planner[postgres]'``). One connection per operation; saves take a row lock,
    so concurrent saves from several sessions or replicas all land; parameterised SQL only."""

    def __init__(self, url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        try:
            import psycopg
        except ImportError:
            raise ValueError("a postgresql:// store needs psycopg 3: pip install 'psycopg[binary]'") from None
        self._psycopg = psycopg
        self.url = url
        self.timeout_s = timeout_s
        with self._connect() as conn:
            conn.execute(SCHEMA)

    _PH = "%s"
    _LOCK = " FOR UPDATE"
    _TIE = "name"

    def __repr__(self) -> str:
        return "PostgresStore(<url>)"

    @contextlib.contextmanager
    def _connect(self):
        try:
            conn = self._psycopg.connect(self.url, connect_timeout=max(1, int(self.timeout_s)))
        except self._psycopg.Error as e:
            raise ValueError(f"cannot reach the PostgreSQL scenario store: {e}") from None
        try:
            with conn.transaction():
                yield conn
        finally:
            conn.close()

    def save(
        self, name: str, scenario: Scenario, *, model_config_json: str | None = None, overwrite: bool = False
    ) -> SavedScenario:
        name, scenario_json, model_config_json, now = self._prepare(name, scenario, model_config_json)
        with self._connect() as conn:
            inserted = conn.execute(
                f"INSERT INTO scenarios ({COLUMNS}) VALUES (%s, %s, %s, %s, %s) ON CONFLICT (name) DO NOTHING",
                (name, scenario_json, model_config_json, now, now),
            ).rowcount
            if inserted:
                return SavedScenario(name, scenario, model_config_json, now, now)
            if not overwrite:
                raise ScenarioExistsError(f"a scenario named {name!r} exists; choose another name or overwrite it")
            row = conn.execute("SELECT created_at FROM scenarios WHERE name = %s FOR UPDATE", (name,)).fetchone()
            conn.execute(
                "UPDATE scenarios SET scenario_json = %s, model_config_json = %s, updated_at = %s WHERE name = %s",
                (scenario_json, model_config_json, now, name),
            )
        return SavedScenario(name, scenario, model_config_json, (row[0] if row else None) or now, now)
