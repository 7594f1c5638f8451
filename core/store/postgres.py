"""The scenario store on a PostgreSQL server (a team deployment), through psycopg 3
(``pip install 'moe-planner[postgres]'``); the same interface as :class:`core.store.SQLiteStore`.

The URL is parsed here, not by libpq, so a password pasted with an unencoded ``%``, ``@``, ``/`` or
``:`` still connects, and no message ever shows it: connections get the parts as keywords, and every
message names the server by :func:`redact_url` (``postgresql://user:***@host:5432/db``).

Nothing waits without bound: every transaction, reads included, starts with ``lock_timeout`` set to the
store's busy timeout (``timeout_s``, 2 s) and ``statement_timeout`` to :data:`STATEMENT_TIMEOUT_S`, so a
read stuck behind another client's ``LOCK TABLE ... ACCESS EXCLUSIVE`` (``VACUUM FULL``, ``ALTER TABLE``, a
DBA's open transaction) fails after about 2 s with :class:`StoreBusyError` ("busy ... try again in a
moment"), like a write. They are set per transaction (``set_config(..., true)``), not as connection
options, so they also hold behind a connection pooler such as PgBouncer.
"""

from __future__ import annotations

import contextlib
import re
from urllib.parse import parse_qsl, quote, unquote

from core.store.sql import DEFAULT_TIMEOUT_S, SCHEMA, SQLStoreBase
from core.store.types import StoreBusyError

__all__ = ["PostgresStore", "postgres_connect_args", "redact_url"]

_SCHEMES = ("postgresql", "postgres")
_MIGRATION_LOCK = 727_312_021  # pg_advisory_xact_lock key: one replica migrates at a time
_NEW_ID = "md5(random()::text || clock_timestamp()::text)"
CONNECT_TIMEOUT_S = 10  # reaching the server (the busy timeout, timeout_s, bounds waiting for another writer)
STATEMENT_TIMEOUT_S = 10.0  # any one statement, lock waits included (a lock wait alone ends after timeout_s)
MIGRATION_TIMEOUT_S = 60.0  # the one-off migration may wait for another replica's


