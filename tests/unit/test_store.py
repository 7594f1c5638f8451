"""core.store: saved scenarios that survive a restart and concurrent saves."""

from __future__ import annotations

import contextlib
import multiprocessing
import re
import sqlite3
import threading
import time
from datetime import UTC, datetime

import pytest

from core.deployment.specs import MemoryAssumptions, ParallelLayout, Precision, Scenario, SpecDecodeConfig, Workload
from core.store import (
    SavedScenario,
    ScenarioChangedError,
    ScenarioExistsError,
    ScenarioGoneError,
    ScenarioNotFoundError,
    ScenarioRef,
    ScenarioStore,
    SQLiteStore,
    StoreBusyError,
    name_key,
    open_store,
)

RICH = Scenario(
    model_id="mixtral-8x7b",
    gpu_id="h100-sxm",
    num_nodes=2,
    precision=Precision(weights="bf16", routed_experts="int4", kv_cache="fp8", dispatch="fp8"),
    workload=Workload(batch=300, input_len=8192, output_len=100),
    layout=ParallelLayout(attention_tp=8, expert_tp=8, pp=2),
    spec=SpecDecodeConfig(method="eagle3", num_speculative_tokens=5, acceptance_rate=0.7),
    memory=MemoryAssumptions(gpu_memory_utilization=0.85, runtime_reserve_gb=3.0, redundant_experts=16),
)
PLAIN = Scenario(model_id="mixtral-8x7b", gpu_id="h100-sxm", num_nodes=2)
HF_CONFIG = '{"model_type": "mixtral", "hidden_size": 4096, "num_local_experts": 8}'


def _rows(db) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM scenarios").fetchone()[0]


def _utc(stamp: str) -> datetime:
    t = datetime.fromisoformat(stamp)
    assert t.utcoffset() is not None and t.utcoffset().total_seconds() == 0, stamp
    return t


# -- round trip ------------------------------------------------------------------------------------


def test_round_trip_keeps_every_field(tmp_path):
    store = SQLiteStore(tmp_path / "sub" / "dir" / "s.db")  # parent folders are created on first use
    assert isinstance(store, ScenarioStore)
    saved = store.save("  Mixtral on 2 nodes  ", RICH, model_config_json=HF_CONFIG)
    assert saved.name == "Mixtral on 2 nodes"  # stripped

    got = store.get("Mixtral on 2 nodes")
    assert isinstance(got, SavedScenario)
    assert got == saved
    assert got.scenario == RICH
    assert got.scenario.layout == ParallelLayout(attention_tp=8, expert_tp=8, pp=2)
    assert got.scenario.spec.method == "eagle3" and got.scenario.spec.acceptance_rate == 0.7
    assert got.scenario.memory.redundant_experts == 16
    assert got.scenario.precision.routed_experts == "int4"
    assert got.model_config_json == HF_CONFIG
    assert _utc(got.created_at) == _utc(got.updated_at)
    assert abs((datetime.now(UTC) - _utc(got.created_at)).total_seconds()) < 60

    # a scenario without an imported model stores None, not ""
    assert store.save("plain", PLAIN).model_config_json is None
    assert store.get("plain").model_config_json is None


