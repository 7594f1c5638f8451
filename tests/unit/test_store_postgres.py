"""The scenario store on a real PostgreSQL server, started for these tests in a temporary folder.

Needs PostgreSQL's server binaries (Debian package ``postgresql``; ``make test`` installs it when run
as root). Without them the tests skip with a notice, except under CI=true (the ``pg_url`` fixture,
tests/conftest.py).
"""

import threading
import time

import pytest

from core.deployment.specs import Scenario
from core.store import ScenarioChangedError, ScenarioExistsError, StoreBusyError, open_store
from core.store.postgres import PostgresStore
from tests.pg_lock import table_locked
from tests.unit.test_store import OLD_SCHEMA, PLAIN, RICH, hostile_names, lost_update, stale_operations


def test_round_trip_rename_delete(pg_url):
    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    s = Scenario(model_id="mixtral-8x7b", gpu_id="h100-sxm", num_nodes=2)
    store.save("pg-a", s, model_config_json='{"model_type": "mixtral"}')
    got = store.get("pg-a")
    assert got.scenario == s and got.model_config_json == '{"model_type": "mixtral"}'
    with pytest.raises(ScenarioExistsError):
        store.save("pg-a", s)
    store.save("pg-a", Scenario(), overwrite=True)
    assert store.get("pg-a").scenario == Scenario()
    evil = "x'); DROP TABLE scenarios; --"
    store.save(evil, s)
    assert store.get(evil).name == evil
    store.rename(evil, "pg-b")
    assert {x.name for x in store.list()} >= {"pg-a", "pg-b"}
    store.delete("pg-b")
    assert "pg-b" not in {x.name for x in store.list()}
    # a new store object on the same server sees it: it survives a restart of the app
    assert PostgresStore(pg_url).get("pg-a").scenario == Scenario()


def test_concurrent_saves_all_land(pg_url):
    store = PostgresStore(pg_url)
    errors = []

    def worker(t):
        try:
            for i in range(10):
                store.save(f"t{t}-{i}", Scenario(num_nodes=1 + i))
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    names = {x.name for x in store.list()}
    assert all(f"t{t}-{i}" in names for t in range(8) for i in range(10))


# -- issue 21 ----------------------------------------------------------------------------------------


def _database(pg_url: str, name: str) -> str:
    """A fresh, empty database on the test server; its URL."""
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return pg_url.rsplit("/", 1)[0] + "/" + name


def test_a_stale_delete_or_rename_says_so_and_changes_nothing(pg_url):
    url = _database(pg_url, "stale")
    stale_operations(PostgresStore(url), PostgresStore(url))


