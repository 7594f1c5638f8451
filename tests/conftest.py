import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# every chart spec a page builds is validated against the Vega-Lite schema under test (ui/render.py; a served
# page skips it for speed), in this process and in the servers the browser tests start
os.environ.setdefault("PLANNER_VALIDATE_CHARTS", "1")


# A throwaway PostgreSQL server for the store tests (tests/unit/test_store_postgres.py) and the replicas'
# browser test (tests/e2e/test_replicas.py)
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