def test_list_is_newest_first_and_rename_delete_overwrite(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    assert store.list() == []
    for name in ("a", "b", "c"):
        store.save(name, PLAIN)
    assert [s.name for s in store.list()] == ["c", "b", "a"]

    first = store.get("a")
    with pytest.raises(ScenarioExistsError, match="a scenario named 'a' exists"):
        store.save("a", RICH)
    assert store.get("a").scenario == PLAIN  # the refused save changed nothing

    again = store.save("a", RICH, model_config_json=HF_CONFIG, overwrite=True)
    assert again.created_at == first.created_at and again.updated_at > first.updated_at
    got = store.get("a")
    assert got.scenario == RICH and got.model_config_json == HF_CONFIG and got.created_at == first.created_at
    assert [s.name for s in store.list()] == ["a", "c", "b"]  # re-saved, so newest

    store.rename("b", "b renamed")
    assert store.get("b renamed").scenario == PLAIN
    with pytest.raises(ValueError, match="'b'"):
        store.get("b")
    with pytest.raises(ScenarioExistsError, match="'c'"):
        store.rename("a", "c")
    with pytest.raises(ScenarioNotFoundError, match="'nope'"):
        store.rename("nope", "x")

    store.delete("c")
    assert sorted(s.name for s in store.list()) == ["a", "b renamed"]
    with pytest.raises(ValueError, match="no saved scenario named 'c'"):
        store.delete("c")
    assert _rows(tmp_path / "s.db") == 2


def test_missing_name_is_a_value_error_and_a_key_error(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    with pytest.raises(ValueError, match="no saved scenario named 'ghost'") as info:
        store.get("ghost")
    assert isinstance(info.value, KeyError)
    assert str(info.value) == "no saved scenario named 'ghost'"


def test_survives_a_server_restart(tmp_path):
    db = tmp_path / "s.db"
    before = SQLiteStore(db)
    before.save("kept", RICH, model_config_json=HF_CONFIG)
    before.save("dropped", PLAIN)
    before.delete("dropped")
    del before

    after = SQLiteStore(db)  # a fresh process would build exactly this
    got = after.get("kept")
    assert got.scenario == RICH and got.model_config_json == HF_CONFIG
    assert [s.name for s in after.list()] == ["kept"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        cols = [r[1] for r in conn.execute("PRAGMA table_info(scenarios)")]
    assert cols == ["name", "scenario_json", "model_config_json", "created_at", "updated_at", "id", "version"]


# -- hostile and bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "x'); DROP TABLE scenarios; --",
        "Robert'); DELETE FROM scenarios WHERE ('1'='1",
        '" OR 1=1 --',
        "%_ LIKE * ?",
        "日本語 — ünïcødé 🚀",
    ],
)
def test_sql_looking_names_are_plain_names(tmp_path, name):
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    store.save("bystander", PLAIN)
    store.save(name, RICH)
    assert store.get(name).name == name and store.get(name).scenario == RICH
    assert {s.name for s in store.list()} == {"bystander", name}
    store.rename(name, name + " 2")
    assert store.get(name + " 2").scenario == RICH
    store.delete(name + " 2")
    assert [s.name for s in store.list()] == ["bystander"]
    assert _rows(db) == 1  # the table is still there and untouched


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "empty"),
        ("   \t ", "empty"),
        ("x" * 101, "at most 100"),
        ("bad\x00name", "control characters"),
        ("two\nlines", "control characters"),
        (None, "text"),
    ],
)
def test_bad_names_are_refused(tmp_path, name, message):
    store = SQLiteStore(tmp_path / "s.db")
    with pytest.raises(ValueError, match=message):
        store.save(name, PLAIN)
    with pytest.raises(ValueError, match=message):
        store.get(name)
    assert store.list() == []
    assert store.save("x" * 100, PLAIN).name == "x" * 100  # the limit itself is fine


def test_model_config_size_limit(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    with pytest.raises(ValueError, match="at most 1,000,000 characters"):
        store.save("big", PLAIN, model_config_json="x" * 1_000_001)
    assert store.list() == []
    assert len(store.save("ok", PLAIN, model_config_json="x" * 1_000_000).model_config_json) == 1_000_000
    with pytest.raises(ValueError, match="a Scenario"):
        store.save("wrong", {"model_id": "mixtral-8x7b"})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("scenario_json", "message"),
    [("{not json", "does not parse"), ('{"num_nodes": -3}', "num_nodes"), ("[1, 2]", "corrupt")],
)
def test_a_corrupt_row_names_the_scenario(tmp_path, scenario_json, message):
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    store.save("broken one", PLAIN)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE scenarios SET scenario_json = ? WHERE name = ?", (scenario_json, "broken one"))
    with pytest.raises(ValueError, match=message) as info:
        store.get("broken one")
    assert "'broken one'" in str(info.value)
    with pytest.raises(ValueError, match="'broken one'"):
        store.list()


