"""Another PostgreSQL client holding ``LOCK TABLE scenarios IN ACCESS EXCLUSIVE MODE`` (what VACUUM FULL, ALTER TABLE
or a DBA's open transaction holds), for the store tests that check reads and writes time out behind it."""

from __future__ import annotations

import contextlib
import threading


@contextlib.contextmanager
def table_locked(url: str, most_s: float = 60.0):
    """Hold the lock from a second connection while the ``with`` body runs; it is released when the body ends,
    or after ``most_s`` seconds at the latest (so a regression fails instead of hanging)."""
    import psycopg

    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        with psycopg.connect(url) as holder:
            holder.execute("LOCK TABLE scenarios IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(most_s)
            holder.rollback()

    th = threading.Thread(target=hold)
    th.start()
    try:
        assert locked.wait(30), "the other client never got the lock"
        yield
    finally:
        release.set()
        th.join(most_s + 30)