def _split(url: str) -> tuple[str, str, str | None, str]:
    """(scheme, user, password or None, host part) of a ``scheme://[user[:password]@]host...`` URL. The
    user information ends at the *last* ``@``, so an unencoded ``@`` in a password stays in the password."""
    if not isinstance(url, str):
        raise ValueError(f"a PostgreSQL URL must be text, not {type(url).__name__}")
    scheme, sep, rest = url.strip().partition("://")
    if not sep or scheme.lower() not in _SCHEMES:
        raise ValueError("a PostgreSQL URL starts with postgresql:// (postgresql://user:password@host:5432/database)")
    at = rest.rfind("@")
    if at < 0:
        return scheme, "", None, rest
    user, colon, password = rest[:at].partition(":")
    return scheme, user, password if colon else None, rest[at + 1 :]


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (the rest kept, to say which server); text that is not
    a PostgreSQL URL comes back as ``<PostgreSQL URL>``, since it might hold a secret in a shape not
    recognised here."""
    try:
        scheme, user, password, host = _split(url)
    except ValueError:
        return "<PostgreSQL URL>"
    host = re.sub(r"(?i)(password=)[^&]*", r"\1***", host)
    if password is None:
        return f"{scheme}://{user}@{host}" if user else f"{scheme}://{host}"
    return f"{scheme}://{user}:***@{host}"


def postgres_connect_args(url: str) -> dict[str, str]:
    """The keyword arguments for ``psycopg.connect`` of a ``postgresql://`` URL: user, password, host(s),
    port(s), dbname and any ``?key=value`` options. Percent escapes are decoded where they are valid and
    kept as typed where not (``p%w`` stays ``p%w``). ValueError (never showing the password) if the URL
    is not one."""
    _, user, password, rest = _split(url)
    hosts, slash, path = rest.partition("/")
    if slash:
        dbname, _, query = path.partition("?")
    else:
        dbname, (hosts, _, query) = "", hosts.partition("?")
    args: dict[str, str] = {}
    if user:
        args["user"] = unquote(user)
    if password is not None:
        args["password"] = unquote(password)
    names, ports = [], []
    for part in filter(None, hosts.split(",")):
        if part.startswith("["):  # [IPv6]:port
            host, _, port = part[1:].partition("]")
            port = port.removeprefix(":")
        else:
            host, _, port = part.rpartition(":") if ":" in part else (part, "", "")
        if port and not port.isdigit():
            raise ValueError(f"the port of a PostgreSQL URL must be a number (host {unquote(host)!r})")
        names.append(unquote(host))
        ports.append(port)
    if names:
        args["host"] = ",".join(names)
    if any(ports):
        args["port"] = ",".join(p or "5432" for p in ports)
    if dbname:
        args["dbname"] = unquote(dbname)
    for key, value in parse_qsl(query, keep_blank_values=True):
        args[key] = value
    return args


class PostgresStore(SQLStoreBase):
    """The same interface on a PostgreSQL server (a team deployment), through psycopg 3. One connection per
    operation; writers take a table lock (readers are not blocked), so every check and write of an
    operation is one step, across sessions and replicas; a lock held past ``timeout_s`` is StoreBusyError;
    parameterised SQL only."""

    _PH = "%s"
    _TIE = "name"
    _LOCK_TABLE = True

    def __init__(
        self, url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S, statement_timeout_s: float = STATEMENT_TIMEOUT_S
    ) -> None:
        try:
            import psycopg
        except ImportError:
            raise ValueError("a postgresql:// store needs psycopg 3: pip install 'psycopg[binary]'") from None
        self._psycopg = psycopg
        self._INTEGRITY = (psycopg.errors.UniqueViolation,)
        self._args = postgres_connect_args(url)
        self.url = redact_url(url)
        password = self._args.get("password") or ""
        forms = {password, quote(password, safe=""), _split(url)[2] or ""}
        self._secrets = sorted((s for s in forms if s), key=len, reverse=True)
        self.timeout_s = float(timeout_s)
        self.statement_timeout_s = max(float(statement_timeout_s), self.timeout_s)
        self._migrate()

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"

    def _redact(self, e: BaseException) -> str:
        text = str(e).strip()
        for s in self._secrets:
            text = text.replace(s, "***")
        return text

    @contextlib.contextmanager
    def _connect(self, lock_timeout_s: float | None = None):
        """A connection in one transaction whose lock waits end after ``lock_timeout_s`` (default: the busy
        timeout) and statements after the statement timeout, either as StoreBusyError."""
        psycopg = self._psycopg
        lock_s = self.timeout_s if lock_timeout_s is None else lock_timeout_s
        statement_s = max(self.statement_timeout_s, lock_s)
        try:
            conn = psycopg.connect(**self._args, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as e:
            raise ValueError(f"cannot reach the PostgreSQL scenario store at {self.url}: {self._redact(e)}") from None
        try:
            with conn.transaction():
                conn.execute(
                    "SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true)",
                    (f"{max(1, round(lock_s * 1000))}ms", f"{max(1, round(statement_s * 1000))}ms"),
                )
                yield conn
        except psycopg.errors.LockNotAvailable:
            raise StoreBusyError(
                f"the scenario store is busy (another writer has held it for more than {lock_s:g} s); "
                "try again in a moment"
            ) from None
        except psycopg.errors.QueryCanceled:
            raise StoreBusyError(
                f"the scenario store is busy (it did not answer within {statement_s:g} s); try again in a moment"
            ) from None
        except psycopg.Error as e:
            raise ValueError(f"the PostgreSQL scenario store at {self.url} failed: {self._redact(e)}") from None
        finally:
            conn.close()

    @contextlib.contextmanager
    def _write(self):
        with self._connect() as conn:
            if self._LOCK_TABLE:  # serialises writers; SELECTs go on
                conn.execute("LOCK TABLE scenarios IN SHARE ROW EXCLUSIVE MODE")
            yield conn

    def _migrate(self) -> None:
        """Create the table, or add id and version to one from before stable ids (once, whichever replica
        comes first); rows that a replica of that release inserts later get an id from the column default.
        A table already up to date is only looked up in the catalog, which never waits on a table lock: a
        server that starts while another client locks the table opens at once (and then says "busy")."""
        with self._connect() as conn:
            if self._up_to_date(conn):
                return
        with self._connect(MIGRATION_TIMEOUT_S) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute(SCHEMA)
            if self._up_to_date(conn):
                return
            conn.execute("ALTER TABLE scenarios ADD COLUMN IF NOT EXISTS id TEXT")
            conn.execute("ALTER TABLE scenarios ADD COLUMN IF NOT EXISTS version INTEGER NOT NULL DEFAULT 1")
            conn.execute(f"ALTER TABLE scenarios ALTER COLUMN id SET DEFAULT {_NEW_ID}")
            conn.execute(f"UPDATE scenarios SET id = {_NEW_ID} WHERE id IS NULL")
            conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS scenarios_id ON scenarios (id)")

    @staticmethod
    def _up_to_date(conn) -> bool:
        """Whether the table exists with an id column that has its default, and a version column (from the
        catalog: no lock on the table itself, unlike information_schema's column_default)."""
        cols = dict(
            conn.execute(
                "SELECT a.attname, a.atthasdef FROM pg_attribute a WHERE a.attrelid = to_regclass('scenarios') "
                "AND a.attnum > 0 AND NOT a.attisdropped"
            ).fetchall()
        )
        return bool(cols.get("id")) and "version" in cols
