"""core.store: saved scenarios that survive a restart and concurrent saves."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from datetime import UTC, datetime

import pytest

from core.specs import MemoryAssumptions, ParallelLayout, Precision, Scenario, SpecDecodeConfig, Workload
from core.store import (
    SavedScenario,
    ScenarioExistsError,
    ScenarioNotFoundError,
    ScenarioStore,
    SQLiteStore,
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
    assert cols == ["name", "scenario_json", "model_config_json", "created_at", "updated_at"]


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
    from core.specs import Scenario as S
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