def _rename_race(store, rounds: int, sessions: int) -> list[str]:
    """``sessions`` threads at a time rename their own scenario onto one new name; what each got."""
    outcomes: list[str] = []
    for r in range(rounds):
        for i in range(sessions):
            store.save(f"race {r}-{i}", Scenario())
        start = threading.Barrier(sessions)

        def work(i: int, r: int = r, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                store.rename(f"race {r}-{i}", f"target {r}")
                outcomes.append("renamed")
            except ScenarioExistsError as e:
                outcomes.append(str(e).replace(f"target {r}", "target"))
            except Exception as e:
                outcomes.append(repr(e))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(sessions)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
    return outcomes


def test_concurrent_renames_onto_one_name_say_it_exists(pg_url):
    # 8 sessions x 8 rounds: one rename wins each round, the other 7 are told the name is taken
    # (before the fix, psycopg's UniqueViolation escaped in about 9% of such tries)
    outcomes = _rename_race(PostgresStore(_database(pg_url, "race")), rounds=8, sessions=8)
    assert outcomes.count("renamed") == 8
    assert sorted(set(outcomes) - {"renamed"}) == ["a scenario named 'target' exists; choose another name"]
    assert len(outcomes) == 64


def test_a_unique_violation_from_a_writer_without_the_table_lock_is_scenario_exists(pg_url, monkeypatch):
    """The table lock serialises this app's writers; a writer that does not take it (a replica of the previous
    release during a rolling upgrade) can still race a rename onto a name: the database's UniqueViolation says
    the usual thing. Made deterministic: the other writer holds its uncommitted rename until ours waits on it."""
    import psycopg

    monkeypatch.setattr(PostgresStore, "_LOCK_TABLE", False)  # as that release behaves
    url = _database(pg_url, "nolock")
    store = PostgresStore(url, timeout_s=60)
    store.save("a", PLAIN)
    store.save("b", PLAIN)
    other = psycopg.connect(url)
    other.execute("UPDATE scenarios SET name = 'target' WHERE name = 'a'")  # not yet committed
    outcome: list[str] = []

    def rename() -> None:
        try:
            store.rename("b", "target")  # does not see 'target' yet, then waits on the other's row
            outcome.append("renamed")
        except Exception as e:
            outcome.append(f"{type(e).__name__}: {e}")

    th = threading.Thread(target=rename)
    th.start()
    with psycopg.connect(url, autocommit=True) as watch:
        deadline = time.monotonic() + 30
        waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = 'nolock' AND wait_event_type = 'Lock'"
        while not watch.execute(waiting).fetchone()[0]:  # a condition, polled: our UPDATE is waiting
            assert time.monotonic() < deadline, "the rename never waited on the other writer"
    other.commit()
    other.close()
    th.join(30)
    assert outcome == ["ScenarioExistsError: a scenario named 'target' exists; choose another name"]
    assert sorted(s.name for s in store.list()) == ["b", "target"]


def test_a_password_with_percent_and_at_connects_and_never_shows(pg_url):
    port = pg_url.rsplit(":", 1)[1].split("/")[0]
    secret = "s3cr%t@pa55"  # unencoded % and @, as people paste them
    store = open_store(f"postgresql://postgres:{secret}@127.0.0.1:{port}/postgres")  # trust auth: any password
    assert store.save("pw", PLAIN).name == "pw" and store.get("pw").scenario == PLAIN
    assert "s3cr" not in repr(store)
    with pytest.raises(ValueError) as info:
        open_store(f"postgresql://nobody:{secret}@127.0.0.1:{port}/postgres")  # no such role
    message = str(info.value)
    assert 'role "nobody" does not exist' in message and "postgresql://nobody:***@127.0.0.1" in message
    assert "s3cr" not in message and "pa55" not in message


def test_an_old_table_is_migrated_in_place(pg_url):
    import psycopg

    url = _database(pg_url, "legacy")
    with psycopg.connect(url) as conn:
        conn.execute(OLD_SCHEMA)
        conn.execute(
            "INSERT INTO scenarios VALUES (%s, %s, NULL, %s, %s)",
            ("legacy", RICH.model_dump_json(), "2025-01-01T00:00:00+00:00", "2025-01-01T00:00:00+00:00"),
        )
    store = PostgresStore(url)
    (got,) = store.list()
    assert got.name == "legacy" and got.scenario == RICH and len(got.id) == 32 and got.version == 1
    assert [s.id for s in PostgresStore(url).list()] == [got.id]  # a second replica migrates nothing twice
    with psycopg.connect(url) as conn:  # a replica of the previous release writes five columns
        conn.execute(
            "INSERT INTO scenarios (name, scenario_json) VALUES (%s, %s)", ("from old app", PLAIN.model_dump_json())
        )
    late = store.get("from old app")
    assert len(late.id) == 32 and late.version == 1 and late.id != got.id
    assert store.rename_ref(got.ref, "legacy 2").version == 2
    with pytest.raises(ScenarioChangedError):
        store.delete_ref(got.ref)


def test_a_writer_held_up_past_the_timeout_is_a_busy_message(pg_url):
    import psycopg

    url = _database(pg_url, "busy")
    store = PostgresStore(url, timeout_s=0.3)
    store.save("kept", PLAIN)
    with psycopg.connect(url) as other:  # another writer holds the writers' lock
        other.execute("LOCK TABLE scenarios IN SHARE ROW EXCLUSIVE MODE")
        t0 = time.perf_counter()
        with pytest.raises(StoreBusyError, match=r"the scenario store is busy \(another writer has held it for more"):
            store.save("new", PLAIN)
        assert 0.25 <= time.perf_counter() - t0 < 5
        assert [s.name for s in store.list()] == ["kept"]  # reading goes on
    assert store.save("new", PLAIN).name == "new"  # the retry


# -- issue 37 ----------------------------------------------------------------------------------------


def test_a_save_over_a_scenario_someone_saved_since_is_refused(pg_url):
    url = _database(pg_url, "lost")
    lost_update(PostgresStore(url), PostgresStore(url))


def test_invisible_and_blank_names_are_refused_and_old_ones_still_work(pg_url):
    import psycopg

    url = _database(pg_url, "names")

    def insert_raw(name: str) -> None:
        with psycopg.connect(url) as conn:  # as a replica of the previous release inserts
            conn.execute("INSERT INTO scenarios (name, scenario_json) VALUES (%s, %s)", (name, PLAIN.model_dump_json()))

    hostile_names(PostgresStore(url), insert_raw)


def test_a_read_behind_a_table_lock_is_a_busy_message_after_the_busy_timeout(pg_url):
    """UX-1: what VACUUM FULL, ALTER TABLE or a DBA's open transaction holds; reads used to wait for it (58 s)."""

    url = _database(pg_url, "readlock")
    store = PostgresStore(url)  # the default busy timeout, 2 s
    ref = store.save("kept", PLAIN).ref
    with table_locked(url, most_s=20):
        t0 = time.monotonic()
        fresh = PostgresStore(url)  # a server starting meanwhile: its check of the table reads the catalog only
        assert time.monotonic() - t0 < 1.5
        for read in (store.scan, store.list, lambda: store.get("kept"), lambda: store.get_ref(ref), fresh.scan):
            t0 = time.monotonic()
            with pytest.raises(StoreBusyError) as info:
                read()
            waited = time.monotonic() - t0
            assert 1.9 <= waited < 6, waited  # the busy timeout, then a message; not until the lock goes
            assert str(info.value) == (
                "the scenario store is busy (another writer has held it for more than 2 s); try again in a moment"
            )
        t0 = time.monotonic()
        with pytest.raises(StoreBusyError):
            store.save("new", PLAIN)  # and a write, as before
        assert 1.9 <= time.monotonic() - t0 < 6
    assert [s.name for s in store.scan().saved] == ["kept"]  # the lock gone, the same store reads at once
