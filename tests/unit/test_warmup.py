"""A newcomer's first minutes (#34): the server's warm-up (serve.py, before the runtime exists) prints no
"No runtime found" warning from Streamlit's cache decorators, and warms what it says it warms."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_warm_up_prints_no_runtime_warnings():
    code = "from ui.warmup import warm_up; took = warm_up(); print(sorted(took))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "No runtime found" not in done.stderr, done.stderr[-2000:]
    # the four steps it times, in the order of their names
    assert done.stdout.strip() == "['catalog_s', 'first_chart_s', 'imports_s', 'published_runs_s']"