# -- concurrency -----------------------------------------------------------------------------------


def test_eight_threads_saving_at_once_all_land(tmp_path):
    db = tmp_path / "s.db"
    store = SQLiteStore(db)  # one store shared by every "session", as in the app
    threads_n, per_thread = 8, 25
    start = threading.Barrier(threads_n)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                store.save(f"thread {t} save {i}", PLAIN if i % 2 else RICH)
                if i % 5 == 0:
                    store.list()  # readers interleave with the writers
        except BaseException as e:
            errors.append(e)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=work, args=(t,)) for t in range(threads_n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    elapsed = time.perf_counter() - t0
    assert errors == []
    assert _rows(db) == threads_n * per_thread == 200
    names = {s.name for s in store.list()}
    assert names == {f"thread {t} save {i}" for t in range(threads_n) for i in range(per_thread)}
    assert elapsed < 60


def _process_worker(db: str, worker: int, count: int, start) -> None:
    from core.deployment.specs import Scenario as S
    from core.store import SQLiteStore as Store

    store = Store(db)
    start.wait(60)
    for i in range(count):
        store.save(f"process {worker} save {i}", S(model_id="mixtral-8x7b", gpu_id="h100-sxm", num_nodes=1 + i % 3))


def test_four_processes_saving_at_once_all_land(tmp_path):
    db = tmp_path / "s.db"
    SQLiteStore(db).save("existing", PLAIN)  # the file and table exist before the race, as in a running app
    procs_n, per_proc = 4, 25
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(procs_n)
    procs = [ctx.Process(target=_process_worker, args=(str(db), w, per_proc, start)) for w in range(procs_n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * procs_n
    assert _rows(db) == procs_n * per_proc + 1 == 101
    store = SQLiteStore(db)
    assert store.get("process 3 save 24").scenario.num_nodes == 1 + 24 % 3


def test_four_processes_racing_to_create_a_new_file(tmp_path):
    db = tmp_path / "fresh" / "s.db"  # nobody has created the folder, the file or the table yet
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(4)
    procs = [ctx.Process(target=_process_worker, args=(str(db), w, 25, start)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert _rows(db) == 100


# -- open_store ------------------------------------------------------------------------------------


def test_open_store_honours_planner_db(tmp_path, monkeypatch):
    db = tmp_path / "from-env" / "planner.db"
    monkeypatch.setenv("PLANNER_DB", str(db))
    store = open_store()
    assert isinstance(store, SQLiteStore) and store.path == db
    store.save("via env", PLAIN)
    assert _rows(db) == 1

    monkeypatch.setenv("PLANNER_DB", f"sqlite:///{db}")
    assert open_store().get("via env").scenario == PLAIN

    # an explicit url wins over the environment
    other = tmp_path / "explicit.db"
    assert open_store(str(other)).path == other


def test_open_store_default_path(tmp_path, monkeypatch):
    monkeypatch.delenv("PLANNER_DB", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    store = open_store()
    assert store.path == tmp_path / ".moe-planner" / "scenarios.db"
    assert not store.path.exists()  # nothing is created until first use
    store.save("home", PLAIN)
    assert store.path.exists()


def test_open_store_sqlite_url(tmp_path):
    db = tmp_path / "url.db"
    store = open_store(f"sqlite:///{db}")  # sqlite:////abs/path, SQLAlchemy's form
    assert store.path == db
    store.save("x", PLAIN)
    assert SQLiteStore(db).get("x").scenario == PLAIN


def test_open_store_refuses_other_backends():
    with pytest.raises(ValueError, match="unsupported scenario store URL scheme 'mysql'"):
        open_store("mysql://h/db")
    # a PostgreSQL URL opens the PostgreSQL backend; nothing listens on port 1, so it says so
    with pytest.raises(ValueError, match="cannot reach the PostgreSQL scenario store"):
        open_store("postgresql://postgres@127.0.0.1:1/planner")


def test_open_store_refuses_sqlite_url_without_a_path():
    with pytest.raises(ValueError, match="needs a file path"):
        open_store("sqlite://")
    with pytest.raises(ValueError, match="in-memory"):
        SQLiteStore(":memory:")


# -- issue 21: stable ids and versions (optimistic concurrency) -------------------------------------


def stale_operations(a, b) -> None:
    """Sessions A and B on one store (SQLite or PostgreSQL): every operation A makes on what it read
    earlier says what happened since and changes nothing; after a reload the same operations go through."""
    for n in ("alice", "bob", "carol"):
        a.save(n, PLAIN)
    seen = {s.name: s.ref for s in a.list()}  # what session A has on screen
    assert {r.version for r in seen.values()} == {1} and len({r.id for r in seen.values()}) == 3

    b.delete("bob")  # session B deletes bob
    for op in (lambda: a.delete_ref(seen["bob"]), lambda: a.rename_ref(seen["bob"], "robert")):
        with pytest.raises(ScenarioGoneError, match="'bob' was deleted by someone else"):
            op()
    with pytest.raises(ScenarioGoneError):
        a.get_ref(seen["bob"])
    assert sorted(s.name for s in a.list()) == ["alice", "carol"]  # carol is still there

    b.rename("carol", "caroline")  # B renames carol: same id, version 2
    for op in (lambda: a.delete_ref(seen["carol"]), lambda: a.rename_ref(seen["carol"], "x")):
        with pytest.raises(
            ScenarioChangedError, match=r"'carol' changed since you opened it \(now 'caroline'\).*reload"
        ):
            op()
    b.save("alice", RICH, overwrite=True)  # B saves over alice: same name, version 2
    with pytest.raises(ScenarioChangedError, match="'alice' changed since you opened it"):
        a.delete_ref(seen["alice"])
    with pytest.raises(ScenarioChangedError):
        a.get_ref(seen["alice"])
    assert sorted(s.name for s in a.list()) == ["alice", "caroline"]
    assert a.get("alice").scenario == RICH  # B's save stands

    fresh = {s.name: s.ref for s in a.list()}  # A reloads
    assert fresh["caroline"].id == seen["carol"].id  # a rename keeps the id ...
    assert fresh["caroline"].version == 2  # ... and counts a version: 1 + 1
    assert a.get_ref(fresh["alice"]).scenario == RICH
    assert a.rename_ref(fresh["caroline"], "carol") == ScenarioRef(seen["carol"].id, 3, "carol")
    a.delete_ref(fresh["alice"])
    assert [s.name for s in a.list()] == ["carol"]


def test_a_stale_delete_or_rename_says_so_and_changes_nothing(tmp_path):
    stale_operations(SQLiteStore(tmp_path / "s.db"), SQLiteStore(tmp_path / "s.db"))


def test_a_reference_must_be_one(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    with pytest.raises(ValueError, match="a ScenarioRef"):
        store.delete_ref("bob")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="version"):
        store.delete_ref(ScenarioRef("0" * 32, -1, "bob"))


OLD_SCHEMA = """CREATE TABLE scenarios (name TEXT PRIMARY KEY, scenario_json TEXT NOT NULL, model_config_json TEXT,
created_at TEXT, updated_at TEXT)"""  # the table as released before issue 21
OLD_INSERT = (  # how that release inserted
    "INSERT INTO scenarios (name, scenario_json, model_config_json, created_at, updated_at) VALUES (?, ?, ?, ?, ?)"
)


def test_an_old_file_is_migrated_in_place(tmp_path):
    db = tmp_path / "old.db"
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(OLD_SCHEMA)
        conn.execute(OLD_INSERT, ("legacy a", PLAIN.model_dump_json(), None, "2025-01-01T00:00:00+00:00", None))
        conn.execute(OLD_INSERT, ("legacy b", RICH.model_dump_json(), HF_CONFIG, "2025-01-02T00:00:00+00:00", None))
    store = SQLiteStore(db)
    got = store.list()
    assert [s.name for s in got] == ["legacy b", "legacy a"]  # newest first
    assert [len(s.id) for s in got] == [32, 32] and got[0].id != got[1].id and [s.version for s in got] == [1, 1]
    assert got[0].scenario == RICH and got[0].model_config_json == HF_CONFIG
    assert [s.id for s in SQLiteStore(db).list()] == [s.id for s in got]  # ids are stored, not made up per read
    with sqlite3.connect(db) as conn:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(scenarios)")]
        # an app of the previous release still running on the same file keeps writing five columns
        conn.execute(OLD_INSERT, ("from old app", PLAIN.model_dump_json(), None, "2025-01-03T00:00:00+00:00", None))
    assert cols == ["name", "scenario_json", "model_config_json", "created_at", "updated_at", "id", "version"]
    late = store.get("from old app")
    assert len(late.id) == 32 and late.version == 1
    assert store.rename_ref(got[1].ref, "legacy a2").version == 2
    with pytest.raises(ScenarioChangedError):
        store.delete_ref(got[1].ref)
    assert store.save("new", PLAIN).version == 1
    assert sorted(s.name for s in store.list()) == ["from old app", "legacy a2", "legacy b", "new"]


# -- issue 21: names (NFC, confusables) --------------------------------------------------------------


def test_names_are_stored_in_nfc(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    decomposed, composed = "cafe\u0301", "caf\u00e9"  # e + combining acute, and the precomposed é
    assert store.save(decomposed, PLAIN).name == composed
    assert store.get(decomposed).name == store.get(composed).name == composed
    with pytest.raises(ScenarioExistsError, match="a scenario named 'café' exists"):
        store.save(composed, PLAIN)


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("bob", "b\u043eb"),  # Cyrillic о
        ("bob", "Bob"),  # case
        ("bob", "\uff42\uff4f\uff42"),  # fullwidth ｂｏｂ
        ("POKE", "\u03a1\u039f\u039a\u0395"),  # Greek capitals Ρ Ο Κ Ε
        ("baseline-v2", "baseline\u2010v2"),  # U+2010 HYPHEN
        ("h100 x8", "h100\u00a0 x8"),  # a no-break space and a second space
    ],
)
def test_a_name_confusable_with_a_saved_one_is_refused(tmp_path, existing, new):
    store = SQLiteStore(tmp_path / "s.db")
    store.save(existing, PLAIN)
    store.save("other", PLAIN)
    message = f"{new!r} is too close to the saved scenario {existing!r}"
    with pytest.raises(ScenarioExistsError, match=re.escape(message)):
        store.save(new, RICH)
    with pytest.raises(ScenarioExistsError, match="too close"):
        store.save(new, RICH, overwrite=True)  # overwrite replaces that very name, never a look-alike
    with pytest.raises(ScenarioExistsError, match="too close"):
        store.rename("other", new)
    assert sorted(s.name for s in store.list()) == sorted([existing, "other"])
    assert store.get(existing).scenario == PLAIN


def test_a_scenario_may_take_a_look_alike_of_its_own_name(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    ref = store.save("bob", PLAIN).ref
    assert store.rename_ref(ref, "Bob").name == "Bob"
    assert [s.name for s in store.list()] == ["Bob"]


def test_name_key_hand_values():
    # NFKC + case fold + look-alike letters mapped to Latin + one space + one hyphen
    assert name_key("B\u043eb") == "bob"
    assert name_key("\uff22\uff2f\uff22  x") == "bob x"
    assert name_key("\u0391\u0392\u0395 \u2013 1") == "abe - 1"  # Greek capitals, an en dash
    assert name_key("caf\u00e9") == "caf\u00e9" != name_key("cafe")  # accents stay: café and cafe look different
    assert name_key("team \U0001f469\u200d\U0001f4bb") == "team \U0001f469\U0001f4bb"


@pytest.mark.parametrize("name", ["bob\u202e", "a\u200bb", "x\u2028y", "\ufeffbom"])
def test_invisible_characters_are_refused(tmp_path, name):
    store = SQLiteStore(tmp_path / "s.db")
    with pytest.raises(ValueError, match="control characters or invisible"):
        store.save(name, PLAIN)
    assert store.save("team \U0001f469\u200d\U0001f4bb", PLAIN).name == "team 👩‍💻"  # an emoji's joiner is fine


# -- issue 21: one bad row, a busy store ---------------------------------------------------------------


def test_scan_lists_the_good_rows_and_names_the_bad_ones(tmp_path):
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    for n in ("good 1", "broken json", "broken field", "good 2"):
        store.save(n, PLAIN)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE scenarios SET scenario_json = '{not json' WHERE name = 'broken json'")
        conn.execute("""UPDATE scenarios SET scenario_json = '{"num_nodes": -3}' WHERE name = 'broken field'""")
    listing = store.scan()
    assert [s.name for s in listing.saved] == ["good 2", "good 1"]
    bad = {b.name: b for b in listing.bad}
    assert sorted(bad) == ["broken field", "broken json"]
    assert "its JSON does not parse" in bad["broken json"].reason and "num_nodes" in bad["broken field"].reason
    store.delete_ref(bad["broken json"].ref)
    assert [b.name for b in store.scan().bad] == ["broken field"]


def test_a_write_lock_held_elsewhere_is_a_busy_message_and_a_retry_works(tmp_path):
    db = tmp_path / "s.db"
    ref = SQLiteStore(db).save("kept", PLAIN).ref
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    try:
        store = SQLiteStore(db, timeout_s=0.3)
        assert [s.name for s in store.list()] == ["kept"]  # reading never waits for a writer (WAL)
        for op in (
            lambda: store.save("new", PLAIN),
            lambda: store.rename("kept", "k2"),
            lambda: store.delete_ref(ref),
        ):
            t0 = time.perf_counter()
            with pytest.raises(StoreBusyError, match=r"the scenario store is busy.*try again") as info:
                op()
            waited = time.perf_counter() - t0
            assert isinstance(info.value, ValueError)
            assert 0.25 <= waited < 2.5, waited  # its busy timeout (0.3 s), then a message
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.save("new", PLAIN).name == "new"  # the retry goes through
    assert sorted(s.name for s in store.list()) == ["kept", "new"]


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres:s3cr%t@pa55@127.0.0.1:1/planner",  # unencoded % and @
        "postgresql://postgres:s3cr%zz/pa55@127.0.0.1:1/planner",
        "postgres://planner:s3cr%t:pa55@127.0.0.1:1",
    ],
)
def test_a_postgres_password_never_shows_in_a_message(url):
    with pytest.raises(
        ValueError, match=r"cannot reach the PostgreSQL scenario store at postgres(ql)?://\w+:\*\*\*@"
    ) as info:
        open_store(url)
    message = str(info.value)
    assert "127.0.0.1:1" in message
    for secret in ("s3cr", "pa55", "%t", "%zz"):
        assert secret not in message, message


# -- issue 37: no lost update (DL-1) -------------------------------------------------------------------


def _batch(n: int) -> Scenario:
    return PLAIN.model_copy(update={"workload": Workload(batch=n)})


def lost_update(a, b) -> None:
    """Sessions A and B on one store (SQLite or PostgreSQL) both open `plan` and save over it: the first
    save lands, the second is refused and says what happened; nothing of A's is lost. Deleted or renamed
    since: refused too. The name-based overwrite (scripts) still works."""
    first = a.save("plan", _batch(8))
    assert (first.version, len(first.id)) == (1, 32)
    seen_a, seen_b = a.get("plan").ref, b.get("plan").ref  # both open it: version 1
    assert seen_a == seen_b == ScenarioRef(first.id, 1, "plan")

    mine = a.save_ref(seen_a, _batch(100), model_config_json=HF_CONFIG)  # A saves over it
    assert (mine.name, mine.id, mine.version, mine.scenario.workload.batch) == ("plan", first.id, 2, 100)
    assert mine.created_at == first.created_at and mine.updated_at > first.updated_at
    with pytest.raises(ScenarioChangedError) as info:  # B saves over what it opened: refused
        b.save_ref(seen_b, _batch(200))
    assert str(info.value) == (
        "'plan' changed since you opened it (saved again by someone else, now version 2): nothing was saved; "
        "open it again to see their change, or save yours under another name"
    )
    assert info.value.current == ScenarioRef(first.id, 2, "plan")
    stored = a.get("plan")
    assert (stored.version, stored.scenario.workload.batch, stored.model_config_json) == (2, 100, HF_CONFIG)
    assert b.get_ref(info.value.current).scenario.workload.batch == 100  # B can see theirs
    assert b.save_ref(info.value.current, _batch(200)).version == 3  # ... and, having seen it, replace it
    assert a.get("plan").scenario.workload.batch == 200

    b.rename("plan", "plan 2")  # renamed since A's last save (version 3 -> 4)
    with pytest.raises(ScenarioChangedError, match=r"^'plan' changed since you opened it \(now 'plan 2'\): nothing"):
        a.save_ref(mine.ref, _batch(300))
    b.delete("plan 2")
    with pytest.raises(
        ScenarioGoneError, match=r"^'plan' was deleted by someone else .*: nothing was saved; save again"
    ):
        a.save_ref(mine.ref, _batch(300))
    assert a.list() == []

    a.save("script", _batch(1))  # the name-based overwrite, for scripts and the command line
    assert a.save("script", _batch(2), overwrite=True).version == 2 and b.get("script").version == 2
    with pytest.raises(ValueError, match="a Scenario"):
        a.save_ref(b.get("script").ref, {"batch": 3})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a ScenarioRef"):
        a.save_ref("script", _batch(3))  # type: ignore[arg-type]
    assert b.get("script").version == 2


def test_a_save_over_a_scenario_someone_saved_since_is_refused(tmp_path):
    lost_update(SQLiteStore(tmp_path / "s.db"), SQLiteStore(tmp_path / "s.db"))


# -- issue 37: invisible and blank names (SEC-4) -------------------------------------------------------

# each hostile name of the probe and the character the message must name (written out by hand)
HOSTILE_NAMES = [
    ("beta\u3164", "U+3164 HANGUL FILLER"),
    ("beta\u115f", "U+115F HANGUL CHOSEONG FILLER"),
    ("beta\u2800", "U+2800 BRAILLE PATTERN BLANK"),
    ("beta\u034f", "U+034F COMBINING GRAPHEME JOINER"),
    ("be\u034fta", "U+034F COMBINING GRAPHEME JOINER"),
    ("beta\ufe0f", "U+FE0F VARIATION SELECTOR-16"),
    ("\u3164", "U+3164 HANGUL FILLER"),
    ("\u2800\u2800", "U+2800 BRAILLE PATTERN BLANK"),
    ("beta\u00ad", "U+00AD SOFT HYPHEN"),
    ("beta\u17b4", "U+17B4 KHMER VOWEL INHERENT AQ"),
    ("beta\u180b", "U+180B MONGOLIAN FREE VARIATION SELECTOR ONE"),
    ("beta\u2061", "U+2061 FUNCTION APPLICATION"),
    ("beta\uffa0", "U+FFA0 HALFWIDTH HANGUL FILLER"),
    ("beta\U0001d173", "U+1D173 MUSICAL SYMBOL BEGIN BEAM"),
    ("beta\U000e0100", "U+E0100 VARIATION SELECTOR-17"),
]


def hostile_names(store, insert_raw) -> None:
    """Names that render like `beta` (or like nothing) are refused, naming the character and saying what is
    allowed; rows stored with such a name before this rule still list, block their look-alikes, rename and
    delete. ``insert_raw(name)`` writes a row past the rules, as an older release or another tool would."""
    store.save("alpha", PLAIN)
    store.save("beta", PLAIN)
    alpha = store.get("alpha").ref
    for name, shown in HOSTILE_NAMES:
        for op in (
            lambda n=name: store.save(n, RICH),
            lambda n=name: store.save(n, RICH, overwrite=True),
            lambda n=name: store.rename("alpha", n),
            lambda n=name: store.rename_ref(alpha, n),
        ):
            with pytest.raises(ValueError) as info:
                op()
            assert not isinstance(info.value, ScenarioExistsError)
            message = str(info.value)
            assert f"({shown})" in message, (name, message)
            assert message.endswith("use letters, digits, spaces, punctuation, symbols and emoji"), message
    assert sorted(s.name for s in store.list()) == ["alpha", "beta"]
    assert store.get("alpha").version == 1

    # still fine: emoji with their joiner and presentation selector, a keycap, accents
    for name in (
        "team \U0001f469\u200d\U0001f4bb",
        "\u2764\ufe0f plan",
        "1\ufe0f\u20e3 first",
        "caf\u00e9 \u203c\ufe0f",
    ):
        assert store.save(name, PLAIN).name == name
        store.delete(name)
    store.save("\u2764\ufe0f", PLAIN)
    with pytest.raises(ScenarioExistsError, match="too close to the saved scenario '\u2764\ufe0f'"):
        store.save("\u2764", PLAIN)  # the selector does not make a new name

    # a row stored before the rule
    insert_raw("beta\u3164")
    insert_raw("\u2800\u2800")
    listed = {s.name: s for s in store.scan().saved}
    assert set(listed) == {"alpha", "beta", "beta\u3164", "\u2800\u2800", "\u2764\ufe0f"}
    assert store.get("beta\u3164").scenario == PLAIN  # readable by name
    store.delete("beta")
    with pytest.raises(ScenarioExistsError, match=re.escape("'beta' is too close to the saved scenario 'beta\u3164'")):
        store.save("beta", RICH)  # the old row still counts as `beta`
    ref = store.rename_ref(listed["beta\u3164"].ref, "beta (was padded)")
    assert ref.name == "beta (was padded)" and store.get("beta (was padded)").version == 2
    store.delete("\u2800\u2800")  # by name, as the command line does
    store.delete_ref(store.get("alpha").ref)
    assert sorted(s.name for s in store.list()) == ["beta (was padded)", "\u2764\ufe0f"]


def test_invisible_and_blank_names_are_refused_and_old_ones_still_work(tmp_path):
    db = tmp_path / "s.db"
    store = SQLiteStore(db)

    def insert_raw(name: str) -> None:
        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            conn.execute(OLD_INSERT, (name, PLAIN.model_dump_json(), None, "2025-01-01T00:00:00+00:00", None))

    hostile_names(store, insert_raw)


def test_a_blank_name_says_what_is_allowed():
    from core.store.names import normalize_name

    for name in ("\u0301", " \u20e3 "):  # only a combining mark: nothing to see
        with pytest.raises(ValueError, match="needs at least one visible character") as info:
            normalize_name(name)
        assert "use letters, digits, punctuation, symbols or emoji" in str(info.value)
    assert normalize_name(" a\u0301 ") == "\u00e1"
