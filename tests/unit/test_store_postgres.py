"""The scenario store on a real PostgreSQL server, started for these tests in a temporary folder.

Needs PostgreSQL's server binaries (Debian package ``postgresql``; ``make test`` installs it when run
as root). Without them the tests skip with a notice, except under CI=true.
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from core.specs import Scenario
from core.store import ScenarioExistsError, open_store
from core.store_postgres import PostgresStore


def _bindir() -> str | None:
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(d, "initdb")):
            return d
    found = shutil.which("initdb")
    return os.path.dirname(found) if found else None


@pytest.fixture(scope="module")
def pg_url():
    bindir = _bindir()
    if bindir is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("PostgreSQL server binaries (Debian package 'postgresql') are missing under CI=true")
        pytest.skip("PostgreSQL server binaries missing: install Debian's 'postgresql' to run these tests")
    root = Path(tempfile.mkdtemp(prefix="planner-pg-"))
    os.chmod(root, 0o777)
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    os.chmod(sock, 0o777)
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(
        [*as_user, f"{bindir}/initdb", "-D", str(data), "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *as_user,
            f"{bindir}/pg_ctl",
            "-D",
            str(data),
            "-l",
            str(root / "log"),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {port} -c listen_addresses=127.0.0.1 -k {sock}",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, f"{bindir}/pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


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
